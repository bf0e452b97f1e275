/**
 * The weight differences between two settings of the trainer on ONE trace (`lab analyze --diff-reference STACK`):
 * per token, per call and per rollout, ∂L/∂logπ under each side's selected loss mode, largest |difference| first,
 * each attributed to the settings whose change causes it. Attribution switches one changed setting at a time
 * (side A with only that setting taken from B): a token, call or rollout is attributed to every setting whose
 * switch alone moves it. A change of `lab.reference_stack` is named by the stack's listed changes that apply to
 * these settings (algos/stacks.ts), each with the upstream change that made it.
 */
import {
  getReferenceStack,
  listReferenceStacks,
  type ReferenceStackName,
  type StackChange,
} from './algos/stacks';
import type { TrainingBatch } from './batch/types';
import {
  resolveTrainerOptions,
  settingsOf,
  TRAINER_OPTIONS,
  TrainerOptionError,
  type TrainerOptions,
  type TrainerSettings,
} from './pipeline/options';
import { callWeights, rowsOfRollouts } from './pipeline/perCall';
import { computeTrainerView, type TrainerView } from './pipeline/trainer';
import type { ChatTokenizer } from './tokenize/tokenizer';
import type { Rollout } from './trace/types';

/** One changed setting and, for the reference stack, the changes of the other stack that apply. */
export interface DiffCause {
  key: string;
  from: unknown;
  to: unknown;
  /** for `lab.reference_stack`: the listed changes whose settings are in effect here */
  changes?: StackChange[];
}

export interface TokenDiff {
  rolloutId: string;
  row: number;
  /** position in the row's response */
  position: number;
  call: number;
  /** the token id there */
  tokenId: number;
  a: number;
  b: number;
  delta: number;
  /** keys of the causes that move it */
  causes: string[];
}

export interface CallDiff {
  rolloutId: string;
  call: number;
  a: number;
  b: number;
  delta: number;
  causes: string[];
}

export interface RolloutDiff {
  rolloutId: string;
  a: number;
  b: number;
  delta: number;
  causes: string[];
}

export interface WeightDiff {
  /** the two sides' stack labels and loss modes */
  a: { reference: string; lossMode: string };
  b: { reference: string; lossMode: string };
  causes: DiffCause[];
  /** null when the two sides build different rows (a sample-building setting changed): no per-token pairing */
  tokens: TokenDiff[] | null;
  calls: CallDiff[];
  rollouts: RolloutDiff[];
  /** how many tokens / calls / rollouts differ at all (the lists are cut to `limit`) */
  counts: { tokens: number | null; calls: number; rollouts: number };
}

/** Does a listed stack change touch a batch under these settings? */
export function changeApplies(c: StackChange, s: TrainerSettings): boolean {
  switch (c.id) {
    case 'reinforce_returns_through_observations':
      return s.advEstimator === 'reinforce_plus_plus';
    case 'token_sum_aggregation':
      return s.lossAggMode === 'token-sum';
    case 'dro_policy_loss':
      return s.policyLossMode === 'dro';
    case 'is_seq_fraction_on_raw_weights':
      return s.rolloutIs !== null;
    case 'rs_k1_threshold_order':
      return s.rolloutRs !== null && /k1/.test(s.rolloutRs);
    default:
      throw new Error(`changeApplies: no rule for stack change '${c.id}'`);
  }
}

function sameRows(x: TrainingBatch, y: TrainingBatch): boolean {
  if (x.nRows !== y.nRows || x.offsets.length !== y.offsets.length) return false;
  for (let i = 0; i < x.offsets.length; i++) if (x.offsets[i] !== y.offsets[i]) return false;
  for (let r = 0; r < x.nRows; r++) if (x.rowRollout[r] !== y.rowRollout[r]) return false;
  return true;
}

/** Per-call weights of every rollout (rollout × call), under a view's selected mode. */
function callTable(view: TrainerView, rollouts: Rollout[]): Float64Array[] {
  const rows = rowsOfRollouts(view, rollouts.length);
  const sel = view.selected;
  const input = {
    batch: view.batch,
    trainPosition: view.trainPosition,
    responseMask: view.responseMask,
    weights: sel.weights,
    advantages: sel.advantages,
  };
  return rollouts.map((r, i) => callWeights(input, i, r.calls.length, rows[i]).weight);
}

const moved = (x: number, y: number) => !Object.is(x, y) && Math.abs(x - y) > 0;

/**
 * The differences between side A (`a`) and side B (`b`) on `rollouts`; `limit` entries per list (default 20).
 * Both sides are full trainer options (resolveTrainerOptions); a side the trainer cannot run raises its error.
 */
