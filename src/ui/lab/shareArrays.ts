/**
 * Shared memory for the lab worker's big read-only data (a loaded trace's token ids and log-probs): the typed
 * arrays of a value are moved, in place, onto a few large SharedArrayBuffers, so posting the value to the page
 * shares those numbers instead of copying them (the page thread then deserialises only the small objects around
 * them, and the two threads hold one copy). Needs cross-origin isolation (the app's server sends COOP/COEP);
 * elsewhere nothing is moved and a post copies as before.
 */

type Typed =
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array;

/** the largest single SharedArrayBuffer made (several are made for more) */
const CHUNK_BYTES = 1 << 28;

function isTyped(v: unknown): v is Typed {
  return (
    ArrayBuffer.isView(v) &&
    !(v instanceof DataView) &&
    !(v instanceof BigInt64Array || v instanceof BigUint64Array)
  );
}

/** Whether this context can make SharedArrayBuffers that a post shares (cross-origin isolated). */
export function canShare(): boolean {
  return (
    typeof SharedArrayBuffer !== 'undefined' &&
    (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true
  );
}

/**
 * Replaces every typed array reachable through the plain objects and arrays of `root` by a view of the same type
 * and values on shared memory (an array reached twice stays one array). Returns the bytes moved.
 */
export function shareTypedArrays(root: unknown): number {
  if (!canShare()) return 0;
  const holders: { on: Record<string | number, unknown>; key: string | number; a: Typed }[] = [];
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    const entries: [string | number, unknown][] = Array.isArray(v)
      ? v.map((x, i) => [i, x])
      : Object.getPrototypeOf(v) === Object.prototype
        ? Object.entries(v)
        : [];
    for (const [key, x] of entries) {
      if (isTyped(x)) {
        if (!(x.buffer instanceof SharedArrayBuffer))
          holders.push({ on: v as Record<string, unknown>, key, a: x });
      } else if (x !== null && typeof x === 'object') stack.push(x);
    }
  }
  const moved = new Map<Typed, Typed>();
  let sab: SharedArrayBuffer | null = null;
  let at = 0;
  let bytes = 0;
  let left = 0;
  for (const a of new Set(holders.map((h) => h.a))) left += align(a.byteLength);
  for (const h of holders) {
    let view = moved.get(h.a);
    if (!view) {
      const n = align(h.a.byteLength);
      if (!sab || at + n > sab.byteLength) {
        sab = new SharedArrayBuffer(Math.max(n, Math.min(left, CHUNK_BYTES)));
        at = 0;
      }
      const Ctor = h.a.constructor as new (b: SharedArrayBuffer, offset: number, length: number) => Typed;
      view = new Ctor(sab, at, h.a.length);
      view.set(h.a as never);
      at += n;
      left -= n;
      bytes += h.a.byteLength;
      moved.set(h.a, view);
    }
    h.on[h.key] = view;
  }
  return bytes;
}

function align(n: number): number {
  return Math.ceil(n / 8) * 8;
}
