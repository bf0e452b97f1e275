/**
 * Outcome advantage estimators, keyed by verl's `AdvantageEstimator` names (verl 0.8.0
 * verl/trainer/ppo/core_algos.py, `register_adv_est`). Each one reads per-token `token_level_rewards` on CSR
 * response rows plus a per-row group id (verl's `uid`), and writes per-token advantages and returns.
 *
 * Arithmetic follows upstream's tensors in the rewards' dtype: float32, or bfloat16 on Agent Lightning's path
 * (its RolloutAdapter builds `token_level_scores` as a bf16 tensor, so every estimator runs in bf16 there).
 * Element-wise ops on tensors of the working dtype round their result to it (torch computes bf16 ops in float32
 * and rounds once); a scalar added to or subtracted from a bf16 tensor is rounded to bf16 first, one it multiplies
 * or divides by is not (torch's CPU kernels, measured on torch 2.9); reductions (`sum`, `mean`) accumulate in float32 and round once; `torch.std` is computed in
 * higher precision and rounded once; an op between 0-dim tensors of different float dtypes (a bf16 score and a
 * float32 `torch.tensor(0.0)`) runs in float32 and is rounded only when stored back. Sums over many tokens run in
 * double and are rounded once at the end (within float32 tolerance).
 */
import type { ResponseRows } from '../batch/types';
import { createRegistry } from '../registry';
import { type Grouping, groupMembers } from './groups';
import { type FloatDType, rounder, UpstreamError } from './numeric';
import { type ReferenceStackName, semanticsOf } from './stacks';

export interface AdvantageInput {
  rows: ResponseRows;
  /** per token, aligned with rows.mask */
  tokenLevelRewards: Float32Array;
  /** per row group (uid) */
  groups: Grouping;
  /** per row, ReMax's greedy-baseline reward */
  rewardBaselines?: Float32Array;
}

export interface AdvantageOptions {
  /** GRPO / pass@k: divide by the group std (verl `algorithm.norm_adv_by_std_in_grpo`, default true) */
  normAdvByStd?: boolean;
  /** default 1e-6 (upstream's default; the trainer never passes another) */
  epsilon?: number;
  /** REINFORCE++ discount (verl `algorithm.gamma`), default 1 */
  gamma?: number;
  /** dtype of token_level_rewards upstream; bf16 on Agent Lightning's path. Default float32. */
  dtype?: FloatDType;
  /** the reference stack (stacks.ts) whose estimator semantics apply; default the default stack */
  stack?: ReferenceStackName;
}

export interface AdvantageOutput {
  advantages: Float32Array;
  returns: Float32Array;
  /** the dtype of upstream's advantages tensor (float32 values are exact either way) */
  dtype: FloatDType;
}

/** An estimator option: the upstream config key, its field in AdvantageOptions and its default. */
export interface EstimatorOption {
  field: 'normAdvByStd' | 'gamma';
  /** upstream key, e.g. `algorithm.norm_adv_by_std_in_grpo` */
  key: string;
  default: boolean | number;
  help: string;
}

/** An input an estimator needs beyond per-token rewards and groups, and whether a recorded trace has it. */
export interface EstimatorInput {
  name: 'reward_baselines';
  /** why a trace cannot give it, shown in the page and in the CLI's error */
  unavailable: string;
}

export interface AdvEstimator {
  name: string;
  label: string;
  /** the formula, for docs and the page */
  formula: string;
  /** the same formula in TeX (the page typesets it; plain `formula` where absent) */
  tex?: string;
  /** upstream function */
  source: string;
  /** the options it reads, with upstream keys and defaults (the page's controls and the CLI's flags) */
  options: EstimatorOption[];
  /** inputs beyond rewards and groups */
  requires: EstimatorInput[];
  compute: (input: AdvantageInput, opts: AdvantageOptions) => AdvantageOutput;
  /**
   * Outcome estimators (one scalar per row, broadcast over the mask) also expose the per-row scalars, so that
   * callers holding one reward per row (rollout-level mode, effective weights) skip the per-token passes.
   */
  rowScalars?: (input: RowScoreInput, opts: AdvantageOptions) => Float64Array;
}