export function diffWeights(
  rollouts: Rollout[],
  a: TrainerOptions,
  b: TrainerOptions,
  extras: { tokenizer?: ChatTokenizer; limit?: number } = {},
): WeightDiff {
  const limit = extras.limit ?? 20;
  const view = (o: TrainerSettings) =>
    computeTrainerView({
      rollouts,
      options: resolveTrainerOptions(settingsOf(o)),
      tokenizer: extras.tokenizer,
    });
  const va = view(a);
  const vb = view(b);
  const changed = TRAINER_OPTIONS.filter((s) => JSON.stringify(a[s.name]) !== JSON.stringify(b[s.name]));
  const causes: DiffCause[] = changed.map((s) => {
    const c: DiffCause = { key: s.key, from: a[s.name], to: b[s.name] };
    if (s.name === 'referenceStack') {
      // the listed changes are those of the non-default stack against the default one
      const other = getReferenceStack(a.referenceStack).changes.length ? a : b;
      c.changes = getReferenceStack(other.referenceStack).changes.filter((x) => changeApplies(x, other));
    }
    return c;
  });
  // one setting switched at a time
  const single = changed.map((s) =>
    changed.length === 1 ? vb : view({ ...settingsOf(a), [s.name]: b[s.name] }),
  );

  const paired = sameRows(va.batch, vb.batch);
  let tokens: TokenDiff[] | null = null;
  let nTokens: number | null = null;
  if (paired) {
    const wa = va.selected.weights;
    const wb = vb.selected.weights;
    const batch = va.batch;
    const all: TokenDiff[] = [];
    for (let r = 0; r < batch.nRows; r++)
      for (let p = batch.offsets[r]; p < batch.offsets[r + 1]; p++) {
        if (!moved(wa[p], wb[p])) continue;
        all.push({
          rolloutId: rollouts[batch.rowRollout[r]].rolloutId,
          row: r,
          position: p - batch.offsets[r],
          call: batch.tokenCall[p],
          tokenId: batch.responseIds[p],
          a: wa[p],
          b: wb[p],
          delta: wb[p] - wa[p],
          causes: changed
            .filter((_, k) => sameRows(single[k].batch, batch) && moved(wa[p], single[k].selected.weights[p]))
            .map((s) => s.key),
        });
      }
    nTokens = all.length;
    tokens = all.sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta)).slice(0, limit);
  }

  const ca = callTable(va, rollouts);
  const cb = callTable(vb, rollouts);
  const cs = single.map((v) => callTable(v, rollouts));
  const calls: CallDiff[] = [];
  rollouts.forEach((ro, i) => {
    for (let c = 0; c < ro.calls.length; c++)
      if (moved(ca[i][c], cb[i][c]))
        calls.push({
          rolloutId: ro.rolloutId,
          call: c,
          a: ca[i][c],
          b: cb[i][c],
          delta: cb[i][c] - ca[i][c],
          causes: changed.filter((_, k) => moved(ca[i][c], cs[k][i][c])).map((s) => s.key),
        });
  });
  const rolloutDiffs: RolloutDiff[] = [];
  rollouts.forEach((ro, i) => {
    const x = va.selected.rolloutSums[i];
    const y = vb.selected.rolloutSums[i];
    if (moved(x, y))
      rolloutDiffs.push({
        rolloutId: ro.rolloutId,
        a: x,
        b: y,
        delta: y - x,
        causes: changed.filter((_, k) => moved(x, single[k].selected.rolloutSums[i])).map((s) => s.key),
      });
  });
  const byDelta = <T extends { delta: number }>(l: T[]) =>
    l.sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta)).slice(0, limit);
  return {
    a: { reference: va.reference.label, lossMode: va.selected.name },
    b: { reference: vb.reference.label, lossMode: vb.selected.name },
    causes,
    tokens,
    calls: byDelta(calls),
    rollouts: byDelta(rolloutDiffs),
    counts: { tokens: nTokens, calls: calls.length, rollouts: rolloutDiffs.length },
  };
}

/** The other reference stack of a two-stack registry (what the page's diff compares with). */
export function otherReferenceStack(stack: ReferenceStackName): ReferenceStackName {
  const others = listReferenceStacks().filter((s) => s.name !== stack);
  if (others.length !== 1)
    throw new Error(
      `otherReferenceStack: ${stack} has ${others.length} other stacks; name the one to compare with`,
    );
  return others[0].name;
}

/**
 * The diff of options `a` against the same settings on reference stack `stack`; `refused` (with the option's
 * message) when a setting of `a` does not exist on that stack (token-sum, dro on the default stack).
 */
export function diffAgainstStack(
  rollouts: Rollout[],
  a: TrainerOptions,
  stack: ReferenceStackName,
  extras: { tokenizer?: ChatTokenizer; limit?: number } = {},
): { diff: WeightDiff; refused: null } | { diff: null; refused: string } {
  getReferenceStack(stack);
  let b: TrainerOptions;
  try {
    b = resolveTrainerOptions({ ...settingsOf(a), referenceStack: stack });
  } catch (e) {
    if (e instanceof TrainerOptionError) return { diff: null, refused: e.message };
    throw e;
  }
  return { diff: diffWeights(rollouts, a, b, extras), refused: null };
}
