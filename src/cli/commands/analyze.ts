/**
 * `lab analyze <trace file>… [flags]`: what Agent Lightning 1.0's trainer (verl 0.8.0) would do with a trace —
 * sample building, what it drops, retokenization drift, advantages, and the effective weight of every rollout,
 * call, group (and with --per-token every token) under every loss mode; as text, or the whole analysis as JSON
 * with --json. Several files are read as one trace (as the page reads a sample of several files). The trainer
 * flags come from core's option registry (upstream names and defaults).
 */
import { existsSync, statSync } from 'node:fs';
import { SampleBuildError } from '../../core/aggregate/buildTrainingBatch';
import { UpstreamError } from '../../core/algos/numeric';
import { listReferenceStacks, type ReferenceStackName } from '../../core/algos/stacks';
import { type Analysis, analyzeTrace, type Stats } from '../../core/analyze';
import { formatNoRows, type NoRowsEntry, whyNoRows } from '../../core/pipeline/noRows';
import { REFERENCE_STACK, resolveTrainerOptions } from '../../core/pipeline/options';
import {
  DEFAULT_WEIGHT_SIGN,
  getWeightSign,
  signed,
  WEIGHT_SIGNS,
  type WeightSignName,
} from '../../core/pipeline/sign';
import { tokenizerNamedBy } from '../../core/tokenize/named';
import { combineTraces } from '../../core/trace/combine';
import { nothingToTrainOn, traceInventory } from '../../core/trace/inventory';
import { TraceFormatError, textOnlyCalls, tokenizeTextOnly } from '../../core/trace/io';
import { formatIssue, type TraceBatch } from '../../core/trace/types';
import { type VocabMismatchSummary, vocabMismatchSummary } from '../../core/vocabMismatch';
import { diffAgainstStack, type WeightDiff } from '../../core/weightDiff';
import { type FlagSpec, parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { bundledTokenizers, loadTokenizer } from '../tokenizers';
import { readTraceFile } from '../traceFile';
import { trainerFlagSpec, trainerFlags, trainerFlagsUsage } from '../trainerFlags';

const SHOW_ISSUES = 20;

const fmt = (x: number) =>
  Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : x.toFixed(4);
const fmtStats = (s: Stats) =>
  `n=${s.n} mean=${fmt(s.mean)} std=${fmt(s.std)} min=${fmt(s.min)} max=${fmt(s.max)}`;

function printText(a: Analysis, file: string): void {
  const o = a.options;
  console.log(`${a.reference}`);
  console.log(
    `${file}: ${a.input.rollouts} rollouts, ${a.input.calls} calls, ` +
      `${a.input.promptTokens} prompt + ${a.input.responseTokens} response tokens` +
      (a.input.issues ? `, ${a.input.issues} records skipped` : ''),
  );
  const ic = Object.entries(a.importCounters).filter(([, v]) => v > 0);
  if (ic.length) console.log(`import: ${ic.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  console.log(
    `\nmerge (level=${o.traceAggregatorLevel}, tokens=${o.tokenSource}): ${a.merge.rows} rows, ` +
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
  const tc = a.trainer.counters;
  console.log(
    `\ntrainer: ${tc['training/n_sample_collected']} rows collected, ${tc['training/n_sample_dropped/marked']} is_drop ` +
      `(prompt > ${o.maxPromptLength}), ${tc['training/n_sample_dropped/same_reward'] + tc['training/n_sample_dropped/random']} trimmed, ` +
      `${tc['training/n_sample_trained']} trained in ${a.trainer.miniBatches} mini-batch(es)` +
      (a.trainer.skipped ? ' — nothing to train on: the trainer skips this step' : ''),
  );
  if (a.retokenization) {
    const r = a.retokenization;
    console.log(
      `\nretokenization (${o.tokenizer}): ${r.equal} of ${r.calls} calls identical; first differences: ` +
        Object.entries(r.causes)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ') +
        `; all differing hunks: ${Object.entries(r.hunks)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`,
    );
    for (const e of r.examples)
      console.log(
        `    ${e.rolloutId} call ${e.callIndex}: ${e.cause}: engine ${JSON.stringify(e.engine)} → ` +
          `retokenized ${JSON.stringify(e.retokenized)} (${e.hunks.length} hunk(s))`,
      );
  }
  console.log(
    `\nadvantages (${o.advEstimator}${o.advEstimator.startsWith('grpo') ? `, norm_adv_by_std=${o.normAdvByStdInGrpo}` : ''}, ` +
      `${o.enableRolloutLevelAdvantage ? 'rollout-level' : 'row-level'}, ${a.advantages.dtype}) over trained tokens: ${fmtStats(a.advantages)}`,
  );
  const sign = getWeightSign(a.sign.name);
  console.log(
    `\neffective weights, ${sign.label} (${sign.reinforced} = reinforced; ${a.weights.mode}): ` +
      `total ${fmt(a.weights.total)}, Σ|w| ${fmt(a.weights.absTotal)}`,
  );
  const sorted = [...a.weights.perRollout].sort((x, y) => Math.abs(y.weight) - Math.abs(x.weight));
  console.log('  largest |weight| rollouts:');
  for (const r of sorted.slice(0, 8))
    console.log(
      `    ${r.rolloutId.padEnd(16)} group ${r.dataId.padEnd(12)} reward ${String(r.reward).padEnd(6)} ` +
        `rows ${String(r.rows).padStart(3)} tokens ${String(r.trainableTokens).padStart(6)} weight ${fmt(r.weight)}`,
    );
  console.log(`\nall loss modes (per-rollout total ${sign.symbol}):`);
  for (const [m, s] of Object.entries(a.allModes))
    console.log(
      `  ${m.padEnd(24)} Σ|w| ${fmt(s.absTotal).padStart(11)}  per rollout ${fmtStats(s.rolloutWeightStats)}`,
    );
  printNoRows(a.noRows, a.input.rollouts);
  if (a.retokenizedAtImport) {
    const r = a.retokenizedAtImport;
    console.log(
      `
retokenized at import: ${r.rollouts} rollouts had no token ids in the file; ${r.tokenizers.join(', ')} made them from their text. This affects:`,
    );
    for (const x of r.affects) console.log(`  - ${x}`);
  }
}

/** Up to this many rollouts are listed under "why no rows"; the rest are counted by rule. */
const SHOW_NO_ROWS = 20;

function printNoRows(entries: NoRowsEntry[], total: number): void {
  const silent = entries.filter((e) => e.noGradient);
  const byRule = new Map<string, number>();
  for (const e of entries) for (const r of e.reasons) byRule.set(r.rule, (byRule.get(r.rule) ?? 0) + 1);
  console.log(
    `
why no rows: ${silent.length} of ${total} rollouts give no training rows or no gradient` +
      (byRule.size ? ` (${[...byRule].map(([k, v]) => `${k}=${v}`).join(' ')})` : ''),
  );
  for (const e of entries.slice(0, SHOW_NO_ROWS)) console.log(`  ${formatNoRows(e)}`);
  if (entries.length > SHOW_NO_ROWS) console.log(`  … and ${entries.length - SHOW_NO_ROWS} more`);
}

async function readTrace(file: string): Promise<TraceBatch | string> {
  if (!existsSync(file)) throw new UsageError(`trace file ${file} does not exist`);
  if (statSync(file).isDirectory()) throw new UsageError(`${file} is a folder, not a trace file`);
  try {
    return await readTraceFile(file);
  } catch (e) {
    if (e instanceof TraceFormatError) return e.message;
    throw e;
  }
}

/** Why each rollout gave no rows, when the trainer built none at all (no trainer view to read). */
function printNoRowsTo(
  out: (line: string) => void,
  trace: TraceBatch,
  options: ReturnType<typeof trainerFlags>['options'],
  tokenizer: ReturnType<typeof loadTokenizer> | undefined,
): void {
  const entries = whyNoRows(trace.rollouts, resolveTrainerOptions(options), null, tokenizer);
  out(`why no rows (${entries.length} of ${trace.rollouts.length} rollouts):`);
  for (const e of entries.slice(0, SHOW_NO_ROWS)) out(`  ${formatNoRows(e)}`);
  if (entries.length > SHOW_NO_ROWS) out(`  … and ${entries.length - SHOW_NO_ROWS} more`);
}

/** `lab analyze`'s own flags (the trainer settings' flags come from core's config table). */
export const ANALYZE_FLAGS: FlagSpec = {
  tokenizer: { type: 'string' },
  examples: { type: 'number' },
  'per-token': { type: 'bool' },
  'no-retokenization': { type: 'bool' },
  sign: { type: 'string' },
  json: { type: 'bool' },
  'diff-reference': { type: 'string' },
};

/** The weight differences against another reference stack, largest first, each with its causes. */
function printDiff(d: WeightDiff, sg: (v: number) => number): void {
  const f = (v: number) => sg(v).toPrecision(4);
  console.log(
    `\nweight differences: ${d.a.reference} (${d.a.lossMode}) → ${d.b.reference} (${d.b.lossMode})`,
  );
  for (const c of d.causes) {
    console.log(`  cause ${c.key}: ${JSON.stringify(c.from)} → ${JSON.stringify(c.to)}`);
    for (const x of c.changes ?? []) console.log(`    ${x.id}: ${x.summary} [${x.madeBy}]`);
    if (c.changes && c.changes.length === 0) console.log('    (no listed change applies to these settings)');
  }
  const why = (k: string[]) => (k.length ? k.join(', ') : 'joint effect of the changed settings');
  console.log(`  rollouts that differ: ${d.counts.rollouts}`);
  for (const r of d.rollouts)
    console.log(`    ${r.rolloutId}: ${f(r.a)} → ${f(r.b)} (Δ ${f(r.delta)}) — ${why(r.causes)}`);
  console.log(`  calls that differ: ${d.counts.calls}`);
  for (const c of d.calls)
    console.log(
      `    ${c.rolloutId} call ${c.call}: ${f(c.a)} → ${f(c.b)} (Δ ${f(c.delta)}) — ${why(c.causes)}`,
    );
  if (d.tokens === null) console.log('  tokens: not paired (the two sides build different rows)');
  else {
    console.log(`  tokens that differ: ${d.counts.tokens}`);
    for (const t of d.tokens)
      console.log(
        `    ${t.rolloutId} row ${t.row} pos ${t.position} (call ${t.call}): ${f(t.a)} → ${f(t.b)} (Δ ${f(t.delta)}) — ${why(t.causes)}`,
      );
  }
}

function printVocabMismatch(v: VocabMismatchSummary): void {
  const m = v.metrics;
  const e = (x: number) => x.toExponential(3);
  console.log(
    `\nfull-vocabulary mismatch (rollout engine vs trainer, ${m['lab/rollout_vocab_tokens']} tokens of ${v.calls} calls): ` +
      `KL mean ${e(m['lab/rollout_vocab_kl/mean'])} max ${e(m['lab/rollout_vocab_kl/max'])}, ` +
      `TV mean ${e(m['lab/rollout_vocab_tv/mean'])} max ${e(m['lab/rollout_vocab_tv/max'])}`,
  );
  for (const w of v.worst)
    console.log(
      `  ${w.rolloutId} call ${w.call} token ${w.position}: KL ${e(w.kl)} TV ${e(w.tv)}; most disagreeing id ${w.top.id}: p ${w.top.rollout.toFixed(4)} (rollout) / ${w.top.trainer.toFixed(4)} (trainer)`,
    );
}

export const command: Command = {
  summary: `what the trainer (${REFERENCE_STACK.label}) does with a trace: rows, drops, retokenization, advantages, weights`,
  usage:
    'npm run lab -- analyze <trace file>... [--tokenizer qwen3|policy|PATH|none] [--no-retokenization] ' +
    `[--sign ${WEIGHT_SIGNS.map((s) => s.name).join('|')}] [--examples N] [--per-token] [--json] ` +
    `[--diff-reference ${listReferenceStacks()
      .map((s) => s.name)
      .join('|')}] ` +
    trainerFlagsUsage() +
    '\n\nWeights are the push −∂L/∂logπ (positive = the update raises the token’s log-prob) unless --sign grad asks ' +
    "for ∂L/∂logπ. Token texts and merge-failure classes use the tokenizer the trace names in its rollouts' " +
    "metadata.tokenizer (a run's traces: policy), as the page does, else Qwen3 with a note, unless --tokenizer " +
    'names another (or none).',
  async run(argv) {
    const own = ANALYZE_FLAGS;
    const { positionals, flags } = parseArgs(argv, trainerFlagSpec(own));
    if (positionals.length === 0) throw new UsageError('expected a trace file');
    const { options, unread } = trainerFlags(flags, own);
    for (const u of unread) console.error(`lab analyze: note: ${u}`);
    if (options.tokenSource === 'retokenize' && flags.tokenizer === 'none')
      throw new UsageError('--token-source retokenize needs a tokenizer, and --tokenizer none was given');
    const signName = flags.sign === undefined ? DEFAULT_WEIGHT_SIGN : String(flags.sign);
    if (!WEIGHT_SIGNS.some((s) => s.name === signName))
      throw new UsageError(
        `--sign must be one of ${WEIGHT_SIGNS.map((s) => `${s.name} (${s.symbol})`).join(', ')}, got '${signName}'`,
      );
    const examples = flags.examples === undefined ? 5 : Number(flags.examples);
    if (!Number.isInteger(examples) || examples < 0)
      throw new UsageError(`--examples must be a non-negative integer, got '${flags.examples}'`);
    const parts: { name: string; trace: TraceBatch }[] = [];
    for (const file of positionals) {
      const t = await readTrace(file);
      if (typeof t === 'string') {
        console.error(`lab analyze: ${file}: ${t}`);
        return 1;
      }
      parts.push({ name: file, trace: t });
    }
    const trace = parts.length === 1 ? parts[0].trace : combineTraces(parts);
    // As the page: a tokenizer whenever the trace has token ids (merge-failure classes and snippets need
    // one), unless another or none is named.
    const hasIds = trace.rollouts.some((r) => r.calls.some((c) => c.promptTokenIds || c.responseTokenIds));
    const textOnly = trace.rollouts.some((r) => textOnlyCalls(r) > 0);
    // the vocabulary the trace names (a run's own traces: `policy`); a guess is said
    const named = tokenizerNamedBy(trace);
    const tokName =
      flags.tokenizer === undefined
        ? hasIds || textOnly || options.tokenSource === 'retokenize'
          ? named.name
          : null
        : flags.tokenizer === 'none'
          ? null
          : String(flags.tokenizer);
    if (flags.tokenizer === undefined && tokName !== null && named.guessed)
      console.error(
        `lab analyze: note: ${
          named.named.length > 1
            ? `the rollouts name different tokenizers (${named.named.join(', ')})`
            : 'the trace names no tokenizer (metadata.tokenizer)'
        }; reading its ids as ${tokName} (--tokenizer names another)`,
      );
    let tokenizer: ReturnType<typeof loadTokenizer> | undefined;
    if (tokName !== null) {
      try {
        tokenizer = loadTokenizer(tokName);
      } catch (e) {
        throw new UsageError(
          `--tokenizer: ${(e as Error).message} (bundled: ${bundledTokenizers.join(', ')}, or none)`,
        );
      }
    }
    // a text-only file (verl / SkyRL dumps, API logs without ids) gets the tokenizer's ids, marked retokenized
    if (tokenizer && textOnly) for (const r of trace.rollouts) tokenizeTextOnly(r, tokenizer);
    const label = positionals.join(' + ');
    for (const i of trace.issues.slice(0, SHOW_ISSUES))
      console.error(`${label}: ${i.severity === 'warning' ? 'warning' : 'skipped'}: ${formatIssue(i)}`);
    if (trace.issues.length > SHOW_ISSUES)
      console.error(`… and ${trace.issues.length - SHOW_ISSUES} more issues`);
    if (trace.rollouts.length === 0) {
      console.error(`lab analyze: no valid rollout in ${label}`);
      return 1;
    }
    // A trace with nothing to train on is a result, not a crash: say what it holds and why.
    const empty = nothingToTrainOn(traceInventory(trace.rollouts));
    if (empty) {
      console.error(`lab analyze: ${label}: ${trace.rollouts.length} rollouts; ${empty}; no training rows`);
      return 1;
    }
    let analysis: Analysis;
    try {
      analysis = analyzeTrace(trace, options, {
        tokenizer,
        examples,
        perToken: Boolean(flags['per-token']),
        noRetokenization: Boolean(flags['no-retokenization']),
        sign: signName as WeightSignName,
      });
    } catch (e) {
      // what upstream would raise on this batch: report it as upstream does, not as a crash
      if (e instanceof UpstreamError || e instanceof SampleBuildError) {
        const kind = e instanceof UpstreamError ? e.kind : e.upstreamClass;
        console.error(`lab analyze: ${label}: the trainer raises ${kind}: ${e.message}`);
        if (e instanceof SampleBuildError) printNoRowsTo(console.error, trace, options, tokenizer);
        return 1;
      }
      throw e;
    }
    let diff: WeightDiff | null = null;
    if (flags['diff-reference'] !== undefined) {
      const other = String(flags['diff-reference']) as ReferenceStackName;
      if (!listReferenceStacks().some((s) => s.name === other))
        throw new UsageError(
          `--diff-reference must be one of ${listReferenceStacks()
            .map((s) => s.name)
            .join(', ')}, got '${other}'`,
        );
      const a = resolveTrainerOptions(options);
      try {
        const d = diffAgainstStack(trace.rollouts, a, other, { tokenizer });
        if (d.refused !== null) throw new UsageError(`--diff-reference ${other}: ${d.refused}`);
        diff = d.diff;
      } catch (e) {
        if (e instanceof UpstreamError) {
          console.error(`lab analyze: ${label}: under ${other} the trainer raises ${e.kind}: ${e.message}`);
          return 1;
        }
        throw e;
      }
    }
    const sg = (v: number) => signed(v, getWeightSign(signName));
    const vocab = vocabMismatchSummary(trace.rollouts);
    if (flags.json)
      console.log(
        JSON.stringify(
          {
            ...analysis,
            ...(diff ? { diffReference: diff } : {}),
            ...(vocab ? { vocabMismatch: vocab } : {}),
          },
          null,
          2,
        ),
      );
    else {
      printText(analysis, label);
      if (diff) printDiff(diff, sg);
      if (vocab) printVocabMismatch(vocab);
    }
    return 0;
  },
};
