#!/usr/bin/env node
// Installs what `npm start` / `npm test` need and is missing. Arguments: `deps`, `chromium`.
//   deps      npm dependencies: installed when node_modules is absent or older than package-lock.json.
//   chromium  Debian's Chromium: installed with apt-get when running as root, else a message naming the package.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumPath } from './chromium.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function run(cmd, args, env = {}) {
  console.log(`> ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) {
    console.error(`ensure: '${cmd} ${args.join(' ')}' failed with exit code ${r.status}`);
    process.exit(r.status ?? 1);
  }
}

function ensureDeps() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  const stale =
    !existsSync(marker) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs);
  if (!stale) return;
  console.log('ensure: installing npm dependencies');
  // onnxruntime-node (under @huggingface/transformers) would download CUDA provider binaries in its postinstall;
  // package.json's allowScripts denies that script on npm 11, and this variable skips it on older npm.
  run('npm', existsSync(lock) ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund'], {
    ONNXRUNTIME_NODE_INSTALL: 'skip',
  });
}

function ensureChromium() {
  const exe = chromiumPath();
  if (existsSync(exe)) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot) {
    console.error(
      `ensure: Chromium not found at ${exe}. Install Debian's 'chromium' package ` +
        `(sudo apt-get install -y chromium), or set CHROMIUM_PATH to a Chromium binary.`,
    );
    process.exit(1);
  }
  console.log(`ensure: ${exe} is missing; installing Debian's 'chromium' package`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env });
  if (!existsSync(exe)) {
    console.error(`ensure: apt-get installed 'chromium' but ${exe} still does not exist`);
    process.exit(1);
  }
}

const wanted = new Set(process.argv.slice(2));
for (const w of wanted) {
  if (w !== 'deps' && w !== 'chromium') {
    console.error(`ensure: unknown argument '${w}' (expected: deps, chromium)`);
    process.exit(2);
  }
}
if (wanted.has('deps')) ensureDeps();
if (wanted.has('chromium')) ensureChromium();
