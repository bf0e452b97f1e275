#!/usr/bin/env node
/**
 * `npm run lab -- <command> [args]`: the project's command-line entry. Each command lives in its own module
 * under src/cli/commands/ and is listed in `commands` below; a command returns its exit code.
 */
import { UsageError } from './args';

export interface Command {
  summary: string;
  usage: string;
  run: (argv: string[]) => Promise<number>;
}

/** Commands are loaded lazily so that one command's heavy imports do not slow the others. */
const commands: Record<string, () => Promise<Command>> = {
  analyze: async () => (await import('./commands/analyze')).command,
  convert: async () => (await import('./commands/convert')).command,
  golden: async () => (await import('./commands/golden')).command,
  'engine-check': async () => (await import('./commands/engine-check')).command,
  'train-tokenizer': async () => (await import('./commands/train-tokenizer')).command,
  agent: async () => (await import('./commands/agent')).command,
  rollout: async () => (await import('./commands/rollout')).command,
  train: async () => (await import('./commands/train')).command,
  sft: async () => (await import('./commands/sft')).command,
};

function help(): string {
  const lines = ['usage: npm run lab -- <command> [args]', '', 'commands:'];
  for (const name of Object.keys(commands).sort()) lines.push(`  ${name}`);
  if (Object.keys(commands).length === 0) lines.push('  (none yet)');
  lines.push('', "run 'npm run lab -- <command> --help' for a command's usage");
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(help());
    return name ? 0 : 2;
  }
  const load = commands[name];
  if (!load) {
    console.error(`lab: unknown command '${name}'\n\n${help()}`);
    return 2;
  }
  const cmd = await load();
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(`${cmd.summary}\n\nusage: ${cmd.usage}`);
    return 0;
  }
  try {
    return await cmd.run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`lab ${name}: ${e.message}\nusage: ${cmd.usage}`);
      return 2;
    }
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exitCode = 1;
  },
);
