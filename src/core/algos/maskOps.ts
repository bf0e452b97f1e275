/**
 * Word-wise helpers over 0/1 byte masks. Response masks are long runs (model spans, observation spans), so
 * reading them four bytes per 32-bit word and filling values with the native `fill` is several times faster
 * than a per-token loop on the multi-million-token batches the page shows.
 */
export interface MaskWords {
  mask: Uint8Array;
  /** 32-bit words covering the 4-aligned middle of the mask */
  words: Uint32Array;
  /** index into `mask` of words[0]'s first byte */
  first: number;
}

const ALL_ONES = 0x01010101;

export function maskWords(mask: Uint8Array): MaskWords {
  const shift = (4 - (mask.byteOffset & 3)) & 3;
  const nWords = Math.max(0, (mask.byteLength - shift) >> 2);
  return { mask, words: new Uint32Array(mask.buffer, mask.byteOffset + shift, nWords), first: shift };
}

/** Σ mask[a..e) */
export function countRange(mw: MaskWords, a: number, e: number): number {
  const { mask, words, first } = mw;
  let t = a;
  let c = 0;
  while (t < e && ((t - first) & 3) !== 0) c += mask[t++];
  const w0 = (t - first) >> 2;
  const nw = (e - t) >> 2;
  for (let k = w0; k < w0 + nw; k++) c += Math.imul(words[k] & ALL_ONES, ALL_ONES) >>> 24;
  t += nw << 2;
  while (t < e) c += mask[t++];
  return c;
}

/** out[t] = v·mask[t] for t in [a, e): fill, then clear the masked-out bytes word by word. */
export function fillMasked(out: Float32Array, v: number, mw: MaskWords, a: number, e: number): void {
  const { mask, words, first } = mw;
  if (e <= a) return;
  out.fill(v, a, e);
  if (v === 0 && !Number.isNaN(v)) return;
  const zero = v * 0; // keeps NaN·0 = NaN as torch's broadcast does
  let t = a;
  while (t < e && ((t - first) & 3) !== 0) {
    if (!mask[t]) out[t] = zero;
    t++;
  }
  const w0 = (t - first) >> 2;
  const nw = (e - t) >> 2;
  for (let k = w0; k < w0 + nw; k++) {
    if (words[k] === ALL_ONES) continue;
    const b = first + (k << 2);
    if (!mask[b]) out[b] = zero;
    if (!mask[b + 1]) out[b + 1] = zero;
    if (!mask[b + 2]) out[b + 2] = zero;
    if (!mask[b + 3]) out[b + 3] = zero;
  }
  t += nw << 2;
  while (t < e) {
    if (!mask[t]) out[t] = zero;
    t++;
  }
}
