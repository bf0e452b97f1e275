/**
 * `lab analyze <trace file> [flags]`: what the trainer would do with a trace — merge, retokenization, advantage
 * and effective-weight summaries (or the whole analysis as JSON with --json).
 */
import { existsSync, statSync } from 'node:fs';
import { SampleBuildError } from '../../core/aggregate/buildTrainingBatch';
import { listAdvEstimators } from '../../core/algos/advantage';
import { ALL_LOSS_MODES, type LossMode } from '../../core/algos/effectiveWeights';
import { type Analysis, analyzeTrace, DEFAULT_ANALYZE_OPTIONS, type Stats } from '../../core/analyze';
import { nothingToTrainOn, traceInventory } from '../../core/trace/inventory';
import { TraceFormatError } from '../../core/trace/io';
import { formatIssue } from '../../core/trace/types';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { bundledTokenizers, loadTokenizer } from '../tokenizers';
import { readTraceFile } from '../traceFile';

const LEVELS = ['transition', 'trajectory'] as const;
const SOURCES = ['engine', 'retokenize'] as const;
const SHOW_ISSUES = 20;

function oneOf<T extends string>(flag: string, v: unknown, allowed: readonly T[], def: T): T {
  if (v === undefined) return def;
  if (!(allowed as readonly unknown[]).includes(v))
    throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got '${v}'`);
  return v as T;
}

function positiveInt(flag: string, v: unknown, def: number): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
    throw new UsageError(`--${flag} must be a positive integer, got '${v}'`);
  return v;
}

const fmt = (x: number) =>
  Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : x.toFixed(4);
const fmtStats = (s: Stats) =>
  `n=${s.n} mean=${fmt(s.mean)} std=${fmt(s.std)} min=${fmt(s.min)} max=${fmt(s.max)}`;

function printText(a: Analysis, file: string): void {
  const o = a.options;
  console.log(
    `${file}: ${a.input.rollouts} rollouts, ${a.input.calls} calls, ` +
      `${a.input.promptTokens} prompt + ${a.input.responseTokens} response tokens` +
      (a.input.issues ? `, ${a.input.issues} records skipped` : ''),
  );
  const ic = Object.entries(a.importCounters).filter(([, v]) => v > 0);
  if (ic.length) console.log(`import: ${ic.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  console.log(
    `\nmerge (level=${o.level}, tokens=${o.tokenSource}): ${a.merge.rows} rows, ` +
      `${a.merge.trainableTokens} trainable of ${a.merge.responseTokens} response tokens`,
  );
  console.log(
    `  counters: ${Object.entries(a.merge.counters)
      .map(([k, v]) => `${k}=${v ?? '-'}`)
      .join(' ')}`,
  );
  console.log(
    `  merge failures: ${Object.entries(a.merge.failures)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  for (const f of a.merge.examples)
    console.log(
      `    ${f.rolloutId} call ${f.callIndex} (after ${f.prevCallIndex}): ${f.kind} at token ${f.firstDiff}\n` +
        `      context: ${JSON.stringify(f.contextSnippet)}\n      prompt:  ${JSON.stringify(f.promptSnippet)}`,
    );
  if (a.retokenization) {
    const r = a.retokenization;
    console.log(
      `\nretokenization (${o.tokenizer}): ${r.equal} of ${r.calls} calls identical; ` +
        Object.entries(r.causes)
          .map(([k, v]) => `${k}=${v}`)
          .join(' '),
    );
    for (const e of r.examples)
      console.log(
        `    ${e.rolloutId} call ${e.callIndex}: ${e.cause}: engine ${JSON.stringify(e.engine)} → ` +
          `retokenized ${JSON.stringify(e.retokenized)}`,
      );
  }
  console.log(
    `\nadvantages (${o.advEstimator}${o.advEstimator.startsWith('grpo') ? `, norm_adv_by_std=${o.normAdvByStd}` : ''}, ` +
      `${o.rolloutLevel ? 'rollout-level' : 'row-level'}) over trainable tokens: ${fmtStats(a.advantages)}`,
  );
  console.log(
    `\neffective weights ∂L/∂logπ (${a.weights.mode}): total ${fmt(a.weights.total)}, Σ|w| ${fmt(a.weights.absTotal)}`,
  );
  const sorted = [...a.weights.perRollout].sort((x, y) => Math.abs(y.weight) - Math.abs(x.weight));
  console.log('  largest |weight| rollouts:');
  for (const r of sorted.slice(0, 8))
    console.log(
      `    ${r.rolloutId.padEnd(16)} group ${r.dataId.padEnd(12)} reward ${String(r.reward).padEnd(6)} ` +
        `rows ${String(r.rows).padStart(3)} tokens ${String(r.trainableTokens).padStart(6)} weight ${fmt(r.weight)}`,
    );
  console.log('\nall loss modes (per-rollout total weight):');
  for (const m of ALL_LOSS_MODES) {
    const s = a.allModes[m];
    console.log(
      `  ${m.padEnd(24)} Σ|w| ${fmt(s.absTotal).padStart(11)}  per rollout ${fmtStats(s.rolloutWeightStats)}`,
    );
  }
}

export const command: Command = {
  summary: 'merge, retokenization, advantage and effective-weight summaries of a trace file',
  usage:
    'npm run lab -- analyze <trace file> [--level transition|trajectory] [--adv NAME] [--no-std] ' +
    '[--rollout-level-adv] [--loss-agg MODE] [--token-source engine|retokenize] [--tokenizer qwen3|PATH] ' +
    '[--max-prompt-length N] [--max-response-length N] [--json]',
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      level: { type: 'string' },
      adv: { type: 'string' },
      'no-std': { type: 'bool' },
      'rollout-level-adv': { type: 'bool' },
      'loss-agg': { type: 'string' },
      'token-source': { type: 'string' },
      tokenizer: { type: 'string' },
      'max-prompt-length': { type: 'number' },
      'max-response-length': { type: 'number' },
      json: { type: 'bool' },
    });
    if (positionals.length !== 1)
      throw new UsageError(`expected one trace file, got ${positionals.length} argument(s)`);
    const file = positionals[0];
    const estimators = listAdvEstimators().map((e) => e.name);
    const adv = flags.adv === undefined ? DEFAULT_ANALYZE_OPTIONS.advEstimator : String(flags.adv);
    if (!estimators.includes(adv))
      throw new UsageError(`--adv must be one of ${estimators.join(', ')}, got '${adv}'`);
    const level = oneOf('level', flags.level, LEVELS, DEFAULT_ANALYZE_OPTIONS.level);
    const lossAggMode = oneOf<LossMode>(
      'loss-agg',
      flags['loss-agg'],
      ALL_LOSS_MODES,
      DEFAULT_ANALYZE_OPTIONS.lossAggMode,
    );
    const tokenSource = oneOf('token-source', flags['token-source'], SOURCES, 'engine');
    if (tokenSource === 'retokenize' && flags.tokenizer === undefined)
      throw new UsageError('--token-source retokenize needs --tokenizer');
    const maxPromptLength = positiveInt(
      'max-prompt-length',
      flags['max-prompt-length'],
      DEFAULT_ANALYZE_OPTIONS.maxPromptLength,
    );
    const maxResponseLength = positiveInt(
      'max-response-length',
      flags['max-response-length'],
      DEFAULT_ANALYZE_OPTIONS.maxResponseLength,
    );
    if (!existsSync(file)) throw new UsageError(`trace file ${file} does not exist`);
    if (statSync(file).isDirectory()) throw new UsageError(`${file} is a folder, not a trace file`);
    let tokenizer: ReturnType<typeof loadTokenizer> | undefined;
    if (flags.tokenizer !== undefined) {
      try {
        tokenizer = loadTokenizer(String(flags.tokenizer));
      } catch (e) {
        throw new UsageError(
          `--tokenizer: ${(e as Error).message} (bundled: ${bundledTokenizers.join(', ')})`,
        );
      }
    }

    let trace: Awaited<ReturnType<typeof readTraceFile>>;
    try {
      trace = await readTraceFile(file);
    } catch (e) {
      if (e instanceof TraceFormatError) {
        console.error(`lab analyze: ${file}: ${e.message}`);
        return 1;
      }
      throw e;
    }
    for (const i of trace.issues.slice(0, SHOW_ISSUES))
      console.error(`${file}: ${i.severity === 'warning' ? 'warning' : 'skipped'}: ${formatIssue(i)}`);
    if (trace.issues.length > SHOW_ISSUES)
      console.error(`… and ${trace.issues.length - SHOW_ISSUES} more issues`);
    if (trace.rollouts.length === 0) {
      console.error(`lab analyze: no valid rollout in ${file}`);
      return 1;
    }
    // A trace with nothing to train on is a result, not a crash: say what it holds and why.
    const empty = nothingToTrainOn(traceInventory(trace.rollouts));
    if (empty) {
      console.error(`lab analyze: ${file}: ${trace.rollouts.length} rollouts; ${empty}; no training rows`);
      return 1;
    }
    let analysis: ReturnType<typeof analyzeTrace>;
    try {
      analysis = analyzeTrace(trace, {
        level,
        advEstimator: adv,
        normAdvByStd: !flags['no-std'],
        rolloutLevel: Boolean(flags['rollout-level-adv']),
        lossAggMode,
        tokenSource,
        tokenizer,
        maxPromptLength,
        maxResponseLength,
      });
    } catch (e) {
      if (!(e instanceof SampleBuildError)) throw e;
      console.error(`lab analyze: ${file}: the trainer's sample builder stops here: ${e.message}`);
      return 1;
    }
    if (flags.json) console.log(JSON.stringify(analysis, null, 2));
    else printText(analysis, file);
    return 0;
  },
};
