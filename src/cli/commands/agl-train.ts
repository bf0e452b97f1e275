/**
 * `lab agl-train`: the agl-cpu template's trainer. It is `lab train`'s loop (train/run.ts `TrainRun`, the same
 * steps on core's trainer pipeline) with the rollouts coming from an Agent Lightning gateway instead of local
 * workers: the gateway's local controller runs each rollout through harness_lab_cluster.agent → `lab agent`,
 * talking to the gateway's proxy, which forwards to `lab policy-server` (train/aglSource.ts `AglGatewaySource`).
 * Per step, as Agent Lightning's trainer runs one: enqueue `train_batch_size` tasks × `rollout_n` rollouts, wait for
 * all of them, pause the proxy and drain it, recompute old log-probs, advantages and the PPO update on the CPU
 * engine, push the weights to the policy server and publish the new version through `/api/models`, resume.
 * The policy starts from the harness's shipped SFT checkpoint (`--checkpoint`; the policy server loads the same
 * file). Metrics go to verl's console logger (stdout) and file logger (`--metrics-file`, `{"step", "data"}` JSONL).
 *
 * The job's parameters are read from `--job job.json` and checked against the agl-cpu template's specs; the
 * gateway key comes from $HL_AGL_KEY (never the command line).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import type { TaskBase } from '../../harness/harness';
import { getHarness } from '../../harness/registry';
import {
  AGENT_CLASS,
  AGENT_ENV_MAP,
  checkTemplateParams,
  jobTemplates,
} from '../../server/protocol/templates';
import { AglGatewayClient, AglGatewaySource, causeOf } from '../../train/aglSource';
import type { RolloutEngine } from '../../train/rolloutEngine';
import { TrainRun } from '../../train/run';
import type { GroupRequest } from '../../train/source';
import { formatConsoleLine, formatFileLoggerLine } from '../../train/verlLog';
import { aglCpuPolicy, aglCpuTrainConfig, HARNESS_CATALOGUE } from '../aglCpu';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { encodeWeightPush } from '../policyServer';
import { loadTokenizer } from '../tokenizers';

const INT_METRICS = new Set(['lab/policy_version', 'lab/n_rollouts', 'lab/n_failed_rollouts']);

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

/** The rollout engine of an agl-cpu run: `lab policy-server` serves the policy; a sync pushes the weights to it. */
class PolicyServerRolloutEngine implements RolloutEngine {
  readonly kind = 'policy-server';
  version = 0;
  constructor(private readonly url: string) {}
  chat(): never {
    throw new Error('the agents of an agl-cpu run talk to the gateway’s proxy, not to the trainer');
  }
  async syncWeights(params: Float32Array, version: number): Promise<void> {
    await pushWeights(this.url, params, version);
    this.version = version;
  }
  dispose(): void {}
}

export const command: Command = {
  summary: 'train the policy on rollouts from an Agent Lightning gateway (the agl-cpu template’s trainer)',
  usage: `HL_AGL_KEY=… lab agl-train --job job.json --agl-url URL --policy-url URL/v1 --tokenizer policy|DIR
    [--checkpoint FILE] [--model NAME=harness-lab-policy] [--metrics-file FILE] [--delete-after-ms MS=1000]`,
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
    const policy = await aglCpuPolicy(tok, seed, flags.checkpoint as string | undefined);
    let config: ReturnType<typeof aglCpuTrainConfig>;
    try {
      config = aglCpuTrainConfig(p, policy.config.contextLength);
    } catch (e) {
      throw new UsageError(`--job: ${(e as Error).message}`);
    }
    const model = (flags.model as string | undefined) ?? 'harness-lab-policy';
    const policyUrl = flags['policy-url'] as string;
    const client = new AglGatewayClient(flags['agl-url'] as string, key);
    await client.health();
    // The agent regenerates a task from (harness, split, seed, index): the loop's task sets are those prefixes.
    const harness = getHarness(config.lab.harness);
    if (config.lab.task_level !== null)
      throw new UsageError(
        `lab.task_level (${config.lab.task_level}) is not supported here: the agent regenerates a task from (harness, split, seed, index) at the harness's mix of levels`,
      );
    const indexOf = new Map<string, number>();
    const index = (split: 'train' | 'val', tasks: TaskBase[]) => {
      for (const [i, t] of tasks.entries()) indexOf.set(`${split}/${t.id}`, i);
    };
    index('train', harness.makeTasks('train', seed, config.lab.train_tasks));
    index('val', harness.makeTasks('val', seed, config.lab.val_tasks));
    const input = (g: GroupRequest) => {
      const i = indexOf.get(`${g.split}/${g.task.id}`);
      if (i === undefined)
        throw new Error(`task ${g.task.id} is not in the ${g.split} split of seed ${seed}`);
      return {
        harness: config.lab.harness,
        split: g.split,
        seed,
        index: i,
        behaviour: p.behaviour as string,
      };
    };
    const sourceFor = (isTrain: boolean) =>
      new AglGatewaySource({
        client,
        model,
        endpoint: policyUrl,
        agentClass: AGENT_CLASS,
        envMap: AGENT_ENV_MAP,
        isTrain,
        input,
        deleteAfterMs: (flags['delete-after-ms'] as number | undefined) ?? 1000,
        // the policy speaks the project's own vocabulary (the page decodes ids with it)
        tokenizer: 'policy',
      });
    const source = sourceFor(true);
    const valSource = sourceFor(false);
    const metricsFile = flags['metrics-file'] as string | undefined;
    const rolloutEngine = new PolicyServerRolloutEngine(policyUrl);
    // The policy server loads the same initial weights; pushing them makes that a fact, not an assumption.
    await rolloutEngine.syncWeights(await policy.getParams(), 0);
    source.setPolicyVersion(0);
    await source.settled();
    const run = new TrainRun({
      config,
      policy,
      tokenizer: tok,
      rolloutEngine,
      source,
      valSource,
      onEvent: (e) => {
        if (e.type !== 'step') return;
        const data: Record<string, number> = {};
        for (const [k, v] of Object.entries(e.metrics)) data[k] = v ?? Number.NaN;
        if (metricsFile) appendFileSync(metricsFile, `${formatFileLoggerLine(e.step, data)}\n`);
        console.log(formatConsoleLine(e.step, data, INT_METRICS));
      },
    });
    try {
      await run.run();
      await source.settled();
    } finally {
      source.close();
      valSource.close();
      await Promise.all([source.drained(), valSource.drained()]);
      for (const err of [...source.deleteErrors, ...valSource.deleteErrors])
        console.error(`agl-train: ${err}`);
    }
    return 0;
  },
};
