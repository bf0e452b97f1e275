/**
 * The one way to write a registry (estimators, loss modes, policy losses, presets, golden families, importers,
 * rollout engines, …): entries by name in registration order; registering a name twice is an error; an unknown
 * name is one error that lists the valid ones. A registry whose upstream counterpart raises its own message for
 * an unknown name (verl's `Invalid loss_agg_mode: …`) passes `unknown` to keep it.
 */

/** An unknown name, with the registry's kind and the names it has. */
export class UnknownNameError extends Error {
  constructor(
    readonly kind: string,
    readonly unknownName: string,
    readonly valid: readonly string[],
    message = `unknown ${kind} '${unknownName}' (valid: ${valid.join(', ')})`,
  ) {
    super(message);
  }
}

export interface Registry<T> {
  /** what the entries are, for messages ("advantage estimator") */
  readonly kind: string;
  /** adds an entry; a name already registered is an error */
  register(name: string, entry: T): T;
  /** the entry, or UnknownNameError listing the valid names */
  get(name: string): T;
  /** the entry, or undefined */
  find(name: string): T | undefined;
  has(name: string): boolean;
  /** entries in registration order */
  list(): T[];
  /** names in registration order */
  names(): string[];
}

export interface RegistryOptions {
  /** the message for an unknown name (default: `unknown <kind> '<name>' (valid: …)`) */
  unknown?: (name: string, valid: readonly string[]) => string;
}

export function createRegistry<T>(kind: string, opts: RegistryOptions = {}): Registry<T> {
  const entries = new Map<string, T>();
  return {
    kind,
    register(name, entry) {
      if (typeof name !== 'string' || name === '') throw new Error(`a ${kind} needs a non-empty name`);
      if (entries.has(name)) throw new Error(`${kind} '${name}' is already registered`);
      entries.set(name, entry);
      return entry;
    },
    get(name) {
      const e = entries.get(name);
      if (e === undefined) {
        const valid = [...entries.keys()];
        throw new UnknownNameError(kind, String(name), valid, opts.unknown?.(String(name), valid));
      }
      return e;
    },
    find: (name) => entries.get(name),
    has: (name) => entries.has(name),
    list: () => [...entries.values()],
    names: () => [...entries.keys()],
  };
}
