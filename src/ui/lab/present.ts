/**
 * How the page presents a computed result: the weight sign convention (core's registry), whether what is on screen
 * is stale, what changed since the previous result, and why weights are zero when they are. Pure functions plus
 * one hook; the numbers themselves all come from core's trainer view.
 */
import { getAdvEstimator } from '../../core/algos/advantage';
import { TRAINER_OPTIONS, type TrainerOptions } from '../../core/pipeline/options';
import { getWeightSign, type WeightSign } from '../../core/pipeline/sign';
import type { TraceBatch } from '../../core/trace/types';
import { useView } from '../store';
import type { ComputeOptions, ComputeResult } from './pipeline';

export function useWeightSign(): WeightSign {
  return getWeightSign(useView((s) => s.sign));
}

/** The result on screen was computed for other options than the ones last asked for. */
export function isStale(requested: ComputeOptions | null, shown: ComputeOptions | null): boolean {
  return requested !== null && shown !== null && JSON.stringify(requested) !== JSON.stringify(shown);
}

export interface OptionChange {
  label: string;
  from: string;
  to: string;
}

const show = (v: unknown) => (v === null ? 'null' : String(v));

/** The options that differ between two results, with core's labels (registry order). */
export function changedOptions(prev: TrainerOptions, cur: TrainerOptions): OptionChange[] {
  const out: OptionChange[] = [];
  for (const spec of TRAINER_OPTIONS)
    if (prev[spec.name] !== cur[spec.name])
      out.push({ label: spec.label, from: show(prev[spec.name]), to: show(cur[spec.name]) });
  return out;
}

export function describeChanges(changes: OptionChange[]): string {
  return changes.map((c) => `${c.label.toLowerCase()} ${c.from} → ${c.to}`).join(', ');
}

export interface GroupRewards {
  /** trained rollouts of the group */
  rollouts: number[];
  /** their rewards as the trainer sees them (a missing one is reward_fillna_value) */
  rewards: number[];
  /** every trained rollout of the group got the same reward */
  equal: boolean;
}

/** Per group key of the result: which trained rollouts it holds and whether their rewards are all equal. */
export function groupRewards(
  trace: TraceBatch,
  res: ComputeResult,
  fillna: number,
): Map<string, GroupRewards> {
  const seen = new Set<number>();
  const out = new Map<string, GroupRewards>();
  const { batch } = res;
  for (let r = 0; r < batch.nRows; r++) {
    if (res.rowStatus[r] !== 0) continue;
    const ri = batch.rowRollout[r];
    if (seen.has(ri)) continue;
    seen.add(ri);
    const key = batch.dataIds[r];
    const g = out.get(key) ?? { rollouts: [], rewards: [], equal: true };
    const reward = trace.rollouts[ri]?.finalReward ?? fillna;
    if (g.rewards.length > 0 && reward !== g.rewards[0]) g.equal = false;
    g.rollouts.push(ri);
    g.rewards.push(reward);
    out.set(key, g);
  }
  return out;
}

/** Whether every one of the result's per-rollout weights is 0 (and there are trained rows at all). */
export function allWeightsZero(res: ComputeResult): boolean {
  if (res.trainerCounters['training/n_sample_trained'] === 0) return false;
  for (const w of res.rolloutWeight) if (w !== 0) return false;
  return true;
}

const fmtReward = (r: number) => String(Math.round(r * 1000) / 1000);

/** Why a group's weights are all 0, when its rollouts' equal rewards are the reason; else null. */
export function equalRewardReason(g: GroupRewards | undefined, o: TrainerOptions): string | null {
  if (!g?.equal || g.rollouts.length < 2) return null;
  return `its ${g.rollouts.length} rollouts all got reward ${fmtReward(g.rewards[0])}, so ${o.advEstimator} gives each the advantage 0`;
}

/**
 * Why every weight on screen is 0, when they all are: the usual case is groups whose rollouts all got the same
 * reward (a group-relative estimator then has nothing to prefer). Null when some weight is not 0.
 */
export function zeroWeightsReason(trace: TraceBatch, res: ComputeResult, o: TrainerOptions): string | null {
  if (!allWeightsZero(res)) return null;
  const groups = groupRewards(trace, res, o.rewardFillnaValue);
  const est = getAdvEstimator(o.advEstimator);
  const n = groups.size;
  const equal = [...groups.values()].filter((g) => g.equal && g.rollouts.length > 1).length;
  if (n > 0 && equal === n) {
    const rewards = [...new Set([...groups.values()].map((g) => fmtReward(g.rewards[0])))];
    return (
      `every weight is 0: in each of the ${n} group${n === 1 ? '' : 's'} all rollouts got the same reward ` +
      `(${rewards.slice(0, 4).join(', ')}${rewards.length > 4 ? ', …' : ''}), so ${est.name} (${est.label}) ` +
      'gives every token the advantage 0: there is nothing to prefer within a group. Weights appear where a ' +
      "group's rollouts got different rewards."
    );
  }
  return `every weight is 0: ${est.name} gives every trained token the advantage 0 on this batch.`;
}