/** Per-row inputs of an outcome estimator: scores already in the working dtype. */
export interface RowScoreInput {
  scores: Float64Array;
  groups: Grouping;
  /** valid tokens per row (OPO's lengths) */
  lengths: () => ArrayLike<number>;
}

type EstimatorSpec = Omit<AdvEstimator, 'name' | 'compute' | 'requires'> & {
  compute?: AdvEstimator['compute'];
  requires?: EstimatorInput[];
};

const registry = createRegistry<AdvEstimator>('advantage estimator');

export function registerAdvEstimator(name: string, est: EstimatorSpec): void {
  const rowScalars = est.rowScalars;
  let compute = est.compute;
  if (!compute) {
    if (!rowScalars) throw new Error(`advantage estimator '${name}' needs compute or rowScalars`);
    compute = ({ rows, tokenLevelRewards, groups }, opts) => {
      const dtype = opts.dtype ?? 'float32';
      const scores = rowScores(rows, tokenLevelRewards, rounder(dtype));
      const adv = rowScalars({ scores, groups, lengths: () => maskCounts(rows) }, opts);
      return same(broadcastRows(rows, adv), dtype);
    };
  }
  registry.register(name, { ...est, requires: est.requires ?? [], name, compute });
}

function maskCounts(rows: ResponseRows): Int32Array {
  const out = new Int32Array(rows.nRows);
  for (let i = 0; i < rows.nRows; i++) {
    let c = 0;
    for (let t = rows.offsets[i]; t < rows.offsets[i + 1]; t++) c += rows.mask[t];
    out[i] = c;
  }
  return out;
}

export function getAdvEstimator(name: string): AdvEstimator {
  return registry.get(name);
}

export function listAdvEstimators(): AdvEstimator[] {
  return registry.list();
}

/** Why an estimator cannot run on a recorded trace (an input it needs that traces do not hold), or null. */
export function traceUnavailable(est: AdvEstimator): string | null {
  return est.requires.length ? est.requires.map((r) => r.unavailable).join('; ') : null;
}

export function computeAdvantage(
  name: string,
  input: AdvantageInput,
  opts: AdvantageOptions = {},
): AdvantageOutput {
  const { rows, tokenLevelRewards, groups } = input;
  const n = rows.offsets[rows.nRows];
  if (tokenLevelRewards.length !== n)
    throw new Error(`tokenLevelRewards has ${tokenLevelRewards.length} values but the rows hold ${n} tokens`);
  if (rows.mask.length !== n)
    throw new Error(`mask has ${rows.mask.length} values but the rows hold ${n} tokens`);
  if (groups.group.length !== rows.nRows)
    throw new Error(`groups cover ${groups.group.length} rows but the batch has ${rows.nRows}`);
  return getAdvEstimator(name).compute(input, opts);
}

// ---------- shared pieces ----------

const f = Math.fround;

/** `token_level_rewards.sum(dim=-1)`: float32 accumulation, stored in the working dtype. */
function rowScores(rows: ResponseRows, r: Float32Array, R: (x: number) => number): Float64Array {
  const out = new Float64Array(rows.nRows);
  const off = rows.offsets;
  for (let i = 0; i < rows.nRows; i++) {
    let s = 0;
    for (let t = off[i]; t < off[i + 1]; t++) s = f(s + r[t]);
    out[i] = R(s);
  }
  return out;
}

/** `torch.mean(torch.stack(group))`: a float32 sum, one division, stored in the working dtype. */
function groupMean(
  scores: Float64Array,
  members: Int32Array,
  a: number,
  b: number,
  R: (x: number) => number,
) {
  let s = 0;
  for (let k = a; k < b; k++) s = f(s + scores[members[k]]);
  return R(s / (b - a));
}

