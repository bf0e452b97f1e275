/**
 * `lab gateway` (what `npm start` runs): the remote-mode gateway. Serves the built page and its API on one
 * origin, submits the allowlisted job templates to a Ray cluster's Jobs API and follows them into its store.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { networkInterfaces, hostname as osHostname } from 'node:os';
import { join, resolve } from 'node:path';
import { serve } from '@hono/node-server';
import { createApp, servedHosts } from '../../server/app';
import { ensureToken } from '../../server/auth';
import { jobTemplates } from '../../server/protocol/templates';
import { RayToken } from '../../server/ray';
import { RunManager } from '../../server/runs';
import { GatewayStore } from '../../server/store';
import { HARNESS_CATALOGUE } from '../aglCpu';
import { parseArgs, UsageError } from '../args';
import { buildClusterCli, PROJECT_ROOT } from '../clusterBundle';
import type { Command } from '../lab';

function rayAddressFrom(flag: string | undefined): string {
  const raw =
    flag ?? process.env.RAY_API_SERVER_ADDRESS ?? process.env.RAY_ADDRESS ?? 'http://127.0.0.1:8265';
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new UsageError(
      `Ray address '${raw}' is not a URL: give the dashboard's http://host:port (default port 8265), not the GCS address`,
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new UsageError(
      `Ray address '${raw}' must be the dashboard's http(s)://host:port (the Jobs API), not ${u.protocol}//`,
    );
  return u.origin;
}

/** What a gateway data dir holds; a folder with anything else is not tightened behind its owner's back. */
const DATA_DIR_ENTRIES = /^(gateway\.sqlite(-wal|-shm|-journal)?|cluster-cli)$/;

/**
 * The data dir, owner-only (0700): created so, or tightened when it holds only the gateway's own files; a
 * shared folder open to others is refused rather than changed.
 */
export function ownerOnlyDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const mode = statSync(dir).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  const foreign = readdirSync(dir).filter((n) => !DATA_DIR_ENTRIES.test(n));
  if (foreign.length)
    throw new UsageError(
      `--data-dir ${dir} is open to other users (mode ${mode.toString(8)}) and holds other files (${foreign.slice(0, 3).join(', ')}); the store keeps run keys and prompts: choose a folder of its own or chmod 700 it`,
    );
  chmodSync(dir, 0o700);
}

function interfaceAddresses(): string[] {
  const out = [osHostname()];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.push(a.address);
  return out;
}

