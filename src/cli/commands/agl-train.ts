/**
 * `lab agl-train`: the agl-cpu template's trainer, a minimal training loop over an Agent Lightning gateway
 * (until `lab train --rollout-source agl` takes its place). Per step, as Agent Lightning's trainer runs a step:
 * enqueue `train_batch_size` tasks × `rollout_n` rollouts (the local controller runs each through
 * harness_lab_cluster.agent → `lab agent`, talking to the gateway's proxy, which forwards to `lab policy-server`),
 * wait for all of them, pause the proxy and drain it, ONE update with core's effective weights on the CPU
 * engine (train/aglStep.ts), push the weights to the policy server and publish the new version through
 * `/api/models`, resume, then delete the consumed rollouts a second later. Metrics go to verl's console logger
 * (stdout) and file logger (`--metrics-file`, `{"step", "data"}` JSONL).
 *
 * The job's parameters are read from `--job job.json` and checked against the agl-cpu template's specs; the
 * gateway key comes from $HL_AGL_KEY (never the command line).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import type { TraceAggregatorLevel } from '../../core/aggregate/buildTrainingBatch';
import type { LossMode } from '../../core/algos/effectiveWeights';
import {
  AGENT_CLASS,
  AGENT_ENV_MAP,
  checkTemplateParams,
  jobTemplates,
} from '../../server/protocol/templates';
import { AglGatewayClient, AglRolloutSource, type AglTaskInput, causeOf } from '../../train/aglSource';
import { updateOnRollouts } from '../../train/aglStep';
import { formatConsoleLine, formatFileLoggerLine } from '../../train/verlLog';
import { aglCpuPolicy, HARNESS_CATALOGUE } from '../aglCpu';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { encodeWeightPush } from '../policyServer';
import { loadTokenizer } from '../tokenizers';

const INT_METRICS = new Set([
  'harness_lab/policy_version',
  'harness_lab/rollouts',
  'harness_lab/rollouts_failed',
]);

/**
 * Pushes the weights to the policy server. A push is idempotent (same version, same bytes), so a transport
 * failure (typically a kept-alive connection the server closed while the trainer was updating) is retried.
 */
async function pushWeights(policyUrl: string, params: Float32Array, version: number): Promise<void> {
  const origin = policyUrl.replace(/\/v1\/?$/, '');
  const body = JSON.stringify(encodeWeightPush(params, version));
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`${origin}/weights`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    } catch (e) {
      if (attempt < 3) {
        await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
        continue;
      }
      throw new Error(`policy server at ${origin} unreachable for the weight push: ${causeOf(e)}`);
    }
    if (res.status !== 200)
      throw new Error(`policy server refused the weight push (HTTP ${res.status}): ${await res.text()}`);
    return;
  }
}

