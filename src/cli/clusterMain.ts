/**
 * The commands a Ray node runs for the job templates, as one bundled file (`cluster/lab.mjs` in the job
 * package, built by cli/clusterBundle.ts): `agent` (one harness task, spawned by harness_lab_cluster.agent),
 * `policy-server` and `agl-train` (the agl-cpu template). Nodes need Node.js ≥ 20 and nothing from npm.
 */
import { UsageError } from './args';
import { command as agent } from './commands/agent';
import { command as aglTrain } from './commands/agl-train';
import { command as policyServer } from './commands/policy-server';
import type { Command } from './lab';

const commands: Record<string, Command> = { agent, 'policy-server': policyServer, 'agl-train': aglTrain };

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const cmd = name ? commands[name] : undefined;
  if (!cmd) {
    console.error(
      `lab (cluster): unknown command '${name ?? ''}' (commands: ${Object.keys(commands).join(', ')})`,
    );
    return 2;
  }
  if (rest.includes('--help')) {
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
