/**
 * `npm run bench:core [-- --input FILE] [--repeat N] [--warmup N] [--peer PYTHON]`: throughput of the core path
 * on a batch shaped like a real multi-turn agent (default: 1,024 rollouts × 16 calls, ≈ 8.5M prompt+response
 * tokens), or on any trace file `analyze` reads. Stages, each the median of --repeat runs (default 5) after --warmup
 * untimed ones (default 1):
 *   parse      trace text → rollouts (JSONL as written by the harnesses)
 *   merge      trajectory-level sample building (Agent Lightning's RolloutAdapter semantics)
 *   advantage  rollout-level GRPO (compute_rollout_level_advantage) + per-rollout normalisation
 *   trainer    the trainer's view of the built rows (computeTrainerView: drops, balance_batch, rollout-level
 *              GRPO, per-token weights under every loss mode)
 * Each stage reports the median wall time and the median process CPU time (user + system) of its runs; on a
 * loaded machine the CPU column is the one to compare across runs. Tokens are prompt + response tokens over
 * all calls. With a peer Python (flag or HARNESS_LAB_PEER_PYTHON, see python/setup_peer.sh) the same batch
 * runs through Agent Lightning's own Python path in the same run and the ratio (wall time, both sides under the
 * same load) is printed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from '../../src/cli/args';
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import { groupingFromIds, indexGroups } from '../../src/core/algos/groups';
import {
  computeRolloutLevelAdvantage,
  normalizeAdvantagesByRollout,
} from '../../src/core/algos/rolloutLevel';
import { computeTrainerView } from '../../src/core/pipeline/trainer';
import { parseTraceText, toJsonlTrace } from '../../src/core/trace/io';
import { AGENT_BATCH_SHAPE, countCallTokens, syntheticAgentBatch } from '../../src/core/trace/synthetic';
import type { Rollout } from '../../src/core/trace/types';

const { flags } = parseArgs(process.argv.slice(2), {
  input: { type: 'string' },
  repeat: { type: 'number' },
  warmup: { type: 'number' },
  peer: { type: 'string' },
});
const repeat = Math.max(1, Math.floor(Number(flags.repeat ?? 5)));
const warmup = Math.max(0, Math.floor(Number(flags.warmup ?? 1)));
const peerPython = (flags.peer as string | undefined) ?? process.env.HARNESS_LAB_PEER_PYTHON;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * Wall time and process CPU time (user + system, all threads: the GC's helper threads count) of one run. On a
 * shared, loaded machine wall time measures the neighbours as much as the code; CPU time does not.
 */
function time<T>(f: () => T): { ms: number; cpuMs: number; value: T } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = f();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, value };
}

