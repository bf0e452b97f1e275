/**
 * A local Ray head for trying remote mode (and for the tests): `ray start --head --block` from the cluster venv
 * (python/setup_cluster.sh) in its own process group, so that stopping it stops exactly its processes and no
 * other Ray on the machine. Its state (pid, dashboard URL, token file) lives in a folder of its own.
 *
 * RAY_AUTH_MODE is always set explicitly: `token` with a generated token (written to `<dir>/token`, mode 600),
 * or `disabled`.
 *
 * The head is a one-machine cluster bound to loopback: `--node-ip-address 127.0.0.1` alone is not enough (Ray
 * 2.60 replaces a loopback node address by the machine's, `services.resolve_ip_for_localhost`, and its gRPC
 * servers then listen on every interface); `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` turns off Ray's multi-node
 * addressing (`ray_constants.ENABLE_RAY_CLUSTER`), which keeps every server of the head on 127.0.0.1.
 * `listeningAddresses` reads back what its processes listen on.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { RayJobsClient } from '../server/ray';

export interface HeadOptions {
  /** folder for the head's state and log */
  dir: string;
  /** the cluster venv (its bin/ holds ray, agl-server, agl-controller, python) */
  venv: string;
  /** GCS port (Ray default 6379); a non-default port moves Ray's other fixed ports next to it */
  port?: number;
  dashboardPort?: number;
  numCpus?: number;
  tokenAuth?: boolean;
  timeoutMs?: number;
}

export interface HeadInfo {
  pid: number;
  dashboard: string;
  tokenFile: string | null;
  startedMs: number;
  readyMs: number;
  log: string;
}

const STATE = 'head.json';

export function defaultVenv(root: string): string {
  return resolve(process.env.HARNESS_LAB_CLUSTER_VENV ?? join(root, 'python', '.venv-cluster'));
}