export const command: Command = {
  summary: 'serve the page and the remote-mode gateway (Ray Jobs + Agent Lightning) on one origin',
  usage: `lab gateway [--port P=5173] [--host H=127.0.0.1] [--data-dir DIR=.gateway] [--ray-address URL]
    [--ray-token-file FILE] [--allow-ray-address-change] [--ray-lost-after S=15] [--allow-origin ORIGIN]...
    [--allow-host NAME[:PORT]]... [--agl-host H=127.0.0.1] [--agl-host-override H]
    [--static DIR=dist | --no-static] [--reset-token]
  Ray address: --ray-address, else $RAY_API_SERVER_ADDRESS / $RAY_ADDRESS, else http://127.0.0.1:8265. The
    page may switch it only with --allow-ray-address-change, and the Ray token goes only to this address.
  Ray token (RAY_AUTH_MODE=token clusters): --ray-token-file (read again when Ray rejects it), else
    $RAY_AUTH_TOKEN.
  --ray-lost-after: seconds Ray may stay unreachable before unfinished runs are failed (the cluster is gone).
  Host: requests must name an address the gateway listens on (loopback names for a loopback --host; this
    machine's addresses for 0.0.0.0), or one given with --allow-host (a reverse proxy, a DNS name).
  The data dir is owner-only (0700), its SQLite files 0600.`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      port: { type: 'number' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'ray-address': { type: 'string' },
      'ray-token-file': { type: 'string' },
      'allow-origin': { type: 'string', multiple: true },
      'allow-host': { type: 'string', multiple: true },
      'allow-ray-address-change': { type: 'bool' },
      'ray-lost-after': { type: 'number' },
      'agl-host': { type: 'string' },
      'agl-host-override': { type: 'string' },
      static: { type: 'string' },
      'no-static': { type: 'bool' },
      'reset-token': { type: 'bool' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const port = (flags.port as number | undefined) ?? 5173;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be 0-65535');
    const host = (flags.host as string | undefined) ?? '127.0.0.1';
    const allowOrigins = ((flags['allow-origin'] as string[] | undefined) ?? []).map((o) => {
      try {
        const u = new URL(o);
        if (u.origin !== o.replace(/\/$/, '')) throw new Error();
        return u.origin;
      } catch {
        throw new UsageError(`--allow-origin '${o}' must be an origin like https://host:port`);
      }
    });
    const rayAddress = rayAddressFrom(flags['ray-address'] as string | undefined);
    const envToken = process.env.RAY_AUTH_TOKEN?.trim();
    let rayToken: RayToken | null = envToken ? new RayToken(envToken) : null;
    if (flags['ray-token-file']) {
      try {
        rayToken = RayToken.fromFile(flags['ray-token-file'] as string);
      } catch (e) {
        throw new UsageError(`--ray-token-file: ${(e as Error).message}`);
      }
    }
    const lostAfterS = (flags['ray-lost-after'] as number | undefined) ?? 15;
    if (!Number.isFinite(lostAfterS) || lostAfterS < 1 || lostAfterS > 3600)
      throw new UsageError(`--ray-lost-after must be 1-3600 seconds, got ${lostAfterS}`);
    const allowHosts = ((flags['allow-host'] as string[] | undefined) ?? []).map((h) => {
      if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/i.test(h))
        throw new UsageError(`--allow-host '${h}' must be a host name or address, optionally with :port`);
      return h;
    });
    const dataDir = resolve((flags['data-dir'] as string | undefined) ?? join(PROJECT_ROOT, '.gateway'));
    ownerOnlyDataDir(dataDir);
    const staticDir = flags['no-static']
      ? null
      : resolve((flags.static as string | undefined) ?? join(PROJECT_ROOT, 'dist'));
    const version = (
      JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
    ).version;

    const clusterCli = join(dataDir, 'cluster-cli', 'lab.mjs');
    await buildClusterCli(clusterCli);
    const store = new GatewayStore(join(dataDir, 'gateway.sqlite'));
    const { token, hash } = ensureToken(store, flags['reset-token'] === true);
    const templates = jobTemplates(HARNESS_CATALOGUE);
    const runs = new RunManager({
      store,
      templates,
      rayAddress,
      rayToken,
      allowAddressChange: flags['allow-ray-address-change'] === true,
      rayLostAfterMs: lostAfterS * 1000,
      aglHost: (flags['agl-host'] as string | undefined) ?? '127.0.0.1',
      aglHostOverride: (flags['agl-host-override'] as string | undefined) ?? null,
      root: PROJECT_ROOT,
      clusterCli,
    });
    const hosts = new Set<string>();
    const app = createApp({
      hosts,
      store,
      runs,
      templates,
      tokenHash: hash,
      allowOrigins,
      staticDir,
      version,
      rayTokenAuth: rayToken !== null,
    });
    const server = await new Promise<ReturnType<typeof serve>>((resolveServer, reject) => {
      const s = serve({ fetch: app.fetch, port, hostname: host }, () => resolveServer(s));
      s.once('error', (e: NodeJS.ErrnoException) =>
        reject(
          e.code === 'EADDRINUSE'
            ? new UsageError(
                `port ${port} on ${host} is in use (another gateway or \`vite preview\`?): choose one with --port`,
              )
            : e,
        ),
      );
    }).catch(async (e) => {
      await runs.close();
      store.close();
      throw e;
    });
    const addr = server.address();
    const actualPort = typeof addr === 'object' && addr ? addr.port : port;
    for (const h of servedHosts(host, actualPort, allowHosts, interfaceAddresses())) hosts.add(h);
    const url = `http://${host}:${actualPort}/`;
    await runs.resume();
    console.log(
      `gateway: listening on ${url} (Ray at ${runs.address}${rayToken ? ', Ray token set' : ''}; store ${dataDir})`,
    );
    if (token) console.log(`gateway: open ${url}?token=${token}`);
    else
      console.log(
        'gateway: use the token printed at first start (or restart with --reset-token for a new link)',
      );
    await new Promise<void>((done) => {
      process.once('SIGTERM', done);
      process.once('SIGINT', done);
    });
    await runs.close();
    (server as import('node:http').Server).closeAllConnections?.();
    server.close();
    store.close();
    return 0;
  },
};
