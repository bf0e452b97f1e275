/**
 * Typed template parameters: each parameter of a job template is declared once (kind, bounds, default, the
 * upstream key it sets) and the same declaration validates a REST body on the gateway and generates the form
 * in the page. Browser-safe: no Node APIs.
 */

interface ParamBase {
  /** the parameter's name in a submit body (`params.<name>`) */
  name: string;
  label: string;
  help: string;
  /** the upstream config key the parameter sets, when it maps to one (shown in the form) */
  upstream?: string;
}

export type ParamSpec =
  | (ParamBase & { kind: 'enum'; values: { value: string; label: string }[]; default: string })
  | (ParamBase & { kind: 'int'; min: number; max: number; default: number })
  | (ParamBase & { kind: 'number'; min: number; max: number; default: number })
  | (ParamBase & { kind: 'bool'; default: boolean })
  | (ParamBase & { kind: 'string'; pattern: string; maxLength: number; default: string });

export type ParamValue = string | number | boolean;
export type ParamValues = Record<string, ParamValue>;

/** A submit body that failed validation: `field` names the parameter (`params.rollout_n`). */
export class ParamError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

/** Checks one value against its spec; returns the value (numbers stay numbers, no coercion from strings). */
export function checkParam(spec: ParamSpec, v: unknown, field = `params.${spec.name}`): ParamValue {
  switch (spec.kind) {
    case 'enum': {
      if (typeof v !== 'string' || !spec.values.some((x) => x.value === v))
        throw new ParamError(
          field,
          `must be one of ${spec.values.map((x) => x.value).join(', ')}; got ${describe(v)}`,
        );
      return v;
    }
    case 'int':
    case 'number': {
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw new ParamError(
          field,
          `must be a ${spec.kind === 'int' ? 'whole number' : 'number'}; got ${describe(v)}`,
        );
      if (spec.kind === 'int' && !Number.isInteger(v))
        throw new ParamError(field, `must be a whole number; got ${v}`);
      if (v < spec.min || v > spec.max)
        throw new ParamError(field, `must be in [${spec.min}, ${spec.max}]; got ${v}`);
      return v;
    }
    case 'bool': {
      if (typeof v !== 'boolean') throw new ParamError(field, `must be true or false; got ${describe(v)}`);
      return v;
    }
    case 'string': {
      if (typeof v !== 'string') throw new ParamError(field, `must be a string; got ${describe(v)}`);
      if (v.length > spec.maxLength)
        throw new ParamError(field, `must be at most ${spec.maxLength} characters; got ${v.length}`);
      if (!new RegExp(`^(?:${spec.pattern})$`).test(v))
        throw new ParamError(field, `must match ${spec.pattern}; got ${describe(v)}`);
      return v;
    }
  }
}

/**
 * Validates a `params` object against a template's specs: unknown names are refused by name, absent ones take
 * their default. Returns a complete, checked set of values.
 */
export function checkParams(specs: readonly ParamSpec[], input: unknown): ParamValues {
  const raw = input === undefined || input === null ? {} : input;
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new ParamError('params', `must be an object of parameter values; got ${describe(raw)}`);
  const byName = new Map(specs.map((s) => [s.name, s]));
  for (const k of Object.keys(raw))
    if (!byName.has(k))
      throw new ParamError(
        `params.${k}`,
        `unknown parameter (known: ${specs.map((s) => s.name).join(', ')})`,
      );
  const out: ParamValues = {};
  const r = raw as Record<string, unknown>;
  for (const s of specs) out[s.name] = r[s.name] === undefined ? s.default : checkParam(s, r[s.name]);
  return out;
}

export function defaultParams(specs: readonly ParamSpec[]): ParamValues {
  const out: ParamValues = {};
  for (const s of specs) out[s.name] = s.default;
  return out;
}
