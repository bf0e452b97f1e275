/**
 * A preset's link: `?preset=length-bias&seed=3&steps=4&seeds=5` (`seeds`: how many seeds from `seed` on run as
 * one group; also read from the hash, where the page keeps its
 * view state: `#tab=train&preset=…`). Reading says what it could not use — an unknown preset, a seed or step
 * count that is not an integer — so the page can name it instead of silently opening something else.
 */
import { listPresets } from '../../train/presets';

export interface PresetLink {
  slug: string;
  seed?: number;
  steps?: number;
  /** the group's size: seeds seed, seed + 1, …, seed + seeds − 1 (absent: one seed) */
  seeds?: number;
}

export interface PresetLinkRead {
  link: PresetLink | null;
  /** one line per parameter that was not used as given */
  problems: string[];
}

function params(s: string): URLSearchParams {
  return new URLSearchParams(s.replace(/^[?#]/, ''));
}

/** Reads `preset`, `seed` and `steps` from a search or hash string; no `preset` parameter: no link. */
export function readPresetLink(search: string): PresetLinkRead {
  const p = params(search);
  const slug = p.get('preset');
  const problems: string[] = [];
  if (slug === null) return { link: null, problems };
  const valid = listPresets().map((x) => x.slug);
  if (!valid.includes(slug)) {
    problems.push(`preset '${slug}' is not a preset (valid: ${valid.join(', ')})`);
    return { link: null, problems };
  }
  const link: PresetLink = { slug };
  const int = (key: 'seed' | 'steps' | 'seeds', min: number) => {
    const raw = p.get(key);
    if (raw === null) return;
    if (/^-?\d+$/.test(raw) && Number(raw) >= min) link[key] = Number(raw);
    else problems.push(`${key} '${raw}' must be an integer ≥ ${min}; the preset's own is used`);
  };
  int('seed', 0);
  int('steps', 1);
  int('seeds', 1);
  return { link, problems };
}

/** The search (or hash) string with the link's parameters set and other parameters kept; null removes them. */
export function writePresetLink(search: string, link: PresetLink | null): string {
  const prefix = search.startsWith('#') ? '#' : '?';
  const p = params(search);
  for (const k of ['preset', 'seed', 'steps', 'seeds']) p.delete(k);
  if (link) {
    p.set('preset', link.slug);
    if (link.seed !== undefined) p.set('seed', String(link.seed));
    if (link.steps !== undefined) p.set('steps', String(link.steps));
    if (link.seeds !== undefined && link.seeds > 1) p.set('seeds', String(link.seeds));
  }
  const s = p.toString();
  return s ? `${prefix}${s}` : '';
}
