/** A bad command line: the CLI prints the message and the command's usage and exits with code 2. */
export class UsageError extends Error {}

/** Exit codes of `lab` commands (besides 0: done, 1: the input held nothing usable or a check failed). */
export const EXIT = {
  usage: 2,
  /** a server answered with an HTTP error or with a body that is not a valid answer */
  http: 3,
  /** a server could not be reached or did not answer in time */
  unreachable: 4,
  /** stopped by SIGINT (128 + 2) */
  sigint: 130,
  /** stopped by SIGTERM (128 + 15) */
  sigterm: 143,
} as const;

/** A failure the command explains in one line: printed as `lab <command>: message`, exits with `exitCode`. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export interface FlagSpec {
  /** 'bool' flags take no value; 'string' and 'number' take the next argument (or `--flag=value`). */
  [flag: string]: { type: 'bool' | 'string' | 'number'; multiple?: boolean };
}

export interface Parsed {
  positionals: string[];
  flags: Record<string, string | number | boolean | (string | number)[]>;
}

/** Strict flag parsing: an unknown flag, a missing value or a non-numeric number is a UsageError. */
export function parseArgs(argv: string[], spec: FlagSpec): Parsed {
  const positionals: string[] = [];
  const flags: Parsed['flags'] = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--') || arg === '--') {
      if (arg !== '--') positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const def = spec[name];
    if (!def) throw new UsageError(`unknown flag --${name}`);
    let value: string | number | boolean;
    if (def.type === 'bool') {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      value = true;
    } else {
      const raw = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
      if (raw === undefined) throw new UsageError(`--${name} needs a value`);
      if (def.type === 'number') {
        const n = Number(raw);
        if (raw.trim() === '' || !Number.isFinite(n))
          throw new UsageError(`--${name} expects a number, got '${raw}'`);
        value = n;
      } else value = raw;
    }
    if (def.multiple) {
      const list = (flags[name] as (string | number)[] | undefined) ?? [];
      list.push(value as string | number);
      flags[name] = list;
    } else {
      if (name in flags) throw new UsageError(`--${name} given twice`);
      flags[name] = value;
    }
  }
  return { positionals, flags };
}
