/**
 * The presets' claims measured across seeds. A claim is data in the preset registry (a metric, the arm where
 * the effect should show, its control, the per-run statistic and the expected sign of arm − control); the
 * evidence table (`presetEvidence.json`, written by `npm run bench:presets`) holds per preset the checkpoint it
 * was measured from (path and sha256), the seeds, steps and command, and per claim every seed's difference,
 * the mean, the 95% Student t interval and how many seeds agree. The registry's claim texts are derived from
 * that table here, never written by hand; a claim holds when at least 4 of 5 seeds (80% of at least 5) agree
 * and its interval excludes zero on the expected side, and the text says so when it does not.
 */
import { agreeingCount, tInterval } from '../core/stats';
import { list, num, oneOf, record, str, type WireRecord } from '../core/wire';
import type { VariantHistory } from './presetMetrics';

export type ClaimStatistic = 'change' | 'mean';

export interface PresetClaim {
  /** unique within the preset */
  id: string;
  /** a metric the preset lists */
  metric: string;
  /** the variant where the effect should show */
  arm: string;
  /** the variant it is compared with */
  control: string;
  /** per run: `change` = mean of the last half of the steps − mean of the first half; `mean` = mean over steps */
  statistic: ClaimStatistic;
  /** the expected sign of statistic(arm) − statistic(control) */
  sign: 1 | -1;
  /** the claim in words (what a positive result means) */
  text: string;
}

/** A claim's measurement: the claim's fields but its text (which is derived from these). */
export interface ClaimEvidence extends Omit<PresetClaim, 'text'> {
  /** per seed (in `seeds` order) statistic(arm) − statistic(control); null when the metric was missing */
  differences: (number | null)[];
  /** over the seeds with a value; null when fewer than two had one */
  mean: number | null;
  lo: number | null;
  hi: number | null;
  /** seeds whose difference has the expected sign */
  agree: number;
  holds: boolean;
}

export interface PresetEvidenceEntry {
  harness: string;
  checkpoint: { path: string; sha256: string };
  seeds: number[];
  steps: number;
  /** the command that produced this entry */
  command: string;
  claims: ClaimEvidence[];
}

export interface PresetEvidence {
  presets: Record<string, PresetEvidenceEntry>;
}

/** Seeds a claim needs before it can hold, and the share of them that must agree. */
export const MIN_SEEDS = 5;
export const AGREE_SHARE = 0.8;

const finite = (h: VariantHistory, metric: string) =>
  h.steps
    .filter((s) => s.step > 0)
    .map((s) => s.data[metric])
    .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** One run's statistic of a metric (NaN when the run has too few values for it). */
export function runStatistic(h: VariantHistory, metric: string, statistic: ClaimStatistic): number {
  const vals = finite(h, metric);
  if (statistic === 'mean') return vals.length ? avg(vals) : Number.NaN;
  if (vals.length < 2) return Number.NaN;
  const half = Math.floor(vals.length / 2);
  return avg(vals.slice(vals.length - half)) - avg(vals.slice(0, half));
}

/** statistic(arm) − statistic(control) of one seed's runs. */
export function claimDifference(claim: PresetClaim, runs: VariantHistory[]): number {
  const of = (name: string) => {
    const r = runs.find((x) => x.variant === name);
    if (!r) throw new Error(`claim ${claim.id}: no run of variant '${name}'`);
    return runStatistic(r, claim.metric, claim.statistic);
  };
  return of(claim.arm) - of(claim.control);
}

/** The claim's evidence from its per-seed differences (NaN or null = missing on that seed). */
export function evaluateClaim(claim: PresetClaim, differences: readonly (number | null)[]): ClaimEvidence {
  const diffs = differences.map((d) => (d === null || !Number.isFinite(d) ? null : d));
  const vals = diffs.filter((d): d is number => d !== null);
  const agree = agreeingCount(vals, claim.sign);
  const ci = vals.length >= 2 ? tInterval(vals) : null;
  const excludesZero = ci !== null && (claim.sign > 0 ? ci.lo > 0 : ci.hi < 0);
  return {
    id: claim.id,
    metric: claim.metric,
    arm: claim.arm,
    control: claim.control,
    statistic: claim.statistic,
    sign: claim.sign,
    differences: diffs,
    mean: ci ? ci.mean : vals.length === 1 ? vals[0] : null,
    lo: ci ? ci.lo : null,
    hi: ci ? ci.hi : null,
    agree,
    holds: diffs.length >= MIN_SEEDS && agree >= Math.ceil(AGREE_SHARE * diffs.length - 1e-9) && excludesZero,
  };
}

// ---------------------------------------------------------------------------------------------------------
// The table on the wire (the committed JSON file): one validator.

const numOrNullAt = (v: unknown, where: string): number | null => {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new Error(`${where} must be a finite number or null`);
  return v;
};

function parseClaim(v: unknown, where: string): ClaimEvidence {
  const o = record(v, where);
  const id = str(o, 'id', where);
  const sign = num(o, 'sign', where);
  if (sign !== 1 && sign !== -1) throw new Error(`${where}.sign must be 1 or -1, got ${sign}`);
  const holds = o.holds;
  if (typeof holds !== 'boolean') throw new Error(`${where}.holds must be a boolean`);
  return {
    id,
    metric: str(o, 'metric', where),
    arm: str(o, 'arm', where),
    control: str(o, 'control', where),
    statistic: oneOf(o, 'statistic', where, ['change', 'mean'] as const),
    sign,
    differences: list(o, 'differences', where).map((d, i) => numOrNullAt(d, `${where}.differences[${i}]`)),
    mean: numOrNullAt(o.mean, `${where}.mean`),
    lo: numOrNullAt(o.lo, `${where}.lo`),
    hi: numOrNullAt(o.hi, `${where}.hi`),
    agree: num(o, 'agree', where),
    holds,
  };
}

