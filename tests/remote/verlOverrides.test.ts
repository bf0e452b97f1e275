/**
 * The agl-verl template's Hydra overrides compose against the real configs: Agent Lightning 1.0.0's
 * `agentlightning/verl/config.yaml` on verl 0.8.0's `ppo_trainer` YAML from the installed wheels (file://
 * search path, no torch), and every override lands on its upstream key with the parameter's value. Hydra's
 * struct mode refuses keys that do not exist, so a misspelt key fails here.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { HARNESS_CATALOGUE } from '../../src/cli/aglCpu';
import { PROJECT_ROOT } from '../../src/cli/clusterBundle';
import type { ParamValues } from '../../src/server/protocol/params';
import { aglVerlOverrides, checkTemplateParams, jobTemplates } from '../../src/server/protocol/templates';

const templates = jobTemplates(HARNESS_CATALOGUE);
const python = join(inject('clusterVenv'), 'bin', 'python');
const dir = mkdtempSync(join(tmpdir(), 'hl-hydra-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Composes the overrides with the installed wheels; returns each key's composed value. */
function compose(overrides: string[], name: string): Record<string, unknown> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(overrides));
  const keys = overrides.map((o) => o.replace(/^\+/, '').split('=')[0]);
  const out = execFileSync(
    python,
    ['-m', 'harness_lab_cluster.verl_config', file, '--keys', keys.join(',')],
    {
      cwd: join(PROJECT_ROOT, 'python'),
      encoding: 'utf8',
    },
  );
  return JSON.parse(out) as Record<string, unknown>;
}

/** The value an override string sets, as Hydra parses simple values. */
function expected(value: string): unknown {
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^\[.*\]$/.test(value)) return value.slice(1, -1).split(',');
  if (/^-?\d+$/.test(value)) return Number(value);
  if (/^-?(\d+\.\d*|\d*\.\d+|\d+)(e-?\d+)?$/i.test(value)) return Number(value);
  return value;
}

function check(params: ParamValues, name: string) {
  const overrides = aglVerlOverrides(params);
  const got = compose(overrides, name);
  expect(got._versions).toEqual({
    agentlightning: '1.0.0',
    verl: '0.8.0',
    'hydra-core': '1.3.2',
    omegaconf: '2.3.0',
  });
  for (const o of overrides) {
    const [key, ...rest] = o.replace(/^\+/, '').split('=');
    expect(got[key], o).toEqual(expected(rest.join('=')));
  }
  return got;
}

describe('agl-verl overrides against the real Agent Lightning + verl configs', () => {
  it('the defaults compose', () => {
    const { params } = checkTemplateParams(templates, 'agl-verl', {});
    const got = check(params, 'defaults');
    expect(got['actor_rollout_ref.actor.policy_loss.loss_mode']).toBe('per_rollout_mean');
    expect(got['agentlightning.local.agent_class']).toBe('harness_lab_cluster.agent:HarnessLabAgent');
  });

  it('every estimator, loss aggregation, policy loss and level the template offers composes', () => {
    const specs = new Map(templates['agl-verl'].params.map((p) => [p.name, p]));
    const values = (n: string) => {
      const s = specs.get(n);
      if (s?.kind !== 'enum') throw new Error(n);
      return s.values.map((v) => v.value);
    };
    const est = values('adv_estimator');
    const agg = values('loss_agg_mode');
    const pol = values('policy_loss_mode');
    const lvl = values('trace_aggregator_level');
    const n = Math.max(est.length, agg.length, pol.length, lvl.length);
    for (let i = 0; i < n; i++) {
      const { params } = checkTemplateParams(templates, 'agl-verl', {
        adv_estimator: est[i % est.length],
        loss_agg_mode: agg[i % agg.length],
        policy_loss_mode: pol[i % pol.length],
        trace_aggregator_level: lvl[i % lvl.length],
        norm_adv_by_std_in_grpo: i % 2 === 0,
        enable_rollout_level_advantage: i % 3 !== 0,
        async_rollout: i % 2 === 1,
        rollout_n: 2 + i,
        lr: 3e-7,
        model_path: '/models/Qwen3-8B',
        nnodes: 2,
        n_gpus_per_node: 8,
      });
      check(params, `case-${i}`);
    }
  });

  it('a misspelt key does not compose (the check can fail)', () => {
    expect(() => compose(['algorithm.adv_estimatr=grpo'], 'typo')).toThrow(
      /Could not override 'algorithm\.adv_estimatr'/,
    );
  });
});

