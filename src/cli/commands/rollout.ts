/**
 * `lab rollout`: runs harness rollouts in worker_threads against the in-process LLM proxy and writes the
 * recorded traces as JSONL (one rollout per line).
 */
import { setMaxListeners } from 'node:events';
import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { basename } from 'node:path';
import type { ChatTokenizer } from '../../core/tokenize/tokenizer';
import { rolloutToJsonlLine } from '../../core/trace/io';
import type { Rollout } from '../../core/trace/types';
import { loadCheckpointFile } from '../../engine/checkpoint';
import { defaultConfig } from '../../engine/model';
import { exportLlamaHfFolder } from '../../engine/onnx/exportLlama';
import { mapReader } from '../../engine/onnx/hfFolder';
import { createPolicyEngine } from '../../engine/policy';
import { annotateEngineGap, engineGapLine, engineGapOf } from '../../harness/engineGap';
import { type ChatEngine, expertEngine, RandomEngine, RemoteEngine } from '../../harness/engines';
import { BEHAVIOURS, type Split } from '../../harness/harness';
import { serveChannel } from '../../harness/http';
import { PolicyChatEngine } from '../../harness/policyEngine';
import { WorkerPool } from '../../harness/pool';
import { LlmProxy } from '../../harness/proxy';
import { getHarness, HARNESSES, isHarnessName } from '../../harness/registry';
import { planRollouts, type RunSpec, runRollouts } from '../../harness/runner';
import { createTransformersFolderEngine } from '../../harness/transformersEngine';
import { CommandError, EXIT, parseArgs, UsageError } from '../args';
import { behaviourFlag, seedFlag, splitFlag } from '../harnessFlags';
import type { Command } from '../lab';
import { type LoadedLlama, loadLlamaModel } from '../llamaModel';
import { spawnNodeHarnessWorker } from '../nodeWorkers';
import { loadTokenizer } from '../tokenizers';
import { outputProblem } from '../traceFile';

/** Upper bounds of the counts: each keeps a typo (1e300) from exhausting memory or threads. */
const MAX_TASKS = 100_000;
const MAX_GROUP = 1024;
const MAX_ROLLOUTS = 1_000_000;
const MAX_WORKERS = 64;

const usage = `lab rollout --harness ${HARNESSES.names().join('|')} --engine scripted|random|policy|transformers.js|URL --out FILE
    [--n TASKS=8] [--group-size K=1] [--split train|val] [--behaviour NAME[,NAME]]... [--seed S=0] [--workers W=4]
    [--tokenizer qwen3|DIR] [--model NAME] [--max-turns T] [--max-tokens M=1024] [--max-context C=32768]
    [--timeout-ms MS=60000] [--max-retry-wait-ms MS=60000] [--fixed-clock] [--checkpoint FILE.safetensors]
    [--model DIR (with --engine policy or transformers.js)]
  --timeout-ms: per request to a URL engine (and per rollout); --max-retry-wait-ms: all Retry-After waits of
  one request to a URL engine answering 429 together, then the call fails.
  --n is the number of tasks; each runs --group-size times (n × K rollouts, at most ${MAX_ROLLOUTS}).
  Each rollout is appended to --out as it finishes (in the order they finish); on SIGINT / SIGTERM the
  finished ones and those cut short (state failed, with the calls they made) are kept and the file is closed.
  --fixed-clock stamps calls from a fake clock (with --workers 1 the output is byte-reproducible).
  --engine URL forwards to an OpenAI-compatible server (API key from OPENAI_API_KEY).
  --engine policy samples from the project's policy on the CPU engine (weights from --checkpoint, else a
    freshly initialised policy sized for the policy tokenizer); --tokenizer defaults to 'policy' then.
    With --model DIR (a Hugging Face llama / qwen2 / qwen3 folder) it samples from our engine on that
    folder's weights, with the folder's tokenizer and chat template.
  --engine transformers.js --model DIR samples the same folder in transformers.js (its generate() on
    onnxruntime-node's CPU EP; the folder exported as an HF ONNX decoder with KV cache, external data past
    2 GiB) and our CPU engine scores every response: each call keeps both log-probs (trainer_log_probs: the
    Trace view's log-prob gap) and the run prints max / mean |Δ log-prob|.
  behaviours: ${BEHAVIOURS.join(', ')}`;

