/**
 * The commands a Ray node runs for the job templates, as one bundled file (`cluster/lab.mjs` in the job
 * package, built by cli/clusterBundle.ts): `agent` (one harness task, spawned by harness_lab_cluster.agent),
 * `policy-server` and `agl-train` (the agl-cpu template). Nodes need Node.js ≥ 20 and nothing from npm.
 */
import { command as agent } from './commands/agent';
import { command as aglTrain } from './commands/agl-train';
import { command as policyServer } from './commands/policy-server';
import { type Command, runCommand, startCli } from './entry';

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
  return runCommand('lab', name, cmd, rest);
}

startCli(main);