/** Unbiased std (`torch.std`), computed in double and stored once in the working dtype. */
function groupStd(scores: Float64Array, members: Int32Array, a: number, b: number, R: (x: number) => number) {
  const n = b - a;
  let m = 0;
  for (let k = a; k < b; k++) m += scores[members[k]];
  m /= n;
  let v = 0;
  for (let k = a; k < b; k++) {
    const d = scores[members[k]] - m;
    v += d * d;
  }
  return R(Math.sqrt(v / (n - 1)));
}

/** `scores.unsqueeze(-1) * response_mask`: one scalar per row, broadcast over its mask. */
function broadcastRows(rows: ResponseRows, perRow: Float64Array): Float32Array {
  const out = new Float32Array(rows.offsets[rows.nRows]);
  const { offsets: off, mask } = rows;
  for (let i = 0; i < rows.nRows; i++) {
    const v = perRow[i];
    for (let t = off[i]; t < off[i + 1]; t++) out[t] = mask[t] ? v : v * 0; // v*0 keeps NaN as torch does
  }
  return out;
}

/**
 * `verl_F.masked_whiten(values, mask) * mask` with `values` in the working dtype: masked_mean is a masked sum
 * stored in that dtype divided by the float32 token count (+1e-8), so the mean is float32; centring (which
 * rounds the mean to the dtype first, a subtraction) and the scaling by rsqrt(var + 1e-8) are ops on the
 * values' tensor, rounded to its dtype; the variance (the masked mean of the squared centred values, times the
 * Bessel factor) stays float32. Raises as `masked_var` does when fewer than two tokens are valid.
 */
function maskedWhitenTimesMask(
  values: Float32Array,
  mask: Uint8Array,
  R: (x: number) => number,
): Float32Array {
  let cnt = 0;
  let sum = 0;
  for (let t = 0; t < values.length; t++)
    if (mask[t]) {
      cnt++;
      sum += values[t];
    }
  const den = f(cnt + 1e-8);
  const mean = R(f(R(sum) / den));
  let ss = 0;
  for (let t = 0; t < values.length; t++)
    if (mask[t]) {
      const d = R(values[t] - mean);
      ss += R(d * d);
    }
  if (cnt === 0) throw new UpstreamError('ValueError', 'At least one element in the mask has to be 1.');
  if (cnt === 1)
    throw new UpstreamError('ValueError', 'The sum of the mask is one, which can cause a division by zero.');
  const variance = f(f(R(ss) / den) * f(cnt / (cnt - 1)));
  const rs = f(1 / Math.sqrt(f(variance + 1e-8)));
  const out = new Float32Array(values.length);
  for (let t = 0; t < values.length; t++) out[t] = mask[t] ? R(R(values[t] - mean) * rs) : 0;
  return out;
}

function same(a: Float32Array, dtype: FloatDType): AdvantageOutput {
  return { advantages: a, returns: a, dtype };
}

const NORM_STD: EstimatorOption = {
  field: 'normAdvByStd',
  key: 'algorithm.norm_adv_by_std_in_grpo',
  default: true,
  help: 'divide by the group std (false: Dr. GRPO)',
};
const GAMMA: EstimatorOption = {
  field: 'gamma',
  key: 'algorithm.gamma',
  default: 1,
  help: 'discount of the running return',
};

/**
 * Row advantages filled group by group: `fill` writes `adv` at the rows members[a..b) of group g (the rows of
 * a group are members[start[g]..start[g+1]) in groupMembers' order); rows it leaves alone stay 0.
 */
function byGroup(
  scores: ArrayLike<number>,
  groups: Grouping,
  fill: (adv: Float64Array, members: Int32Array, a: number, b: number, g: number) => void,
): Float64Array {
  const { start, members } = groupMembers(groups);
  const adv = new Float64Array(scores.length);
  for (let g = 0; g < groups.nGroups; g++) fill(adv, members, start[g], start[g + 1], g);
  return adv;
}

// ---------- estimators ----------

