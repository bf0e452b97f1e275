/** `sort()`'s radix passes: two, of at most this many bits each, over ⌊key − smallest key⌋ */
const RADIX_BITS = 11;

/**
 * A 4-ary min-heap of (key, id) pairs in typed arrays (half a binary heap's levels, the four children side by
 * side): the simulator's event queue and per-replica sequences.
 * `sort()` puts the entries in key order in place. A sorted array is a heap, so every method stays valid, and
 * pushes in key order keep it sorted; meanwhile `keyAt(i)` / `idAt(i)` walk the entries in pop order and
 * `dropSorted(k)` removes the first k without a sift each.
 */
export class MinHeap {
  private keys: Float64Array;
  private ids: Int32Array;
  size = 0;
  /** the entries are in key order (an empty heap is; a push of a smaller key than the last, or a pop, ends it) */
  sorted = true;
  private spareKeys = new Float64Array(0);
  private spareIds = new Int32Array(0);
  private digits = new Int32Array(0);
  private order = new Int32Array(0);
  private order2 = new Int32Array(0);
  private counts = new Int32Array(1 << RADIX_BITS);

  constructor(capacity = 64) {
    this.keys = new Float64Array(capacity);
    this.ids = new Int32Array(capacity);
  }

  push(key: number, id: number): void {
    if (this.size === this.keys.length) {
      const k = new Float64Array(this.size * 2);
      k.set(this.keys);
      this.keys = k;
      const d = new Int32Array(this.size * 2);
      d.set(this.ids);
      this.ids = d;
    }
    const keys = this.keys;
    const ids = this.ids;
    let i = this.size++;
    if (i > 0 && key < keys[i - 1]) this.sorted = false;
    while (i > 0) {
      const p = (i - 1) >> 2;
      if (keys[p] <= key) break;
      keys[i] = keys[p];
      ids[i] = ids[p];
      i = p;
    }
    keys[i] = key;
    ids[i] = id;
  }

  peekKey(): number {
    return this.size ? this.keys[0] : Number.POSITIVE_INFINITY;
  }

  peekId(): number {
    return this.ids[0];
  }

  /**
   * Removes the smallest; returns its id. Bottom-up: the hole at the root moves down along the smallest children
   * to a leaf (three comparisons a level), then the last entry rises from there to the first position whose parent
   * is smaller. Along that path the keys only grow, so the entry lands where a sift-down from the root would
   * have stopped (above equal keys, as it does), and the heap comes out the same.
   */
  pop(): number {
    const keys = this.keys;
    const ids = this.ids;
    const top = ids[0];
    const n = --this.size;
    if (n > 1) this.sorted = false;
    if (n > 0) {
      const key = keys[n];
      const id = ids[n];
      let i = 0;
      for (;;) {
        const first = 4 * i + 1;
        if (first >= n) break;
        let c = first;
        let ck = keys[first];
        const end = Math.min(first + 4, n);
        for (let j = first + 1; j < end; j++) {
          const kj = keys[j];
          if (kj < ck) {
            ck = kj;
            c = j;
          }
        }
        keys[i] = ck;
        ids[i] = ids[c];
        i = c;
      }
      while (i > 0) {
        const p = (i - 1) >> 2;
        if (keys[p] < key) break;
        keys[i] = keys[p];
        ids[i] = ids[p];
        i = p;
      }
      keys[i] = key;
      ids[i] = id;
    }
    return top;
  }

  /**
   * Puts the entries in key order (equal keys in any order): a stable radix sort on the integer part of
   * (key − smallest key), then one insertion pass over keys that share it. The subtraction and the floor are
   * monotonic, so only entries that share an integer part can be out of order after the radix passes. A key
   * range of 2^22 or more (or a key that is not a finite number) takes a comparison sort instead.
   */
  sort(): void {
    if (this.sorted) return;
    const n = this.size;
    const keys = this.keys;
    const ids = this.ids;
    if (this.spareKeys.length < n) {
      const cap = keys.length;
      this.spareKeys = new Float64Array(cap);
      this.spareIds = new Int32Array(cap);
      this.digits = new Int32Array(cap);
      this.order = new Int32Array(cap);
      this.order2 = new Int32Array(cap);
    }
    const sk = this.spareKeys;
    const si = this.spareIds;
    sk.set(keys.subarray(0, n));
    si.set(ids.subarray(0, n));
    const low = keys[0];
    const digits = this.digits;
    let top = 0;
    for (let i = 0; i < n; i++) {
      const d = Math.floor(sk[i] - low);
      if (!(d >= 0 && d < 1 << (2 * RADIX_BITS))) {
        top = -1;
        break;
      }
      digits[i] = d;
      if (d > top) top = d;
    }
    const order = this.order;
    if (top >= 0) {
      // LSD radix on the two halves of the digit's bits: low half into order2, then high half into order
      const bits = 32 - Math.clz32(top);
      const lowBits = (bits + 1) >> 1;
      const mask = (1 << lowBits) - 1;
      const counts = this.counts;
      const first = this.order2;
      counts.fill(0, 0, mask + 1);
      for (let i = 0; i < n; i++) counts[digits[i] & mask]++;
      for (let d = 0, sum = 0; d <= mask; d++) {
        const c = counts[d];
        counts[d] = sum;
        sum += c;
      }
      for (let i = 0; i < n; i++) first[counts[digits[i] & mask]++] = i;
      const highs = (top >>> lowBits) + 1;
      counts.fill(0, 0, highs);
      for (let i = 0; i < n; i++) counts[digits[i] >>> lowBits]++;
      for (let d = 0, sum = 0; d < highs; d++) {
        const c = counts[d];
        counts[d] = sum;
        sum += c;
      }
      for (let j = 0; j < n; j++) {
        const i = first[j];
        order[counts[digits[i] >>> lowBits]++] = i;
      }
    } else order.set(Array.from({ length: n }, (_, i) => i).sort((x, y) => sk[x] - sk[y]));
    for (let j = 0; j < n; j++) {
      const i = order[j];
      const key = sk[i];
      const id = si[i];
      let k = j;
      while (k > 0 && keys[k - 1] > key) {
        keys[k] = keys[k - 1];
        ids[k] = ids[k - 1];
        k--;
      }
      keys[k] = key;
      ids[k] = id;
    }
    this.sorted = true;
  }

  /** The i-th entry's key / id in storage order (pop order while `sorted`). */
  keyAt(i: number): number {
    return this.keys[i];
  }

  idAt(i: number): number {
    return this.ids[i];
  }

  /** Removes the first k entries of a sorted heap (what k pops would remove). */
  dropSorted(k: number): void {
    if (!this.sorted) throw new Error('MinHeap.dropSorted: the heap is not sorted');
    if (k <= 0) return;
    this.keys.copyWithin(0, k, this.size);
    this.ids.copyWithin(0, k, this.size);
    this.size -= k;
  }

  /** Whether any id in the heap satisfies `pred` (a scan in storage order; the heap is unchanged). */
  someId(pred: (id: number) => boolean): boolean {
    const ids = this.ids;
    for (let i = 0; i < this.size; i++) if (pred(ids[i])) return true;
    return false;
  }

  /** The smallest key among entries whose id is at least `from` (a scan; +∞ when none). */
  minKeyOfIdsFrom(from: number): number {
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.size; i++) if (this.ids[i] >= from && this.keys[i] < best) best = this.keys[i];
    return best;
  }

  /** Every id, in heap order, then empties the heap. */
  drain(): number[] {
    const out = Array.from(this.ids.subarray(0, this.size));
    this.size = 0;
    this.sorted = true;
    return out;
  }
}
