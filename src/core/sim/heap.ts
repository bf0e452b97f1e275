/** A binary min-heap of (key, id) pairs in typed arrays: the simulator's event queue and per-replica sequences. */
export class MinHeap {
  private keys: Float64Array;
  private ids: Int32Array;
  size = 0;

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
    while (i > 0) {
      const p = (i - 1) >> 1;
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

  /** Removes the smallest; returns its id. */
  pop(): number {
    const keys = this.keys;
    const ids = this.ids;
    const top = ids[0];
    const n = --this.size;
    if (n > 0) {
      const key = keys[n];
      const id = ids[n];
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && keys[c + 1] < keys[c]) c++;
        if (keys[c] >= key) break;
        keys[i] = keys[c];
        ids[i] = ids[c];
        i = c;
      }
      keys[i] = key;
      ids[i] = id;
    }
    return top;
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
    return out;
  }
}