registerAdvEstimator('grpo', {
  label: 'GRPO',
  formula:
    'A_i = (R_i − mean_g R) / (std_g R + ε) (or R_i − mean_g R without std), broadcast over the response mask; a singleton group uses mean 0, std 1',
  tex: 'A_i = \\dfrac{R_i - \\operatorname{mean}_g R}{\\operatorname{std}_g R + \\varepsilon}\\quad\\text{or, without std,}\\quad A_i = R_i - \\operatorname{mean}_g R',
  source: 'verl core_algos.compute_grpo_outcome_advantage',
  options: [NORM_STD],
  rowScalars({ scores, groups }, opts) {
    const R = rounder(opts.dtype ?? 'float32');
    const norm = opts.normAdvByStd ?? true;
    const eps = opts.epsilon ?? 1e-6;
    return byGroup(scores, groups, (adv, members, a, b) => {
      if (b - a === 1) {
        // torch.tensor(0.0)/(1.0) are float32 scalars: the op runs in float32 and is stored in dtype once.
        const i = members[a];
        adv[i] = norm ? R(f(scores[i] / f(1 + eps))) : R(scores[i]);
        return;
      }
      const mean = groupMean(scores, members, a, b, R);
      const std = groupStd(scores, members, a, b, R);
      const den = R(std + R(eps));
      for (let k = a; k < b; k++) {
        const i = members[k];
        const c = R(scores[i] - mean);
        adv[i] = norm ? R(c / den) : c;
      }
    });
  },
});

registerAdvEstimator('rloo', {
  label: 'RLOO',
  formula:
    'A_i = R_i·n/(n−1) − mean_g R·n/(n−1) = R_i − mean_{j≠i} R_j for groups of n > 1; R_i for singletons',
  tex: 'A_i = R_i - \\dfrac{1}{n-1}\\sum_{j \\in g,\\, j \\ne i} R_j',
  source: 'verl core_algos.compute_rloo_outcome_advantage',
  options: [],
  rowScalars({ scores, groups }, opts) {
    const R = rounder(opts.dtype ?? 'float32');
    return byGroup(scores, groups, (adv, members, a, b) => {
      const n = b - a;
      if (n === 1) {
        adv[members[a]] = scores[members[a]];
        return;
      }
      const mean = groupMean(scores, members, a, b, R);
      const base = R(R(mean * n) / (n - 1));
      for (let k = a; k < b; k++) {
        const i = members[k];
        adv[i] = R(R(R(scores[i] * n) / (n - 1)) - base);
      }
    });
  },
});

registerAdvEstimator('reinforce_plus_plus_baseline', {
  label: 'REINFORCE++ (baseline)',
  formula: 'A = whiten_batch((R_i − mean_g R)·m) · m  (mean over the group, whitening over all valid tokens)',
  tex: 'A = \\operatorname{whiten}_{\\text{batch}}\\!\\big((R_i - \\operatorname{mean}_g R)\\, m\\big)\\, m',
  source: 'verl core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage',
  options: [],
  compute({ rows, tokenLevelRewards, groups }, opts) {
    const dtype = opts.dtype ?? 'float32';
    const R = rounder(dtype);
    const scores = rowScores(rows, tokenLevelRewards, R);
    const { start, members } = groupMembers(groups);
    const centred = new Float64Array(rows.nRows);
    for (let g = 0; g < groups.nGroups; g++) {
      const a = start[g];
      const b = start[g + 1];
      // a singleton's mean is the float32 torch.tensor(0.0): the difference is the score itself
      const mean = b - a === 1 ? 0 : groupMean(scores, members, a, b, R);
      for (let k = a; k < b; k++) centred[members[k]] = R(scores[members[k]] - mean);
    }
    return same(maskedWhitenTimesMask(broadcastRows(rows, centred), rows.mask, R), dtype);
  },
});