function parseEntry(v: unknown, where: string): PresetEvidenceEntry {
  const o = record(v, where);
  const ck = record(o.checkpoint, `${where}.checkpoint`);
  const sha256 = str(ck, 'sha256', `${where}.checkpoint`);
  if (!/^[0-9a-f]{64}$/.test(sha256))
    throw new Error(`${where}.checkpoint.sha256 must be 64 lowercase hex digits, got '${sha256}'`);
  const seeds = list(o, 'seeds', where).map((s, i) => {
    if (typeof s !== 'number' || !Number.isInteger(s))
      throw new Error(`${where}.seeds[${i}] must be an integer`);
    return s;
  });
  const claims = list(o, 'claims', where).map((c, i) => parseClaim(c, `${where}.claims[${i}]`));
  for (const c of claims)
    if (c.differences.length !== seeds.length)
      throw new Error(
        `${where}: claim ${c.id} has ${c.differences.length} differences for ${seeds.length} seeds`,
      );
  return {
    harness: str(o, 'harness', where),
    checkpoint: { path: str(ck, 'path', `${where}.checkpoint`), sha256 },
    seeds,
    steps: num(o, 'steps', where),
    command: str(o, 'command', where),
    claims,
  };
}

/** The evidence table from its JSON value; every field is checked and a bad one is named. */
export function parsePresetEvidence(v: unknown, where = 'preset evidence'): PresetEvidence {
  const o: WireRecord = record(v, where);
  const presets = record(o.presets, `${where}.presets`);
  const out: Record<string, PresetEvidenceEntry> = {};
  for (const [slug, e] of Object.entries(presets)) out[slug] = parseEntry(e, `${where}.presets.${slug}`);
  return { presets: out };
}

// ---------------------------------------------------------------------------------------------------------
// The texts.

const fmt = (x: number | null) =>
  x === null
    ? '–'
    : Math.abs(x) >= 100
      ? x.toFixed(0)
      : Math.abs(x) >= 1e-3 || x === 0
        ? x.toPrecision(3)
        : x.toExponential(1);

const seedRange = (seeds: number[]) => {
  const sorted = [...seeds].sort((a, b) => a - b);
  const contiguous = sorted.every((s, i) => i === 0 || s === sorted[i - 1] + 1);
  return contiguous && sorted.length > 2 ? `${sorted[0]}–${sorted[sorted.length - 1]}` : sorted.join(', ');
};

/** One claim's sentence from its evidence (what was measured, and whether it holds). */
export function claimSentence(claim: PresetClaim, entry: PresetEvidenceEntry): string {
  const e = entry.claims.find((c) => c.id === claim.id);
  if (
    !e ||
    e.metric !== claim.metric ||
    e.arm !== claim.arm ||
    e.control !== claim.control ||
    e.sign !== claim.sign
  )
    return `Claim “${claim.text}”: not yet measured (the evidence table has no entry for it as stated).`;
  const n = e.differences.length;
  const stat = claim.statistic === 'change' ? 'change over the run' : 'mean over the steps';
  const verdict = e.holds
    ? 'HOLDS'
    : n < MIN_SEEDS
      ? `NOT established (only ${n} seed${n === 1 ? '' : 's'} measured, ${MIN_SEEDS} needed)`
      : 'does NOT hold';
  const ci = e.lo !== null && e.hi !== null ? `, 95% interval [${fmt(e.lo)}, ${fmt(e.hi)}]` : '';
  return (
    `Claim “${claim.text}” ${verdict}: ${claim.arm} − ${claim.control}, ${stat} of \`${claim.metric}\`, ` +
    `mean ${fmt(e.mean)}${ci}, expected sign on ${e.agree} of ${n} seeds ` +
    `(seeds ${seedRange(entry.seeds)}; ${entry.steps} step${entry.steps === 1 ? '' : 's'}; per seed ${e.differences.map(fmt).join(', ')}).`
  );
}

/**
 * The claims' paragraph of a preset: derived from its evidence entry, or "not yet measured on the current
 * checkpoint" when the recorded checkpoint hash differs from `currentSha256` (when the caller knows it).
 */
export function claimsText(
  claims: readonly PresetClaim[],
  entry: PresetEvidenceEntry | undefined,
  currentSha256?: string,
): string {
  if (claims.length === 0) return '';
  if (!entry) return 'The claims are not yet measured (`npm run bench:presets`).';
  if (currentSha256 !== undefined && currentSha256 !== entry.checkpoint.sha256)
    return (
      `The claims are not yet measured on the current checkpoint (\`${entry.checkpoint.path}\` is ` +
      `sha256 ${currentSha256.slice(0, 12)}…; the table was measured on ${entry.checkpoint.sha256.slice(0, 12)}…; ` +
      'rerun `npm run bench:presets`).'
    );
  const sentences = claims.map((c) => claimSentence(c, entry));
  return `${sentences.join(' ')} Measured by \`${entry.command}\` on \`${entry.checkpoint.path}\` (sha256 ${entry.checkpoint.sha256.slice(0, 12)}…).`;
}