describe("the agl-verl trainer's launch", () => {
  it('composes the job.json overrides with the run-time keys and builds the task datasets (dry run)', () => {
    const { params } = checkTemplateParams(templates, 'agl-verl', {
      train_batch_size: 4,
      ppo_mini_batch_size: 4,
      total_training_steps: 3,
    });
    const job = join(dir, 'job.json');
    writeFileSync(
      job,
      JSON.stringify({ template: 'agl-verl', params, hydra_overrides: aglVerlOverrides(params) }),
    );
    const out = execFileSync(
      python,
      ['-m', 'harness_lab_cluster.verl_run', job, '--agl-url', 'http://127.0.0.1:9', '--dry-run'],
      {
        cwd: join(PROJECT_ROOT, 'python'),
        encoding: 'utf8',
        env: {
          ...process.env,
          HL_AGL_KEY: 'k-123',
          HL_RUN_ID: 'run-x',
          HL_CHECKPOINT_DIR: '',
          VERL_FILE_LOGGER_PATH: '/tmp/hl-job/metrics.jsonl',
        },
      },
    );
    const got = JSON.parse(out);
    expect(got).toMatchObject({
      'agentlightning.agl_base_url': 'http://127.0.0.1:9',
      'agentlightning.agl_key_is_env': true,
      'trainer.logger': ['console', 'file'],
      'trainer.save_freq': 1,
      'trainer.test_freq': 1,
      // verl's file logger runs in the task-runner actor: the path travels in the runtime_env it is created with
      'ray_kwargs.ray_init.runtime_env': { env_vars: { VERL_FILE_LOGGER_PATH: '/tmp/hl-job/metrics.jsonl' } },
      // verl's own PPO env vars join them where verl imports (the GPU stack); not in this torch-less venv
      runtime_env_has_verl_defaults: false,
      train_rows: 12,
      val_rows: 4,
      first_train_row: {
        // the template's harness defaults to the field table's run default
        harness: 'instruction-short',
        split: 'train',
        seed: 0,
        index: 0,
        data_id: 'instruction-short-train-s0-0',
      },
    });
    expect(got['trainer.default_local_dir']).toMatch(/\/harness-lab-checkpoints\/run-x$/);
    expect(out).not.toContain('k-123');
  });

  it('refuses lengths over the model context before anything is allocated', () => {
    const model = join(dir, 'tiny-model');
    mkdirSync(model, { recursive: true });
    writeFileSync(join(model, 'config.json'), JSON.stringify({ max_position_embeddings: 1024 }));
    const { params } = checkTemplateParams(templates, 'agl-verl', {
      model_path: model,
      max_prompt_length: 512,
      max_response_length: 1024,
    });
    const job = join(dir, 'job-long.json');
    writeFileSync(
      job,
      JSON.stringify({ template: 'agl-verl', params, hydra_overrides: aglVerlOverrides(params) }),
    );
    const r = spawnSync(
      python,
      ['-m', 'harness_lab_cluster.verl_run', job, '--agl-url', 'http://127.0.0.1:9', '--dry-run'],
      {
        cwd: join(PROJECT_ROOT, 'python'),
        encoding: 'utf8',
        env: { ...process.env, HL_AGL_KEY: 'k', VERL_FILE_LOGGER_PATH: '/tmp/m.jsonl' },
      },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /max_prompt_length \+ max_response_length \(512 \+ 1024 = 1536\) exceed the context of .*tiny-model \(1024 tokens\)/,
    );
  });
});