registerAdvEstimator('opo', {
  label: 'OPO',
  formula: 'A_i = R_i − Σ_g(|o_j|·R_j)/Σ_g|o_j|  (length-weighted group baseline; 0 baseline for singletons)',
  tex: 'A_i = R_i - \\dfrac{\\sum_{j \\in g} |o_j|\\, R_j}{\\sum_{j \\in g} |o_j|}',
  source: 'verl core_algos.compute_opo_outcome_advantage',
  options: [],
  rowScalars({ scores, groups, lengths }, opts) {
    const R = rounder(opts.dtype ?? 'float32');
    const len = lengths();
    return byGroup(scores, groups, (adv, members, a, b) => {
      if (b - a === 1) {
        adv[members[a]] = scores[members[a]]; // minus the float32 torch.tensor(0.0)
        return;
      }
      // (len_tensor * score_tensor).sum() / len_tensor.sum(): products in dtype, a float32 sum stored in dtype,
      // then a division by the integer total stored in dtype
      let num = 0;
      let den = 0;
      for (let k = a; k < b; k++) {
        num = f(num + R(len[members[k]] * scores[members[k]]));
        den += len[members[k]];
      }
      const bsl = R(R(num) / den);
      for (let k = a; k < b; k++) adv[members[k]] = R(scores[members[k]] - bsl);
    });
  },
});

registerAdvEstimator('gpg', {
  label: 'GPG',
  formula: 'A_i = α·(R_i − mean_g R) with α = B / max(1, #{i: R_i ≠ 0}); singleton mean 0',
  tex: 'A_i = \\alpha\\,(R_i - \\operatorname{mean}_g R),\\quad \\alpha = \\dfrac{B}{\\max(1,\\ |\\{i : R_i \\ne 0\\}|)}',
  source: 'verl core_algos.compute_gpg_outcome_advantage',
  options: [],
  rowScalars({ scores, groups }, opts) {
    const R = rounder(opts.dtype ?? 'float32');
    let nz = 0;
    for (let i = 0; i < scores.length; i++) if (scores[i] !== 0) nz++;
    // bsz / count.clamp(min=1) is a float32 0-dim tensor, computed by Tensor.__rtruediv__ as
    // reciprocal(count) · bsz; α·(·) runs in float32 and is stored in dtype
    const alpha = f(f(1 / Math.max(1, nz)) * scores.length);
    return byGroup(scores, groups, (adv, members, a, b) => {
      if (b - a === 1) {
        adv[members[a]] = R(f(alpha * scores[members[a]]));
        return;
      }
      const mean = groupMean(scores, members, a, b, R);
      for (let k = a; k < b; k++) adv[members[k]] = R(f(alpha * R(scores[members[k]] - mean)));
    });
  },
});

registerAdvEstimator('grpo_passk', {
  label: 'GRPO pass@k',
  formula:
    'only the best row of each group gets A = (R_max − R_second) [/ (std_g R + ε)]; every other row gets 0; groups need ≥ 2 rows',
  tex: 'A_{i^\\ast} = \\dfrac{R_{(1)} - R_{(2)}}{\\operatorname{std}_g R + \\varepsilon}\\ \\text{for the best row } i^\\ast\\!,\\quad A_i = 0\\ \\text{otherwise}',
  source: 'verl core_algos.compute_grpo_passk_outcome_advantage',
  options: [NORM_STD],
  rowScalars({ scores, groups }, opts) {
    const R = rounder(opts.dtype ?? 'float32');
    const norm = opts.normAdvByStd ?? true;
    const eps = opts.epsilon ?? 1e-6;
    return byGroup(scores, groups, (adv, members, a, b, g) => {
      if (b - a < 2)
        throw new UpstreamError(
          'ValueError',
          `Pass@k requires at least 2 samples per group. Got ${b - a} for group ${groups.keys[g]}.`,
        );
      // torch.topk(rewards, 2): the max (ties: any of them, the difference is then 0) and the runner-up.
      let best = members[a];
      for (let k = a + 1; k < b; k++) if (scores[members[k]] > scores[best]) best = members[k];
      const first = scores[best];
      let second = Number.NEGATIVE_INFINITY;
      for (let k = a; k < b; k++)
        if (members[k] !== best && scores[members[k]] > second) second = scores[members[k]];
      let v = R(first - second);
      if (norm) v = R(v / R(groupStd(scores, members, a, b, R) + R(eps)));
      adv[best] = v;
    });
  },
});

