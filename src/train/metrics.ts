/**
 * Step metrics beyond verl's (ours are under `lab/`). The two log formats verl users' tools read (file logger,
 * console logger) are verlLog.ts's.
 */
import { retokenizeCall } from '../core/tokenize/retokenize';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { Rollout } from '../core/trace/types';
import { stripThink } from '../harness/toolParser';

export type Metrics = Record<string, number>;

/** The class of a failed rollout, from its reason (worker pool, proxy and harness messages). */
export function failureClass(error: string | undefined): string {
  const e = error ?? '';
  if (/timed out|did not start within/.test(e)) return 'timeout';
  if (/worker crashed|keep failing/.test(e)) return 'crash';
  if (/cancelled|pool clos|source is closed/.test(e)) return 'cancelled';
  if (/maximum context length|context/.test(e)) return 'context_overflow';
  if (/HTTP 429/.test(e)) return 'paused_too_long';
  if (/bad message|must be/.test(e)) return 'protocol';
  return 'harness_error';
}

/** Tool calls the policy made in a rollout (parsed by the proxy into tool_calls). */
export function toolCallsOf(r: Rollout): number {
  let n = 0;
  for (const c of r.calls) n += c.response?.message.tool_calls?.length ?? 0;
  return n;
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN;
}

/**
 * Ours: failures by class, calls and tool calls per rollout, staleness (policy versions behind `version`) per
 * call and per rollout, generated tokens.
 */
export function rolloutMetrics(rollouts: Rollout[], version: number, prefix = 'lab'): Metrics {
  const m: Metrics = {};
  const failed = rollouts.filter((r) => r.state === 'failed');
  m[`${prefix}/n_rollouts`] = rollouts.length;
  m[`${prefix}/n_failed_rollouts`] = failed.length;
  for (const r of failed) {
    const k = `${prefix}/rollout_failures/${failureClass(r.error)}`;
    m[k] = (m[k] ?? 0) + 1;
  }
  m[`${prefix}/calls_per_rollout`] = mean(rollouts.map((r) => r.calls.length));
  m[`${prefix}/tool_calls_per_rollout`] = mean(rollouts.map(toolCallsOf));
  const callStale: number[] = [];
  const rolloutStale: number[] = [];
  let versions = 0;
  let genTokens = 0;
  for (const r of rollouts) {
    let worst = 0;
    const seen = new Set<number>();
    for (const c of r.calls) {
      genTokens += c.responseTokenIds?.length ?? 0;
      const v = c.engine?.policyVersion;
      if (v === undefined) continue;
      seen.add(v);
      callStale.push(version - v);
      worst = Math.max(worst, version - v);
    }
    rolloutStale.push(worst);
    if (seen.size > 1) versions++;
  }
  m[`${prefix}/staleness/call_mean`] = mean(callStale);
  m[`${prefix}/staleness/call_max`] = callStale.length ? Math.max(...callStale) : Number.NaN;
  m[`${prefix}/staleness/rollout_mean`] = mean(rolloutStale);
  m[`${prefix}/n_rollouts_spanning_versions`] = versions;
  m[`${prefix}/gen_tokens`] = genTokens;
  Object.assign(m, offPolicyMetrics(rollouts, version));
  return m;
}

/**
 * verl 0.9's `training/off_policy/*` over the trained trajectories (rollouts with a versioned call):
 * `trajectory_staleness` = trained version − the newest version a trajectory used, `trajectory_staleness_worst` =
 * trained version − the oldest, `trajectory_spans` = versions from its oldest to its newest (1: one version).
 */
export function offPolicyMetrics(rollouts: Rollout[], version: number): Metrics {
  const st: number[] = [];
  const worst: number[] = [];
  const spans: number[] = [];
  for (const r of rollouts) {
    const vs = r.calls.map((c) => c.engine?.policyVersion).filter((v): v is number => v !== undefined);
    if (vs.length === 0) continue;
    const lo = Math.min(...vs);
    const hi = Math.max(...vs);
    st.push(version - hi);
    worst.push(version - lo);
    spans.push(hi - lo + 1);
  }
  const m: Metrics = {};
  const put = (name: string, xs: number[], stats: ('mean' | 'max' | 'min')[]) => {
    for (const s of stats)
      m[`training/off_policy/${name}/${s}`] = xs.length
        ? s === 'mean'
          ? mean(xs)
          : s === 'max'
            ? Math.max(...xs)
            : Math.min(...xs)
        : Number.NaN;
  };
  put('trajectory_staleness', st, ['mean', 'max', 'min']);
  put('trajectory_staleness_worst', worst, ['mean', 'max', 'min']);
  put('trajectory_spans', spans, ['mean', 'max']);
  return m;
}

/**
 * Fraction of calls whose chat template re-encoded (the `retokenize` token source) differs from the engine
 * ids: the drift a text-only trainer would train on.
 */
export function retokenizationMismatchRate(rollouts: Rollout[], tok: ChatTokenizer): number {
  let n = 0;
  let bad = 0;
  for (const r of rollouts)
    for (const c of r.calls) {
      if (!c.promptTokenIds || !c.responseTokenIds || !c.response) continue;
      const re = retokenizeCall(tok, c);
      if (!re) continue;
      n++;
      const same =
        re.promptIds.length === c.promptTokenIds.length &&
        re.responseIds.length === c.responseTokenIds.length &&
        re.promptIds.every((x, i) => x === (c.promptTokenIds as Int32Array)[i]) &&
        re.responseIds.every((x, i) => x === (c.responseTokenIds as Int32Array)[i]);
      if (!same) bad++;
    }
  return n ? bad / n : Number.NaN;
}