export const command: Command = {
  summary: 'train the policy on rollouts from an Agent Lightning gateway (the agl-cpu template’s trainer)',
  usage: `HL_AGL_KEY=… lab agl-train --job job.json --agl-url URL --policy-url URL/v1 --tokenizer policy|DIR
    [--model NAME=harness-lab-policy] [--metrics-file FILE] [--checkpoint FILE] [--delete-after-ms MS=1000]`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      job: { type: 'string' },
      'agl-url': { type: 'string' },
      'policy-url': { type: 'string' },
      tokenizer: { type: 'string' },
      model: { type: 'string' },
      'metrics-file': { type: 'string' },
      checkpoint: { type: 'string' },
      'delete-after-ms': { type: 'number' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    for (const f of ['job', 'agl-url', 'policy-url', 'tokenizer'])
      if (!flags[f]) throw new UsageError(`--${f} is required`);
    let job: { template?: unknown; params?: unknown };
    try {
      job = JSON.parse(readFileSync(flags.job as string, 'utf8'));
    } catch (e) {
      throw new UsageError(`--job ${flags.job}: ${(e as Error).message}`);
    }
    if (job.template !== 'agl-cpu')
      throw new UsageError(`--job: template must be agl-cpu, got ${JSON.stringify(job.template)}`);
    let p: ReturnType<typeof checkTemplateParams>['params'];
    try {
      p = checkTemplateParams(jobTemplates(HARNESS_CATALOGUE), 'agl-cpu', job.params).params;
    } catch (e) {
      throw new UsageError(`--job: ${(e as Error).message}`);
    }
    const key = process.env.HL_AGL_KEY ?? process.env.AGL_KEY ?? '';
    const tok = loadTokenizer(flags.tokenizer as string);
    const seed = p.seed as number;
    const engine = await aglCpuPolicy(tok, seed, flags.checkpoint as string | undefined);
    engine.optimizer = { ...engine.optimizer, lr: p.lr as number };
    const model = (flags.model as string | undefined) ?? 'harness-lab-policy';
    const policyUrl = flags['policy-url'] as string;
    const client = new AglGatewayClient(flags['agl-url'] as string, key);
    await client.health();
    const source = new AglRolloutSource({
      client,
      model,
      endpoint: policyUrl,
      agentClass: AGENT_CLASS,
      envMap: AGENT_ENV_MAP,
      deleteAfterMs: (flags['delete-after-ms'] as number | undefined) ?? 1000,
      // the policy speaks the project's own vocabulary (the page decodes ids with it)
      tokenizer: 'policy',
    });
    const metricsFile = flags['metrics-file'] as string | undefined;
    const lossMode: LossMode =
      p.policy_loss_mode === 'per_rollout_mean' ? 'per_rollout_mean' : (p.loss_agg_mode as LossMode);

    // The policy server starts from the same seeded weights; pushing them makes that a fact, not an assumption.
    await pushWeights(policyUrl, await engine.getParams(), 0);
    await source.publish(0);
    const steps = p.total_training_steps as number;
    const batchSize = p.train_batch_size as number;
    for (let step = 1; step <= steps; step++) {
      const t0 = performance.now();
      const tasks: AglTaskInput[] = [];
      for (let i = 0; i < batchSize; i++) {
        const index = (step - 1) * batchSize + i;
        tasks.push({
          harness: p.harness as string,
          split: 'train',
          seed,
          index,
          behaviour: p.behaviour as string,
          data_id: `${p.harness}-train-s${seed}-${index}`,
        });
      }
      const handles = await source.enqueue(step, tasks, p.rollout_n as number);
      const rollouts = await source.collect(handles);
      const tGen = performance.now();
      const drain = await source.pause(`update step=${step}`);
      const { metrics } = await updateOnRollouts(engine, rollouts, {
        level: p.trace_aggregator_level as TraceAggregatorLevel,
        maxPromptLength: p.max_prompt_length as number,
        maxResponseLength: p.max_response_length as number,
        advEstimator: p.adv_estimator as string,
        normAdvByStd: p.norm_adv_by_std_in_grpo as boolean,
        rolloutLevel: p.enable_rollout_level_advantage as boolean,
        lossMode,
        clipRatioLow: p.clip_ratio_low as number,
        clipRatioHigh: p.clip_ratio_high as number,
      });
      const tUpd = performance.now();
      await pushWeights(policyUrl, await engine.getParams(), step);
      await source.publish(step);
      const tSync = performance.now();
      await source.resume();
      source.release(handles);
      metrics['timing_s/gen'] = (tGen - t0) / 1000;
      metrics['timing_s/update_weights'] = (tSync - tUpd) / 1000;
      metrics['timing_s/step'] = (performance.now() - t0) / 1000;
      metrics['training/async/proxy_inflight_at_pause'] = drain.inflightAtPause;
      metrics['training/async/proxy_drain_seconds'] = drain.drainSeconds;
      metrics['harness_lab/policy_version'] = step;
      metrics['harness_lab/rollouts'] = rollouts.length;
      metrics['harness_lab/rollouts_failed'] = rollouts.filter((r) => r.state === 'failed').length;
      if (metricsFile) appendFileSync(metricsFile, `${formatFileLoggerLine(step, metrics)}\n`);
      console.log(formatConsoleLine(step, metrics, INT_METRICS));
    }
    await source.close();
    for (const e of source.deleteErrors) console.error(`agl-train: ${e}`);
    return 0;
  },
};