registerAdvEstimator('reinforce_plus_plus', {
  label: 'REINFORCE++',
  formula:
    'G_t = r_t + γ·G_{t+1}·m_{t+1} (verl 0.8.0: the running return restarts at every mask-0 position; verl 0.9.0: it is carried through mask-0 spans and G = 0 there), A = whiten_batch(G)·m; returns = G',
  tex: 'G_t = r_t + \\gamma\\, G_{t+1}\\, m_{t+1},\\quad A = \\operatorname{whiten}_{\\text{batch}}(G)\\, m',
  source: 'verl core_algos.compute_reinforce_plus_plus_outcome_advantage',
  options: [GAMMA],
  compute({ rows, tokenLevelRewards }, opts) {
    const dtype = opts.dtype ?? 'float32';
    const R = rounder(dtype);
    const gamma = opts.gamma ?? 1;
    const g32 = f(gamma);
    const carry = semanticsOf(opts.stack).reinforceReturnAtMask0 === 'carry';
    const { offsets: off, mask } = rows;
    const returns = new Float32Array(off[rows.nRows]);
    for (let i = 0; i < rows.nRows; i++) {
      let run = 0;
      for (let t = off[i + 1] - 1; t >= off[i]; t--) {
        const next = R(tokenLevelRewards[t] + R(g32 * run));
        if (carry) {
          // 0.9.0: returns = G·m; the running return moves only on valid tokens
          if (mask[t]) run = next;
          returns[t] = mask[t] ? next : 0;
        } else {
          returns[t] = next;
          run = mask[t] ? next : 0;
        }
      }
    }
    return { advantages: maskedWhitenTimesMask(returns, mask, R), returns, dtype };
  },
});

registerAdvEstimator('remax', {
  label: 'ReMax',
  formula: 'G_t = Σ_{s≥t} r_s·m_s,  A_t = G_t − b·m_t  (b = reward of the greedy baseline response)',
  tex: 'G_t = \\sum_{s \\ge t} r_s\\, m_s,\\quad A_t = G_t - b\\, m_t',
  source: 'verl core_algos.compute_remax_outcome_advantage',
  options: [],
  requires: [
    {
      name: 'reward_baselines',
      unavailable:
        "ReMax needs reward_baselines (the reward of a greedy decode of each prompt), which a recorded trace does not hold; Agent Lightning's trainer raises NotImplementedError for it",
    },
  ],
  compute({ rows, tokenLevelRewards, rewardBaselines }, opts) {
    if (!rewardBaselines) throw new Error('remax needs rewardBaselines (one per row)');
    if (rewardBaselines.length !== rows.nRows)
      throw new Error(
        `rewardBaselines has ${rewardBaselines.length} values but the batch has ${rows.nRows} rows`,
      );
    const R = rounder(opts.dtype ?? 'float32');
    const { offsets: off, mask } = rows;
    const returns = new Float32Array(off[rows.nRows]);
    const advantages = new Float32Array(off[rows.nRows]);
    for (let i = 0; i < rows.nRows; i++) {
      // cumsum accumulates in float32; each partial sum is stored in the rewards' dtype
      let run = 0;
      const b = rewardBaselines[i];
      for (let t = off[i + 1] - 1; t >= off[i]; t--) {
        run = f(run + (mask[t] ? tokenLevelRewards[t] : 0));
        returns[t] = R(run);
        // returns (dtype) − float32 baselines·mask: a float32 tensor
        advantages[t] = f(returns[t] - f(b * mask[t]));
      }
    }
    return { advantages, returns, dtype: 'float32' };
  },
});
