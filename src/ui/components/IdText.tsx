/**
 * Ids of one list (rollouts, groups) share a long prefix and differ at the end (`coding-train-s42-0`,
 * `coding-train-s42-0@random`). Where a column is too narrow, the shared prefix gives way first (cut at its start,
 * `…s42-0@random`) and the part that tells the ids apart stays whole; the full id is always in the tooltip.
 */

const SEPARATORS = /[-_./:@#\s]/;

/**
 * Length of the prefix every id shares, cut back to just after a separator so a number is never split
 * (`s42-10`, `s42-11` share `s42-`, not `s42-1`).
 */
export function sharedPrefixLength(ids: readonly string[]): number {
  if (ids.length < 2) return 0;
  let n = ids[0].length;
  for (let i = 1; i < ids.length && n > 0; i++) {
    const s = ids[i];
    let k = 0;
    while (k < n && k < s.length && s.charCodeAt(k) === ids[0].charCodeAt(k)) k++;
    n = k;
  }
  while (n > 0 && !SEPARATORS.test(ids[0][n - 1])) n--;
  return n;
}

export function IdText(props: { id: string; prefix: number; className?: string; testId?: string }) {
  const { id } = props;
  const p = Math.min(props.prefix, id.length);
  return (
    <span
      className={props.className ? `idtext ${props.className}` : 'idtext'}
      title={id}
      data-testid={props.testId}
    >
      {p > 0 && (
        <span className="id-pre">
          <span dir="ltr">{id.slice(0, p)}</span>
        </span>
      )}
      <span className="id-rest">{id.slice(p)}</span>
    </span>
  );
}
