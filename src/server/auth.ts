/**
 * The gateway's access token, Jupyter-style: generated on first start (or with --reset-token), printed once
 * inside the URL that opens the page, and stored only as its SHA-256 (a 256-bit random token needs no slow
 * hash). Requests carry it as `Authorization: Bearer <token>`.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewayStore } from './store';

const KEY = 'token_sha256';

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The stored hash, creating a token when there is none (or when `reset`): `token` is set only then. */
export function ensureToken(store: GatewayStore, reset = false): { token: string | null; hash: Buffer } {
  const stored = store.getMeta(KEY);
  if (stored && !reset) return { token: null, hash: Buffer.from(stored, 'hex') };
  const token = randomBytes(32).toString('base64url');
  const hash = digest(token);
  store.setMeta(KEY, hash.toString('hex'));
  return { token, hash };
}

/** Constant-time check of an `Authorization` header against the stored hash. */
export function checkBearer(header: string | undefined, hash: Buffer): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  const presented = digest(header.slice(7).trim());
  return presented.length === hash.length && timingSafeEqual(presented, hash);
}
