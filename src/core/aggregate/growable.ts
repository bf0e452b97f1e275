/** Append-only typed buffers that double their capacity, so building a batch allocates O(log n) times. */
type TypedArray = Int32Array | Float32Array | Uint8Array;
type Ctor<T extends TypedArray> = new (n: number) => T;

export class Growable<T extends TypedArray> {
  data: T;
  length = 0;
  constructor(
    private readonly ctor: Ctor<T>,
    capacity = 1024,
  ) {
    this.data = new ctor(capacity);
  }

  reserve(extra: number): void {
    const need = this.length + extra;
    if (need <= this.data.length) return;
    let cap = this.data.length * 2;
    while (cap < need) cap *= 2;
    const next = new this.ctor(cap);
    next.set(this.data.subarray(0, this.length));
    this.data = next;
  }

  push(v: number): void {
    if (this.length === this.data.length) this.reserve(1);
    this.data[this.length++] = v;
  }

  /** Appends `src` (any array-like of numbers). */
  append(src: ArrayLike<number>): void {
    this.reserve(src.length);
    (this.data as { set(a: ArrayLike<number>, o: number): void }).set(src, this.length);
    this.length += src.length;
  }

  /** Appends `n` copies of `v`. */
  fill(v: number, n: number): void {
    this.reserve(n);
    this.data.fill(v, this.length, this.length + n);
    this.length += n;
  }

  /**
   * The contents as a right-sized array: the buffer itself when it is full, a view when it is nearly full
   * (pre-sized buffers: no copy), else a copy (so a large spare capacity is not kept alive).
   */
  toArray(): T {
    if (this.length === this.data.length) return this.data;
    if (this.length >= this.data.length * 0.9) return this.data.subarray(0, this.length) as T;
    return this.data.slice(0, this.length) as T;
  }
}