function posInt(v: unknown, flag: string, dflt: number, min = 1, max = 2 ** 31 - 1): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
    throw new UsageError(`--${flag} must be an integer ≥ ${min}, got ${v}`);
  if (v > max) throw new UsageError(`--${flag} must be at most ${max}, got ${v}`);
  return v;
}

/** The project's policy on the CPU engine, from a checkpoint or freshly initialised for the tokenizer. */
async function policyEngine(
  tok: ChatTokenizer,
  checkpoint: string | undefined,
  seed: number,
): Promise<ChatEngine> {
  if (checkpoint !== undefined) {
    if (!existsSync(checkpoint)) throw new Error(`checkpoint ${checkpoint} does not exist`);
    const ck = await loadCheckpointFile(checkpoint);
    const { engine } = await createPolicyEngine({ backend: 'cpu', config: ck.config, params: ck.params });
    return new PolicyChatEngine(engine, tok, { seed, model: `policy/${basename(checkpoint)}` });
  }
  const config = { ...defaultConfig, vocabSize: tok.vocabSize, contextLength: 2048, seed: seed + 1 };
  const { engine } = await createPolicyEngine({ backend: 'cpu', config });
  return new PolicyChatEngine(engine, tok, { seed });
}

/** A clock that starts at 2025-01-01T00:00:00Z and advances 1 ms per reading. */
function fakeClock(): () => number {
  let t = Date.UTC(2025, 0, 1);
  return () => t++;
}

