/**
 * Line layout for token chips. Chips use a monospace font, so a chip's width is known from its label without
 * measuring the DOM: that lets a call of thousands of tokens be cut into fixed-height lines and windowed.
 */

/** Longest label shown on a chip; the tooltip always has the full text. */
export const MAX_CHIP_CHARS = 24;

/** What a chip shows for a token's text: whitespace made visible, long texts cut. */
export function chipLabel(text: string): string {
  if (text === '') return '∅';
  let s = '';
  for (const ch of text) {
    if (ch === ' ') s += '·';
    else if (ch === '\n') s += '↵';
    else if (ch === '\t') s += '⇥';
    else if (ch === '\r') s += '␍';
    else s += ch;
  }
  const chars = Array.from(s);
  return chars.length > MAX_CHIP_CHARS ? `${chars.slice(0, MAX_CHIP_CHARS - 1).join('')}…` : s;
}

/** Width of a chip in character cells: label plus padding and gap (kept in step with `.tok` in styles.css). */
export function chipCells(label: string): number {
  return Array.from(label).length + CHIP_EXTRA_CELLS;
}
export const CHIP_EXTRA_CELLS = 1;

/**
 * Start index of each line when chips of the given widths (in cells) are laid out left to right in lines of
 * `lineCells` cells. A chip wider than a line gets a line to itself; a token whose text ends with a newline
 * ends its line, so code and multi-line answers keep their shape.
 */
export function layoutLines(
  widths: ArrayLike<number>,
  endsLine: ArrayLike<boolean>,
  lineCells: number,
): Int32Array {
  const starts: number[] = [];
  let used = 0;
  let open = false;
  for (let i = 0; i < widths.length; i++) {
    const w = widths[i];
    if (!open || (used > 0 && used + w > lineCells)) {
      starts.push(i);
      used = 0;
      open = true;
    }
    used += w;
    if (endsLine[i]) open = false;
  }
  return Int32Array.from(starts);
}
