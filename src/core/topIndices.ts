/**
 * The indices of the n largest values, largest first: O(length·n), for the small n a trace records. Kept sorted
 * by insertion, so only a strictly larger value moves up and lower indices win ties. n ≤ values.length.
 */
export function topIndices(values: ArrayLike<number>, n: number): number[] {
  const ids: number[] = [];
  for (let v = 0; v < values.length; v++) {
    if (ids.length < n) ids.push(v);
    else if (values[v] > values[ids[n - 1]]) ids[n - 1] = v;
    else continue;
    for (let j = ids.length - 1; j > 0 && values[ids[j]] > values[ids[j - 1]]; j--) {
      const s = ids[j];
      ids[j] = ids[j - 1];
      ids[j - 1] = s;
    }
  }
  return ids;
}