export function headInfo(dir: string): HeadInfo | null {
  const p = join(dir, STATE);
  if (!existsSync(p)) return null;
  return JSON.parse(readFileSync(p, 'utf8')) as HeadInfo;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function startHead(o: HeadOptions): Promise<HeadInfo> {
  const dir = resolve(o.dir);
  mkdirSync(dir, { recursive: true });
  const existing = headInfo(dir);
  if (existing && alive(existing.pid))
    throw new Error(`a Ray head from ${dir} is already running (pid ${existing.pid}, ${existing.dashboard})`);
  const ray = join(o.venv, 'bin', 'ray');
  if (!existsSync(ray))
    throw new Error(
      `no Ray in ${o.venv}: create the cluster venv first (bash python/setup_cluster.sh ${o.venv})`,
    );
  const port = o.port ?? 6379;
  const dashboardPort = o.dashboardPort ?? 8265;
  const args = [
    'start',
    '--head',
    '--block',
    '--disable-usage-stats',
    '--node-ip-address',
    '127.0.0.1',
    '--port',
    String(port),
    '--dashboard-host',
    '127.0.0.1',
    '--dashboard-port',
    String(dashboardPort),
  ];
  if (port !== 6379)
    args.push(
      ...[
        '--node-manager-port',
        port + 1,
        '--object-manager-port',
        port + 2,
        '--ray-client-server-port',
        port + 3,
      ]
        .concat(['--dashboard-agent-listen-port', port + 4, '--dashboard-agent-grpc-port', port + 5])
        .concat(['--runtime-env-agent-port', port + 6, '--metrics-export-port', port + 7])
        .concat(['--min-worker-port', port + 100, '--max-worker-port', port + 400])
        .map(String),
    );
  if (o.numCpus !== undefined) args.push('--num-cpus', String(o.numCpus));
  // Unix socket paths under the temp dir must stay short (108 bytes), so it lives in /tmp, named after `dir`.
  const tmp = join('/tmp', `hl-ray-${createHash('sha1').update(dir).digest('hex').slice(0, 10)}`);
  args.push('--temp-dir', tmp);
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PATH: `${join(o.venv, 'bin')}:${process.env.PATH ?? ''}`,
    RAY_USAGE_STATS_ENABLED: '0',
    RAY_AUTH_MODE: o.tokenAuth ? 'token' : 'disabled',
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER: '0',
  };
  delete env.RAY_ADDRESS;
  let tokenFile: string | null = null;
  let token: string | null = null;
  if (o.tokenAuth) {
    token = randomBytes(32).toString('hex');
    tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, token, { mode: 0o600 });
    env.RAY_AUTH_TOKEN = token;
  } else delete env.RAY_AUTH_TOKEN;
  const log = join(dir, 'head.log');
  const fd = openSync(log, 'w');
  const t0 = Date.now();
  const child = spawn(ray, args, { env, cwd: dir, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${ray}`);
  const dashboard = `http://127.0.0.1:${dashboardPort}`;
  const info: HeadInfo = { pid: child.pid, dashboard, tokenFile, startedMs: t0, readyMs: 0, log };
  writeFileSync(join(dir, STATE), JSON.stringify(info));
  const client = new RayJobsClient({ address: dashboard, token, timeoutMs: 5000 });
  const deadline = t0 + (o.timeoutMs ?? 180_000);
  let last = '';
  while (Date.now() < deadline) {
    if (!alive(child.pid)) break;
    try {
      await client.version();
      const n = await client.nodes();
      if (n.nodes >= 1 && n.cpus > 0) {
        info.readyMs = Date.now() - t0;
        writeFileSync(join(dir, STATE), JSON.stringify(info));
        return info;
      }
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  await stopHead(dir).catch(() => undefined);
  const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-20).join('\n') : '';
  throw new Error(`the Ray head did not come up (${last || 'process exited'}); ${log}:\n${tail}`);
}

/**
 * Stops the jobs still running on the head (Ray starts each job's entrypoint in a session of its own, outside
 * the head's process group), then the head's process group: SIGTERM, then SIGKILL after `graceMs`.
 */
export async function stopHead(dir: string, graceMs = 20_000): Promise<boolean> {
  const info = headInfo(resolve(dir));
  if (!info) return false;
  const token =
    info.tokenFile && existsSync(info.tokenFile) ? readFileSync(info.tokenFile, 'utf8').trim() : null;
  const client = new RayJobsClient({ address: info.dashboard, token, timeoutMs: 5000 });
  try {
    const live = (await client.jobs()).filter((j) => j.status === 'PENDING' || j.status === 'RUNNING');
    for (const j of live) await client.stop(j.submissionId).catch(() => false);
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const still = (await client.jobs()).filter((j) => j.status === 'PENDING' || j.status === 'RUNNING');
      if (still.length === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  } catch {
    // the dashboard is already gone: nothing to stop through it
  }
  const group = -info.pid;
  const groupAlive = () => {
    try {
      process.kill(group, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (groupAlive()) {
    process.kill(group, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (groupAlive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    if (groupAlive()) process.kill(group, 'SIGKILL');
    while (groupAlive()) await new Promise((r) => setTimeout(r, 100));
  }
  rmSync(join(resolve(dir), STATE), { force: true });
  return true;
}

/** `/proc/net/tcp{,6}` local address (hex) → printable address, and whether it is loopback. */
function decodeAddress(hex: string): { address: string; loopback: boolean } {
  const [ip, port] = hex.split(':');
  const p = Number.parseInt(port, 16);
  const v4 = (h: string) => [6, 4, 2, 0].map((i) => Number.parseInt(h.slice(i, i + 2), 16)).join('.'); // host byte order
  if (ip.length === 8) {
    const a = v4(ip);
    return { address: `${a}:${p}`, loopback: a.startsWith('127.') };
  }
  if (ip.startsWith('0000000000000000FFFF0000')) {
    const a = v4(ip.slice(24));
    return { address: `[::ffff:${a}]:${p}`, loopback: a.startsWith('127.') };
  }
  const loopback = ip === '00000000000000000000000001000000';
  return { address: loopback ? `[::1]:${p}` : `[${ip}]:${p}`, loopback };
}

/**
 * The TCP addresses the processes of process group `pgid` listen on (Linux /proc), each with whether it is
 * loopback only: how `lab cluster up` and the tests check that a local head is not reachable from outside.
 */
export function listeningAddresses(pgid: number): { address: string; loopback: boolean; pid: number }[] {
  const inodes = new Map<string, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) continue;
      for (const fd of readdirSync(`/proc/${d}/fd`)) {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${d}/fd/${fd}`));
        if (m) inodes.set(m[1], Number(d));
      }
    } catch {
      // gone, or not ours
    }
  }
  const out: { address: string; loopback: boolean; pid: number }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      const pid = inodes.get(f[9]);
      if (pid !== undefined) out.push({ ...decodeAddress(f[1]), pid });
    }
  }
  return out;
}
