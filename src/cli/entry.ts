/**
 * What every command-line entry shares (`lab.ts` on a workstation, `clusterMain.ts` on a Ray node): running one
 * command with `--help`, usage errors (exit 2 with the usage) and command errors (their own exit code, no stack
 * trace), and the process wiring (exit code, a quiet stop on EPIPE, a stack trace only for a real crash).
 */
import { CommandError, UsageError } from './args';

export interface Command {
  summary: string;
  usage: string;
  run: (argv: string[]) => Promise<number>;
}

/** Runs one command; `prog` prefixes its messages (`lab`, `lab (cluster)`). */
export async function runCommand(prog: string, name: string, cmd: Command, argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(`${cmd.summary}\n\nusage: ${cmd.usage}`);
    return 0;
  }
  try {
    return await cmd.run(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`${prog} ${name}: ${e.message}\nusage: ${cmd.usage}`);
      return 2;
    }
    if (e instanceof CommandError) {
      console.error(`${prog} ${name}: ${e.message}`);
      return e.exitCode;
    }
    throw e;
  }
}

/** Runs an entry's main with the process's arguments and sets the exit code from it. */
export function startCli(main: (argv: string[]) => Promise<number>): void {
  // `lab … | head`: once the reader has gone, stop quietly instead of dying on EPIPE with a stack trace.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw e;
    });
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
      process.exitCode = 1;
    },
  );
}
