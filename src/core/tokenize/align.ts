/**
 * Aligns two id sequences (engine ids vs retokenized ids) as runs of equal ids and differing hunks, with Myers'
 * O((N+M)·D) shortest-edit-script algorithm (E. Myers, "An O(ND) Difference Algorithm and Its Variations",
 * Algorithmica 1986) after trimming the common prefix and suffix. Retokenization differences are few and local,
 * so D stays small; past `maxEdits` the rest is reported as one hunk rather than spending quadratic time.
 */

/** a[a0, a1) differs from b[b0, b1); an equal run has the same length on both sides. */
export interface Segment {
  equal: boolean;
  a0: number;
  a1: number;
  b0: number;
  b1: number;
}

export function alignIds(a: ArrayLike<number>, b: ArrayLike<number>, maxEdits = 4000): Segment[] {
  let pre = 0;
  const minLen = Math.min(a.length, b.length);
  while (pre < minLen && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < minLen - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const out: Segment[] = [];
  const push = (equal: boolean, a0: number, a1: number, b0: number, b1: number) => {
    if (a1 === a0 && b1 === b0) return;
    const last = out[out.length - 1];
    if (last && last.equal === equal && last.a1 === a0 && last.b1 === b0) {
      last.a1 = a1;
      last.b1 = b1;
    } else out.push({ equal, a0, a1, b0, b1 });
  };
  push(true, 0, pre, 0, pre);
  const ae = a.length - suf;
  const be = b.length - suf;
  for (const s of middle(a, b, pre, ae, pre, be, maxEdits)) push(s.equal, s.a0, s.a1, s.b0, s.b1);
  push(true, ae, a.length, be, b.length);
  return out;
}

/** Myers' greedy forward search with the V arrays kept per edit distance, then a backtrack. */
function middle(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  as: number,
  ae: number,
  bs: number,
  be: number,
  maxEdits: number,
): Segment[] {
  const n = ae - as;
  const m = be - bs;
  if (n === 0 && m === 0) return [];
  if (n === 0 || m === 0) return [{ equal: false, a0: as, a1: ae, b0: bs, b1: be }];
  const max = Math.min(n + m, maxEdits);
  const off = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) x = v[off + k + 1];
      else x = v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[as + x] === b[bs + y]) {
        x++;
        y++;
      }
      next[off + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    v = next;
  }
  if (found < 0) return [{ equal: false, a0: as, a1: ae, b0: bs, b1: be }];
  // Backtrack from (n, m) through the stored V arrays, collecting diagonal runs and single edits.
  const segs: Segment[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d];
    const k = x - y;
    const down = k === -d || (k !== d && vd[off + k - 1] < vd[off + k + 1]);
    const pk = down ? k + 1 : k - 1;
    const px = vd[off + pk];
    const py = px - pk;
    const sx = down ? px : px + 1;
    const sy = down ? py + 1 : py;
    if (x > sx) segs.push({ equal: true, a0: as + sx, a1: as + x, b0: bs + sy, b1: bs + y });
    segs.push({ equal: false, a0: as + px, a1: as + sx, b0: bs + py, b1: bs + sy });
    x = px;
    y = py;
  }
  if (x > 0) segs.push({ equal: true, a0: as, a1: as + x, b0: bs, b1: bs + y });
  segs.reverse();
  // merge adjacent single edits into hunks
  const out: Segment[] = [];
  for (const s of segs) {
    const last = out[out.length - 1];
    if (last && !last.equal && !s.equal && last.a1 === s.a0 && last.b1 === s.b0) {
      last.a1 = s.a1;
      last.b1 = s.b1;
    } else out.push({ ...s });
  }
  return out;
}
