/**
 * The agl-verl template's checks across parameters (server/protocol/verlPlan.ts) through the template
 * registry, as a submission meets them: each rule refuses its counter-example naming the parameter and the
 * numbers, the defaults and a real multi-node shape pass; the cluster fit refuses a 0-GPU or too-small
 * cluster; checkpoints and validation are on by default in the overrides.
 */
import { describe, expect, it } from 'vitest';
import { HARNESS_CATALOGUE } from '../../src/cli/aglCpu';
import { ParamError } from '../../src/server/protocol/params';
import { aglVerlOverrides, checkTemplateParams, jobTemplates } from '../../src/server/protocol/templates';
import { aglVerlClusterFit, aglVerlSchedule } from '../../src/server/protocol/verlPlan';

const templates = jobTemplates(HARNESS_CATALOGUE);
const verl = (params: Record<string, unknown>) => checkTemplateParams(templates, 'agl-verl', params).params;
function refusal(params: Record<string, unknown>): ParamError {
  try {
    verl(params);
  } catch (e) {
    if (e instanceof ParamError) return e;
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(params)}`);
}

describe('agl-verl cross-parameter checks', () => {
  it('the defaults and an 8-GPU × 2-node shape pass', () => {
    expect(() => verl({})).not.toThrow();
    expect(() =>
      verl({
        nnodes: 2,
        n_gpus_per_node: 8,
        tensor_model_parallel_size: 4,
        train_batch_size: 32,
        rollout_n: 8,
      }),
    ).not.toThrow();
  });

  it('train_batch_size × rollout_n must divide over the GPUs', () => {
    const e = refusal({ n_gpus_per_node: 8, train_batch_size: 3, ppo_mini_batch_size: 3, rollout_n: 2 });
    expect(e.field).toBe('params.train_batch_size');
    expect(e.message).toMatch(
      /\(3 × 2 = 6\) must be divisible by the GPUs, nnodes × n_gpus_per_node \(1 × 8 = 8\)/,
    );
  });

  it('mini-batches: at most the batch, and divisible over the GPUs', () => {
    expect(refusal({ train_batch_size: 8, ppo_mini_batch_size: 16 }).field).toBe(
      'params.ppo_mini_batch_size',
    );
    const e = refusal({ n_gpus_per_node: 4, train_batch_size: 8, ppo_mini_batch_size: 1, rollout_n: 2 });
    expect(e.field).toBe('params.ppo_mini_batch_size');
    expect(e.message).toMatch(/\(1 × 2 = 2\) must be divisible by the GPUs \(4\)/);
  });

  it('tensor parallelism must fit the GPUs and the nodes', () => {
    expect(refusal({ tensor_model_parallel_size: 2 }).message).toMatch(
      /parallelism 2 must divide the GPUs \(1\)/,
    );
    const within = refusal({
      n_gpus_per_node: 6,
      train_batch_size: 6,
      ppo_mini_batch_size: 6,
      tensor_model_parallel_size: 4,
      nnodes: 2,
    });
    expect(within.field).toBe('params.tensor_model_parallel_size');
    expect(within.message).toMatch(/must divide n_gpus_per_node \(6\)/);
    const across = refusal({
      n_gpus_per_node: 4,
      nnodes: 3,
      train_batch_size: 12,
      ppo_mini_batch_size: 12,
      tensor_model_parallel_size: 6,
    });
    expect(across.message).toMatch(/spans nodes, so it must be a multiple of n_gpus_per_node \(4\)/);
    expect(() =>
      verl({
        n_gpus_per_node: 4,
        nnodes: 2,
        train_batch_size: 8,
        ppo_mini_batch_size: 8,
        tensor_model_parallel_size: 8,
      }),
    ).not.toThrow();
  });

  it('model_path stays where it is named: no . or .. segments', () => {
    for (const p of ['../secrets', '/models/../etc', 'a/./b']) {
      const e = refusal({ model_path: p });
      expect(e.field).toBe('params.model_path');
      expect(e.message).toMatch(/must not contain '\.' or '\.\.' segments/);
    }
    expect(() => verl({ model_path: '/models/Qwen3-8B' })).not.toThrow();
    expect(() => verl({ model_path: 'Qwen/Qwen2.5-0.5B-Instruct' })).not.toThrow();
  });
});

describe('agl-verl against the cluster, and its schedule', () => {
  it('needs GPUs: a 0-GPU cluster and a too-small one are refused', () => {
    const p = verl({ nnodes: 2, n_gpus_per_node: 4, train_batch_size: 8, ppo_mini_batch_size: 8 });
    expect(aglVerlClusterFit(p, { nodes: 1, gpus: 0 })).toMatch(/needs GPUs and this Ray cluster has none/);
    expect(aglVerlClusterFit(p, { nodes: 2, gpus: 4 })).toMatch(/asks for 8 GPU\(s\) .* has 4/);
    expect(aglVerlClusterFit(p, { nodes: 1, gpus: 8 })).toMatch(/asks for 2 node\(s\)/);
    expect(aglVerlClusterFit(p, { nodes: 3, gpus: 12 })).toBeNull();
  });

  it('checkpoints and validation every tenth of the run by default', () => {
    const p = verl({ total_training_steps: 100 });
    expect(aglVerlSchedule(p)).toEqual({ saveFreq: 10, testFreq: 10 });
    expect(aglVerlOverrides(p)).toEqual(
      expect.arrayContaining(['trainer.save_freq=10', 'trainer.test_freq=10']),
    );
    expect(aglVerlSchedule(verl({ total_training_steps: 3 }))).toEqual({ saveFreq: 1, testFreq: 1 });
  });
});