/** Signs of a degenerate policy in one rollout (the collapse modes RL on agents is known for). */
export interface Degeneracy {
  /** the rollout's last reply has no text outside its reasoning and no tool call */
  emptyAnswer: boolean;
  /** the same tool call (name and arguments, JSON whitespace ignored) was issued twice or more */
  toolLoop: boolean;
  /** a reply repeats an earlier reply of the rollout word for word, or repeats one 4-word phrase 3 times or more */
  repeatedText: boolean;
}

function canonicalArgs(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args));
  } catch {
    return args.trim();
  }
}

/** Whether some run of 4 words occurs at least 3 times in the text. */
function repeatsPhrase(text: string): boolean {
  const w = text.toLowerCase().split(/\s+/).filter(Boolean);
  const seen = new Map<string, number>();
  for (let i = 0; i + 4 <= w.length; i++) {
    const k = w.slice(i, i + 4).join(' ');
    const n = (seen.get(k) ?? 0) + 1;
    if (n >= 3) return true;
    seen.set(k, n);
  }
  return false;
}

export function degeneracyOf(r: Rollout): Degeneracy {
  const answered = r.calls.filter((c) => c.response);
  const texts = answered.map((c) => stripThink(c.response?.message.content ?? '').trim());
  const last = answered[answered.length - 1];
  const emptyAnswer =
    last !== undefined && texts[texts.length - 1] === '' && !last.response?.message.tool_calls?.length;
  const calls = answered.flatMap((c) =>
    (c.response?.message.tool_calls ?? []).map(
      (tc) => `${tc.function.name}(${canonicalArgs(tc.function.arguments)})`,
    ),
  );
  const toolLoop = new Set(calls).size < calls.length;
  const repeatedText = texts.some((t, i) => t !== '' && (texts.indexOf(t) < i || repeatsPhrase(t)));
  return { emptyAnswer, toolLoop, repeatedText };
}

/**
 * The degenerate-policy check: the fraction of rollouts with an empty answer, a tool-call loop, repeated text,
 * and any of the three (`${prefix}/degenerate/*`).
 */
export function degeneracyMetrics(rollouts: Rollout[], prefix = 'val'): Metrics {
  const d = rollouts.map(degeneracyOf);
  const frac = (f: (x: Degeneracy) => boolean) => mean(d.map((x) => (f(x) ? 1 : 0)));
  return {
    [`${prefix}/degenerate/empty_answer`]: frac((x) => x.emptyAnswer),
    [`${prefix}/degenerate/tool_loop`]: frac((x) => x.toolLoop),
    [`${prefix}/degenerate/repeated_text`]: frac((x) => x.repeatedText),
    [`${prefix}/degenerate/any`]: frac((x) => x.emptyAnswer || x.toolLoop || x.repeatedText),
  };
}

/** Unbiased pass@k from n samples with c passes (Chen et al. 2021): 1 − C(n−c, k)/C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (n - c < k) return 1;
  let p = 1;
  for (let i = n - c + 1; i <= n; i++) p *= 1 - k / i;
  return 1 - p;
}

/**
 * Validation metrics: Agent Lightning's (`RolloutAdapter.get_test_metrics`: val/reward, val/n_rollouts,
 * val/mean_response_length_per_turn, val/mean_total_response_length_per_rollout, val/turn_count) plus ours:
 * pass@k (a sample passes with reward ≥ 1), tool calls per rollout, merge rate, the degenerate-policy check
 * (degeneracyMetrics) and, given each task's difficulty level, the reward per level (`val/reward/level_<k>`).
 */
export function validationMetrics(
  rollouts: Rollout[],
  k: number,
  fillna: number,
  mergeRate: number,
  levelOf?: (dataId: string) => number | undefined,
): Metrics {
  const rewards = rollouts.map((r) => r.finalReward ?? fillna);
  const withTrace = rollouts.filter((r) => r.calls.some((c) => c.responseTokenIds?.length));
  const m: Metrics = {
    'val/reward': mean(rewards),
    'val/n_rollouts': rollouts.length,
    'val/n_rollouts_w_trace': withTrace.length,
    'val/n_rollouts_w_reward': rollouts.filter((r) => r.finalReward !== null).length,
    'val/mean_response_length_per_turn': mean(
      withTrace.map((r) => mean(r.calls.map((c) => c.responseTokenIds?.length ?? 0))),
    ),
    'val/mean_total_response_length_per_rollout': mean(
      withTrace.map((r) => r.calls.reduce((a, c) => a + (c.responseTokenIds?.length ?? 0), 0)),
    ),
    'val/turn_count': mean(withTrace.map((r) => r.calls.length)),
  };
  const byTask = new Map<string, number[]>();
  for (let i = 0; i < rollouts.length; i++) {
    const l = byTask.get(rollouts[i].dataId) ?? [];
    l.push(rewards[i]);
    byTask.set(rollouts[i].dataId, l);
  }
  const pk = [...byTask.values()].map((rs) => passAtK(rs.length, rs.filter((x) => x >= 1 - 1e-9).length, k));
  m[`val/pass@${k}`] = mean(pk);
  m['val/tool_calls_per_rollout'] = mean(rollouts.map(toolCallsOf));
  m['val/merge_rate'] = mergeRate;
  m['val/n_failed_rollouts'] = rollouts.filter((r) => r.state === 'failed').length;
  Object.assign(m, degeneracyMetrics(rollouts));
  if (levelOf) {
    const byLevel = new Map<number, number[]>();
    rollouts.forEach((r, i) => {
      const level = levelOf(r.dataId);
      if (level === undefined) return;
      byLevel.set(level, [...(byLevel.get(level) ?? []), rewards[i]]);
    });
    for (const [level, rs] of [...byLevel].sort((a, b) => a[0] - b[0]))
      m[`val/reward/level_${level}`] = mean(rs);
  }
  return m;
}
