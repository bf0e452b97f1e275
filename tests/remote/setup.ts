/**
 * Global set-up of the `remote` test project: the cluster venv (python/setup_cluster.sh, from PyPI when it is
 * missing or stale; $HARNESS_LAB_CLUSTER_VENV points at an existing one), the built page in a temporary folder,
 * and a real local Ray head with token auth on non-default ports. Teardown stops exactly that head's process
 * group, whatever happened in the tests.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'vite';
import type { TestProject } from 'vitest/node';
import { PROJECT_ROOT } from '../../src/cli/clusterBundle';
import { defaultVenv, startHead, stopHead } from '../../src/cli/localCluster';

declare module 'vitest' {
  export interface ProvidedContext {
    rayDashboard: string;
    rayTokenFile: string;
    clusterVenv: string;
    remoteDist: string;
    rayReadyMs: number;
  }
}

export const RAY_PORT = 26379;
export const RAY_DASHBOARD_PORT = 28265;

export default async function setup(project: TestProject) {
  const venv = defaultVenv(PROJECT_ROOT);
  const t0 = Date.now();
  execFileSync('bash', [join(PROJECT_ROOT, 'python', 'setup_cluster.sh'), venv], { stdio: 'inherit' });
  console.log(`remote: cluster venv ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${venv})`);
  const tmp = mkdtempSync(join(tmpdir(), 'hl-remote-'));
  const dist = join(tmp, 'dist');
  await build({ logLevel: 'warn', build: { outDir: dist, emptyOutDir: true } });
  // The head's state lives in the project (`.ray-test/`, git-ignored), so that `lab cluster down --dir .ray-test`
  // (.ci/run's exit trap) stops exactly this head even if the test process itself was killed.
  const rayDir = join(PROJECT_ROOT, '.ray-test');
  await stopHead(rayDir); // a head a killed run left behind
  const head = await startHead({
    dir: rayDir,
    venv,
    port: RAY_PORT,
    dashboardPort: RAY_DASHBOARD_PORT,
    numCpus: 4,
    tokenAuth: true,
  });
  console.log(`remote: Ray head up in ${(head.readyMs / 1000).toFixed(1)} s at ${head.dashboard}`);
  project.provide('rayDashboard', head.dashboard);
  project.provide('rayTokenFile', head.tokenFile as string);
  project.provide('clusterVenv', venv);
  project.provide('remoteDist', dist);
  project.provide('rayReadyMs', head.readyMs);
  return async () => {
    await stopHead(rayDir);
    rmSync(tmp, { recursive: true, force: true });
  };
}
