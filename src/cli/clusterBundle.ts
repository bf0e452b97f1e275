/**
 * Builds the one-file CLI a Ray node runs (`src/cli/clusterMain.ts` → `cluster/lab.mjs` in the job package)
 * with esbuild: every npm dependency inlined, Node built-ins left as imports, so a node needs Node.js and
 * nothing from npm.
 */

import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function buildClusterCli(outfile: string): Promise<void> {
  await build({
    entryPoints: [fileURLToPath(new URL('./clusterMain.ts', import.meta.url))],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: false,
    logLevel: 'warning',
    // the page's rollout environment (Vite `?url` asset imports, the browser builds of onnxruntime-web and
    // transformers.js) is never chosen in Node: the bundle gets a module that says so instead
    plugins: [
      {
        name: 'page-rollout-env',
        setup(b) {
          b.onResolve({ filter: /\/rolloutEnvPage(\.ts)?$/ }, (args) => ({
            path: args.path,
            namespace: 'page-only',
          }));
          b.onLoad({ filter: /.*/, namespace: 'page-only' }, () => ({
            loader: 'js',
            contents:
              "export function pageRolloutEnv() { throw new Error('the page rollout environment is not available in Node'); }",
          }));
        },
      },
    ],
    // CommonJS dependencies call require(); give the ESM bundle one
    banner: {
      js: "import { createRequire as __hlCreateRequire } from 'node:module'; const require = __hlCreateRequire(import.meta.url);",
    },
  });
}
