/** `lab cluster up|down|status`: a local Ray head from the cluster venv, to try remote mode on one machine. */
import { join, resolve } from 'node:path';
import { parseArgs, UsageError } from '../args';
import { PROJECT_ROOT } from '../clusterBundle';
import type { Command } from '../lab';
import { defaultVenv, headInfo, listeningAddresses, startHead, stopHead } from '../localCluster';

export const command: Command = {
  summary: 'start / stop a local Ray head (from the cluster venv) for the gateway to submit to',
  usage: `lab cluster up [--dir DIR=.ray-local] [--venv DIR] [--port P=6379] [--dashboard-port P=8265]
    [--num-cpus N] [--token]
lab cluster down [--dir DIR]
lab cluster status [--dir DIR]
  --venv: the cluster venv (bash python/setup_cluster.sh), default $HARNESS_LAB_CLUSTER_VENV or python/.venv-cluster
  --token: RAY_AUTH_MODE=token with a generated token in DIR/token (otherwise RAY_AUTH_MODE=disabled)`,
  async run(argv) {
    const [sub, ...rest] = argv;
    const { positionals, flags } = parseArgs(rest, {
      dir: { type: 'string' },
      venv: { type: 'string' },
      port: { type: 'number' },
      'dashboard-port': { type: 'number' },
      'num-cpus': { type: 'number' },
      token: { type: 'bool' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const dir = resolve((flags.dir as string | undefined) ?? join(PROJECT_ROOT, '.ray-local'));
    if (sub === 'up') {
      for (const f of ['port', 'dashboard-port'] as const) {
        const v = flags[f] as number | undefined;
        if (v !== undefined && (!Number.isInteger(v) || v < 1024 || v > 65000))
          throw new UsageError(`--${f} must be an integer port in [1024, 65000]`);
      }
      const info = await startHead({
        dir,
        venv: resolve((flags.venv as string | undefined) ?? defaultVenv(PROJECT_ROOT)),
        port: flags.port as number | undefined,
        dashboardPort: flags['dashboard-port'] as number | undefined,
        numCpus: flags['num-cpus'] as number | undefined,
        tokenAuth: flags.token === true,
      });
      console.log(
        `cluster: Ray head up in ${(info.readyMs / 1000).toFixed(1)} s, dashboard ${info.dashboard} (pid ${info.pid})`,
      );
      const open = listeningAddresses(info.pid).filter((l) => !l.loopback);
      if (open.length)
        console.error(
          `cluster: warning: the head listens beyond loopback on ${open.map((l) => l.address).join(', ')}`,
        );
      console.log(
        `cluster: npm start -- --ray-address ${info.dashboard}${info.tokenFile ? ` --ray-token-file ${info.tokenFile}` : ''}`,
      );
      return 0;
    }
    if (sub === 'down') {
      const stopped = await stopHead(dir);
      console.log(
        stopped ? `cluster: Ray head from ${dir} stopped` : `cluster: no Ray head recorded in ${dir}`,
      );
      return 0;
    }
    if (sub === 'status') {
      const info = headInfo(dir);
      console.log(
        info
          ? `cluster: head pid ${info.pid}, dashboard ${info.dashboard}`
          : `cluster: no Ray head recorded in ${dir}`,
      );
      return info ? 0 : 1;
    }
    throw new UsageError(`expected up, down or status, got '${sub ?? ''}'`);
  },
};