export const command: Command = {
  summary: 'run harness rollouts in worker threads against the in-process proxy; write traces as JSONL',
  usage,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      harness: { type: 'string' },
      engine: { type: 'string' },
      out: { type: 'string' },
      n: { type: 'number' },
      'group-size': { type: 'number' },
      split: { type: 'string' },
      behaviour: { type: 'string', multiple: true },
      seed: { type: 'number' },
      workers: { type: 'number' },
      tokenizer: { type: 'string' },
      model: { type: 'string' },
      'max-turns': { type: 'number' },
      'max-tokens': { type: 'number' },
      'max-context': { type: 'number' },
      'timeout-ms': { type: 'number' },
      'max-retry-wait-ms': { type: 'number' },
      'fixed-clock': { type: 'bool' },
      checkpoint: { type: 'string' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const harness = flags.harness as string | undefined;
    if (!harness) throw new UsageError('--harness is required');
    if (!isHarnessName(harness))
      throw new UsageError(`--harness must be one of ${HARNESSES.names().join(', ')}, got '${harness}'`);
    const engineSpec = flags.engine as string | undefined;
    if (!engineSpec) throw new UsageError('--engine is required');
    if (
      !['scripted', 'random', 'policy', 'transformers.js'].includes(engineSpec) &&
      !/^https?:\/\//.test(engineSpec)
    )
      throw new UsageError(
        `--engine must be scripted, random, policy, transformers.js or an http(s) URL, got '${engineSpec}'`,
      );
    const second = engineSpec === 'transformers.js';
    if (second && flags.model === undefined)
      throw new UsageError('--engine transformers.js needs --model DIR (a llama / qwen2 / qwen3 folder)');
    if (flags.checkpoint !== undefined && engineSpec !== 'policy')
      throw new UsageError('--checkpoint only applies to --engine policy');
    const modelDir = engineSpec === 'policy' || second ? (flags.model as string | undefined) : undefined;
    if (modelDir !== undefined && flags.checkpoint !== undefined)
      throw new UsageError('--engine policy takes --checkpoint or --model DIR, not both');
    if (modelDir !== undefined && flags.tokenizer !== undefined)
      throw new UsageError("--tokenizer does not apply with --model DIR (the folder's tokenizer is used)");
    const out = flags.out as string | undefined;
    if (!out) throw new UsageError('--out is required');
    const outBad = outputProblem(out);
    if (outBad) throw new UsageError(`--out: ${outBad}`);
    const split = splitFlag(flags.split);
    const behaviours = behaviourFlag(flags.behaviour);
    const seed = seedFlag(flags.seed);
    const spec: RunSpec = {
      harness,
      split: split as Split,
      n: posInt(flags.n, 'n', 8, 1, MAX_TASKS),
      groupSize: posInt(flags['group-size'], 'group-size', 1, 1, MAX_GROUP),
      seed,
      behaviours: [...new Set(behaviours)],
      maxTurns:
        flags['max-turns'] === undefined ? undefined : posInt(flags['max-turns'], 'max-turns', 1, 1, 1000),
    };
    if (spec.n * spec.groupSize > MAX_ROLLOUTS)
      throw new UsageError(
        `--n × --group-size must be at most ${MAX_ROLLOUTS} rollouts, got ${spec.n} × ${spec.groupSize}`,
      );
    // More workers than rollouts would only start idle threads.
    const workers = Math.min(posInt(flags.workers, 'workers', 4, 1, MAX_WORKERS), spec.n * spec.groupSize);
    // setTimeout fires at once for delays past 2^31−1 ms, which would fail every rollout.
    const timeoutMs = posInt(flags['timeout-ms'], 'timeout-ms', 60_000, 1, 2 ** 31 - 1);
    const maxRetryWaitMs = posInt(flags['max-retry-wait-ms'], 'max-retry-wait-ms', 60_000, 0, 2 ** 31 - 1);
    const maxTokens = posInt(flags['max-tokens'], 'max-tokens', 1024, 1, 1 << 20);
    const maxContext = posInt(flags['max-context'], 'max-context', 32768, 2, 1 << 24);
    let tokenizer: ReturnType<typeof loadTokenizer>;
    let brought: LoadedLlama | null = null;
    try {
      if (modelDir !== undefined) {
        brought = await loadLlamaModel(modelDir, { contextLength: maxContext });
        tokenizer = brought.tokenizer;
      } else
        tokenizer = loadTokenizer(
          (flags.tokenizer as string | undefined) ?? (engineSpec === 'policy' ? 'policy' : 'qwen3'),
        );
    } catch (e) {
      throw new UsageError(`${modelDir !== undefined ? '--model: ' : ''}${(e as Error).message}`);
    }
    const plan = planRollouts(spec);
    const taskOf = new Map(plan.map((p) => [p.job.rolloutId, p.task]));
    const h = getHarness(harness);
    let engine: ChatEngine;
    try {
      if (engineSpec === 'scripted') engine = expertEngine(tokenizer, h, taskOf, seed);
      else if (second && brought) {
        const loaded = brought;
        const made = await createTransformersFolderEngine(mapReader(exportLlamaHfFolder(loaded.folder)), {
          device: 'cpu',
          seed,
          model: `transformers.js/${loaded.folder.config.modelType}/${basename(loaded.dir)}`,
          tokenizer: () => loaded.tokenizer,
        });
        engine = made.engine;
      } else if (engineSpec === 'random') engine = new RandomEngine(tokenizer, seed);
      else if (brought)
        engine = new PolicyChatEngine(brought.engine, tokenizer, {
          seed,
          model: `${brought.folder.config.modelType}/${basename(brought.dir)}`,
        });
      else if (engineSpec === 'policy')
        engine = await policyEngine(tokenizer, flags.checkpoint as string, seed);
      else
        engine = new RemoteEngine(
          engineSpec,
          (flags.model as string | undefined) ?? 'default',
          process.env.OPENAI_API_KEY ?? '',
          undefined,
          // ids must index the vocabulary the trace will be read with; a hung server is cut at the timeout
          { vocabSize: tokenizer.vocabSize, vocabName: tokenizer.name, timeoutMs, maxRetryWaitMs },
        );
    } catch (e) {
      // e.g. a --tokenizer without a known end-of-turn token
      throw new UsageError(`--engine ${engineSpec}: ${(e as Error).message}`);
    }
    const proxy = new LlmProxy({
      engine,
      tokenizer: engineSpec.startsWith('http') ? null : tokenizer,
      maxResponseTokens: maxTokens,
      maxContextTokens: maxContext,
      now: flags['fixed-clock'] ? fakeClock() : undefined,
    });
    // The output is written as rollouts finish, so an interrupt or a crash keeps every finished rollout.
    let fd: number;
    try {
      fd = openSync(out, 'w');
    } catch (e) {
      throw new UsageError(`--out: cannot open ${out}: ${(e as Error).message}`);
    }
    const pool = new WorkerPool({
      size: workers,
      spawn: () => spawnNodeHarnessWorker(),
      connect: (port, current) => serveChannel(port, proxy.scoped(current)),
      timeoutMs,
    });
    let written = 0;
    let writeError: string | null = null;
    const stop = new AbortController();
    // every queued rollout listens on it
    setMaxListeners(plan.length + 16, stop.signal);
    let interrupted: NodeJS.Signals | null = null;
    // With a second engine, our engine scores each finished rollout before it is written (in finishing order).
    let scoring: Promise<void> = Promise.resolve();
    const ours = second ? brought?.engine : undefined;
    const writeNow = (r: Rollout) => {
      if (writeError) return;
      // Interrupted: a rollout cut short keeps what it recorded (failed, with the reason); one that never
      // started has nothing to keep.
      if (interrupted && r.state === 'failed' && r.error === 'cancelled') {
        if (r.calls.length === 0) return;
        r.error = `interrupted by ${interrupted}`;
      }
      try {
        writeSync(fd, rolloutToJsonlLine(r));
        written++;
      } catch (e) {
        writeError = (e as Error).message;
        stop.abort();
      }
    };
    const write = (r: Rollout) => {
      if (!ours) return writeNow(r);
      scoring = scoring.then(async () => {
        try {
          await annotateEngineGap([r], ours);
        } catch (e) {
          writeError ??= `scoring ${r.rolloutId} with our engine: ${(e as Error).message}`;
          stop.abort();
          return;
        }
        writeNow(r);
      });
    };
    let interruptedAt = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      if (interrupted) {
        // One Ctrl-C can arrive twice (from the terminal and relayed by a wrapper such as tsx or npm): only a
        // second one a moment later means "leave now", with what is written.
        if (Date.now() - interruptedAt < 3000) return;
        closeSync(fd);
        process.exit(sig === 'SIGINT' ? EXIT.sigint : EXIT.sigterm);
      }
      interrupted = sig;
      interruptedAt = Date.now();
      console.error(`lab rollout: ${sig}: stopping; finished rollouts are kept in ${out}`);
      stop.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const tStart = performance.now();
    let rollouts: Rollout[];
    let t0 = tStart;
    try {
      // Rollout throughput is measured from when every worker has loaded; start-up is reported on its own.
      await Promise.race([
        pool.ready(),
        new Promise<void>((r) => stop.signal.addEventListener('abort', () => r(), { once: true })),
      ]);
      t0 = performance.now();
      rollouts = await runRollouts(spec, plan, proxy, pool, { signal: stop.signal, onRollout: write });
      await scoring;
    } finally {
      pool.close();
      closeSync(fd);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    if (writeError) throw new CommandError(`cannot write ${out}: ${writeError}`, 1);
    const secs = (performance.now() - t0) / 1000;
    const failed = rollouts.filter((r) => r.state === 'failed');
    const rewards = rollouts.map((r) => r.finalReward ?? 0);
    const mean = rewards.reduce((a, b) => a + b, 0) / Math.max(1, rewards.length);
    const calls = rollouts.reduce((a, r) => a + r.calls.length, 0);
    if (interrupted) {
      const done = rollouts.filter((r) => r.state === 'succeeded').length;
      console.log(
        `rollout: interrupted by ${interrupted}: ${written} rollouts written (${done} finished, ` +
          `${written - done} cut short or failed), ${plan.length - written} not run → ${out}`,
      );
      return interrupted === 'SIGINT' ? EXIT.sigint : EXIT.sigterm;
    }
    console.log(
      `rollout: ${rollouts.length} rollouts (${failed.length} failed), ${calls} calls, mean reward ${mean.toFixed(3)}, ` +
        `${secs.toFixed(2)} s, ${(rollouts.length / secs).toFixed(1)} rollouts/s ` +
        `(+${((t0 - tStart) / 1000).toFixed(2)} s worker start-up) → ${out}`,
    );
    if (ours) console.log(`  transformers.js vs our CPU engine: ${engineGapLine(engineGapOf(rollouts))}`);
    for (const f of failed.slice(0, 5)) console.log(`  failed ${f.rolloutId}: ${f.error}`);
    return 0;
  },
};
