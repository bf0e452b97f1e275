/**
 * Grouping helpers: verl groups rows by `uid` (one prompt = one GRPO group) and Agent Lightning groups rows by
 * `rollout_id`. Keys become dense integer ids in first-appearance order, which is also the order Python's
 * dict iteration gives upstream.
 */
export interface Grouping {
  /** per row: dense group id */
  group: Int32Array;
  nGroups: number;
  /** group id → key */
  keys: string[];
}

export function indexGroups(keys: ArrayLike<string>): Grouping {
  const n = keys.length;
  const group = new Int32Array(n);
  const ids = new Map<string, number>();
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    let g = ids.get(k);
    if (g === undefined) {
      g = out.length;
      ids.set(k, g);
      out.push(k);
    }
    group[i] = g;
  }
  return { group, nGroups: out.length, keys: out };
}

/** Dense ids already given (e.g. `rowRollout`): counts the groups and checks the ids. */
export function groupingFromIds(ids: Int32Array): Grouping {
  let max = -1;
  for (let i = 0; i < ids.length; i++) {
    const g = ids[i];
    if (g < 0) throw new Error(`row ${i}: group id ${g} is negative`);
    if (g > max) max = g;
  }
  const keys: string[] = [];
  for (let g = 0; g <= max; g++) keys.push(String(g));
  return { group: ids, nGroups: max + 1, keys };
}

/** Members of each group in row order, CSR: rows of group g are members[start[g] .. start[g+1]). */
export function groupMembers(g: Grouping): { start: Int32Array; members: Int32Array } {
  const start = new Int32Array(g.nGroups + 1);
  for (let i = 0; i < g.group.length; i++) start[g.group[i] + 1]++;
  for (let k = 0; k < g.nGroups; k++) start[k + 1] += start[k];
  const fill = start.slice(0, g.nGroups);
  const members = new Int32Array(g.group.length);
  for (let i = 0; i < g.group.length; i++) members[fill[g.group[i]]++] = i;
  return { start, members };
}