function timeMedian<T>(f: () => T): { ms: number; cpuMs: number; value: T } {
  const runs: number[] = [];
  const cpuRuns: number[] = [];
  let value!: T;
  // Untimed runs first, so the medians are of optimised code rather than of the JIT's first tiers.
  for (let i = 0; i < warmup; i++) f();
  for (let i = 0; i < repeat; i++) {
    const r = time(f);
    runs.push(r.ms);
    cpuRuns.push(r.cpuMs);
    value = r.value;
  }
  return { ms: median(runs), cpuMs: median(cpuRuns), value };
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

// ── input ────────────────────────────────────────────────────────────────────────────────────────────────
let text: string;
let label: string;
if (flags.input) {
  const path = resolve(String(flags.input));
  text = readFileSync(path, 'utf8');
  label = path;
} else {
  const shape = AGENT_BATCH_SHAPE;
  text = toJsonlTrace(syntheticAgentBatch(shape));
  label = `synthetic agent batch (${shape.rollouts} rollouts × ${shape.callsPerRollout} calls, seed ${shape.seed})`;
}

// One parse gives the rollouts; the parse medians are taken after the other stages, so the garbage that
// repeated parses leave (hundreds of MiB of JSON objects) is not collected while later stages are timed.
const rollouts: Rollout[] = parseTraceText(text).rollouts;
const tokens = countCallTokens(rollouts);
console.log(`input: ${label}`);
console.log(
  `       ${rollouts.length} rollouts, ${rollouts.reduce((n, r) => n + r.calls.length, 0)} calls, ` +
    `${(tokens / 1e6).toFixed(2)}M prompt+response tokens, ${mib(text.length)} of text; median of ${repeat} runs after ${warmup} untimed`,
);

// ── stages ───────────────────────────────────────────────────────────────────────────────────────────────
// Limits that truncate nothing: the longest first prompt and the longest possible merged response of any
// rollout. Upstream pads its tensors to these limits, so they must be tight for the peer (a limit of 2^20 makes
// it allocate tens of GB); ours are unpadded and do not care.
let maxPrompt = 1;
let maxResponse = 1;
for (const r of rollouts) {
  const cs = r.calls.filter((c) => c.promptTokenIds && c.responseTokenIds);
  if (!cs.length) continue;
  maxPrompt = Math.max(maxPrompt, ...cs.map((c) => c.promptTokenIds!.length));
  const last = cs[cs.length - 1];
  maxResponse = Math.max(
    maxResponse,
    last.promptTokenIds!.length + last.responseTokenIds!.length - cs[0].promptTokenIds!.length,
    ...cs.map((c) => c.responseTokenIds!.length),
  );
}
const buildOpts = {
  level: 'trajectory' as const,
  maxPromptLength: maxPrompt,
  maxResponseLength: maxResponse,
  padTokenId: 0,
  rewardFillnaValue: 0,
};
const merged = timeMedian(() => buildTrainingBatch(rollouts, buildOpts));
const batch = merged.value.batch;
const uids = indexGroups(batch.dataIds);
const byRollout = groupingFromIds(batch.rowRollout);
const advantage = timeMedian(() => {
  const adv = computeRolloutLevelAdvantage(
    'grpo',
    { rows: batch, rowRewards: batch.reward, uids, rollouts: byRollout },
    { normAdvByStd: true },
  );
  return normalizeAdvantagesByRollout(batch, adv.advantages, byRollout, batch.nRows);
});
const trainer = timeMedian(() =>
  computeTrainerView({
    rollouts,
    build: merged.value,
    options: {
      advEstimator: 'grpo',
      normAdvByStdInGrpo: true,
      enableRolloutLevelAdvantage: true,
      policyLossMode: 'per_rollout_mean',
      trajectoryMaxPromptLength: maxPrompt,
      trajectoryMaxResponseLength: maxResponse,
    },
  }),
);
const parsed = timeMedian(() => parseTraceText(text));

const rate = (ms: number) => tokens / (ms / 1000);
type Timed = { ms: number; cpuMs: number };
const sum = (...ts: Timed[]): Timed => ({
  ms: ts.reduce((a, t) => a + t.ms, 0),
  cpuMs: ts.reduce((a, t) => a + t.cpuMs, 0),
});
const col = (ms: number) =>
  `${ms.toFixed(1).padStart(9)} ms  ${(rate(ms) / 1e6).toFixed(1).padStart(8)} M tok/s`;
const row = (name: string, t: Timed) => console.log(`  ${name.padEnd(48)} ${col(t.ms)}   ${col(t.cpuMs)}`);
console.log(`\nstage${' '.repeat(47)}wall median      throughput    CPU median      throughput`);
row('parse (JSONL → rollouts)', parsed);
row('trajectory merge', merged);
row('rollout-level GRPO + per-rollout normalisation', advantage);
row('trainer view (every loss mode)', trainer);
const aglPath = sum(merged, advantage);
row('Agent Lightning path (merge + advantage)', aglPath);
row('end to end (parse + merge + trainer view)', sum(parsed, merged, trainer));
console.log(
  `\nrows ${batch.nRows}, trainable tokens ${batch.mask.reduce((a, b) => a + b, 0)}, ` +
    `merge mismatches ${merged.value.counters.nMergeMismatchRows}`,
);
console.log(`peak memory (max RSS) ${mib(process.resourceUsage().maxRSS * 1024)}`);

// ── peer: Agent Lightning's own Python path on the same batch ───────────────────────────────────────────
if (!peerPython) {
  console.log(
    '\npeer: not run (set HARNESS_LAB_PEER_PYTHON or --peer to a Python with agentlightning, see python/setup_peer.sh)',
  );
} else {
  const dir = mkdtempSync(join(tmpdir(), 'bench-core-'));
  const file = join(dir, 'batch.json');
  const doc = {
    params: {
      max_prompt_length: buildOpts.maxPromptLength,
      max_response_length: buildOpts.maxResponseLength,
      pad_token_id: buildOpts.padTokenId,
      reward_fillna_value: buildOpts.rewardFillnaValue,
    },
    rollouts: rollouts.map((r, i) => ({
      rollout_id: r.rolloutId,
      data_id: r.dataId,
      step: r.step ?? 0,
      sample_idx_in_step: r.sampleIdxInStep ?? i,
      final_reward: r.finalReward,
      triplets: r.calls
        .filter((c) => c.promptTokenIds && c.responseTokenIds)
        .map((c) => ({
          prompt_token_ids: Array.from(c.promptTokenIds ?? []),
          response_token_ids: Array.from(c.responseTokenIds ?? []),
          response_log_probs: c.responseLogProbs ? Array.from(c.responseLogProbs) : null,
        })),
    })),
  };
  writeFileSync(file, JSON.stringify(doc));
  const script = resolve(import.meta.dirname, '../../python/bench_peer.py');
  // The libraries print many warnings to stderr: give the pipes room.
  const r = spawnSync(peerPython, [script, file, '--repeat', String(repeat)], {
    encoding: 'utf8',
    maxBuffer: 256 * 2 ** 20,
  });
  rmSync(dir, { recursive: true, force: true });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !last.startsWith('{')) {
    console.log(
      `\npeer: failed (exit ${r.status ?? r.signal}${r.error ? `, ${r.error.message}` : ''}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`,
    );
    process.exitCode = 1;
  } else {
    const peer = JSON.parse(last) as {
      peer: string;
      seconds: Record<string, number>;
      cpu_seconds?: Record<string, number>;
    };
    // Both sides time the same file, so the ratio is of seconds; throughput is in this benchmark's token
    // convention (prompt + response tokens of every call) on both sides.
    const peerWall = peer.seconds.total;
    const oursWall = aglPath.ms / 1000;
    console.log(`\npeer: ${peer.peer}, one thread, same batch`);
    for (const [k, v] of Object.entries(peer.seconds))
      console.log(`  ${k.padEnd(12)} ${(v * 1000).toFixed(1).padStart(9)} ms wall`);
    console.log(
      `  peer ${(tokens / peerWall / 1e6).toFixed(2)} M tok/s vs ours ${(tokens / oursWall / 1e6).toFixed(1)} M tok/s (wall)`,
    );
    console.log(
      `ratio (Agent Lightning path, merge + advantage + normalisation), wall: ${(peerWall / oursWall).toFixed(1)}×`,
    );
    if (peer.cpu_seconds?.total)
      console.log(
        `ratio, process CPU time: ${(peer.cpu_seconds.total / (aglPath.cpuMs / 1000)).toFixed(1)}×`,
      );
  }
}
