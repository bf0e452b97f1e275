#!/usr/bin/env node
/**
 * `npm run lab -- <command> [args]`: the project's command-line entry. Each command lives in its own module
 * under src/cli/commands/ and is listed in `commands` below; a command returns its exit code.
 */
import { type Command, runCommand, startCli } from './entry';

export type { Command };

/** Commands are loaded lazily so that one command's heavy imports do not slow the others. */
const commands: Record<string, () => Promise<Command>> = {
  analyze: async () => (await import('./commands/analyze')).command,
  convert: async () => (await import('./commands/convert')).command,
  golden: async () => (await import('./commands/golden')).command,
  'engine-check': async () => (await import('./commands/engine-check')).command,
  'export-model': async () => (await import('./commands/export-model')).command,
  'train-tokenizer': async () => (await import('./commands/train-tokenizer')).command,
  agent: async () => (await import('./commands/agent')).command,
  rollout: async () => (await import('./commands/rollout')).command,
  'policy-server': async () => (await import('./commands/policy-server')).command,
  'agl-train': async () => (await import('./commands/agl-train')).command,
  gateway: async () => (await import('./commands/gateway')).command,
  cluster: async () => (await import('./commands/cluster')).command,
  train: async () => (await import('./commands/train')).command,
  sft: async () => (await import('./commands/sft')).command,
  logprobs: async () => (await import('./commands/logprobs')).command,
  simulate: async () => (await import('./commands/simulate')).command,
};

/** Every command with its one-line summary (each module is loaded for it: the summary lives beside the code). */
async function help(): Promise<string> {
  const names = Object.keys(commands).sort();
  const summaries = await Promise.all(
    names.map((n) =>
      commands[n]().then(
        (c) => c.summary,
        (e: unknown) => `(cannot load: ${e instanceof Error ? e.message : String(e)})`,
      ),
    ),
  );
  const width = Math.max(0, ...names.map((n) => n.length));
  const lines = ['usage: npm run lab -- <command> [args]', '', 'commands:'];
  // summaries are sentence fragments: one case for all ("Check the WGSL kernels" → "check the WGSL kernels")
  const fragment = (s: string) => (/^[A-Z][a-z]/.test(s) ? s[0].toLowerCase() + s.slice(1) : s);
  names.forEach((n, i) => {
    lines.push(`  ${n.padEnd(width)}  ${fragment(summaries[i])}`);
  });
  if (names.length === 0) lines.push('  (none yet)');
  lines.push('', "run 'npm run lab -- <command> --help' for a command's usage and flags");
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(await help());
    return name ? 0 : 2;
  }
  const load = commands[name];
  if (!load) {
    console.error(`lab: unknown command '${name}'\n\n${await help()}`);
    return 2;
  }
  return runCommand('lab', name, await load(), rest);
}

startCli(main);
