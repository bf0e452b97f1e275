/** Invented words from a fixed syllable set: the names of search's worlds and instruction's pre-training topics. */

const SYLLABLES = [
  'ka',
  'lo',
  've',
  'mir',
  'dra',
  'sel',
  'tun',
  'or',
  'bex',
  'qua',
  'nim',
  'tal',
  'ris',
  'ul',
  'fen',
  'gor',
  'zi',
  'han',
  'pel',
  'ost',
];

/** `parts` syllables drawn from `rand`, lower case. */
export function inventedWord(rand: () => number, parts: number): string {
  let s = '';
  for (let i = 0; i < parts; i++) s += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
  return s;
}
