/**
 * From a checked template + parameters to a Ray job: the working_dir package (the Python glue, the bundled CLI,
 * the policy tokenizer and job.json) and the submit spec. One builder per template name; the compiler demands
 * a builder for every name in the registry. Nothing here takes a string from a request: entrypoints are
 * fixed, env vars are the gateway's own, and job.json carries only checked parameter values.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Zippable, zipSync } from 'fflate';
import { sftCheckpointPath } from '../train/models';
import type { ParamValues } from './protocol/params';
import { aglVerlOverrides, type TemplateName } from './protocol/templates';
import { aglVerlClusterFit } from './protocol/verlPlan';
import type { NodeSummary, SubmitSpec } from './ray';

export interface JobContext {
  runId: string;
  submissionId: string;
  /** the job's Agent Lightning gateway key (generated per run, kept server-side) */
  aglKey: string;
  /** where the job's Agent Lightning gateway binds (gateway configuration) */
  aglHost: string;
  /** project root: python/, public/tokenizer/ */
  root: string;
  /** the bundled cluster CLI (cli/clusterBundle.ts) */
  clusterCli: string;
}

interface TemplateJob {
  /** job.json beyond {template, params} */
  job: (p: ParamValues) => Record<string, unknown>;
  /** project files the job needs besides the common ones: path in the package → path under the project root */
  files?: (p: ParamValues) => Record<string, string>;
  entrypointNumCpus: number;
  /** why the cluster cannot run these parameters (checked before submission), or null */
  clusterFit?: (p: ParamValues, cluster: NodeSummary) => string | null;
}

/** Where an agl-cpu job finds the harness's shipped SFT checkpoint (its initial policy) in its package. */
const aglCpuCheckpoint = (p: ParamValues) => `checkpoints/${p.harness}.safetensors`;

const JOBS: Record<TemplateName, TemplateJob> = {
  'agl-cpu': {
    job: (p) => ({
      policy_server_args: [
        '--tokenizer',
        'tokenizer',
        '--seed',
        String(p.seed),
        '--max-tokens',
        String(p.max_response_length),
        '--port',
        '0',
        '--checkpoint',
        aglCpuCheckpoint(p),
      ],
      // the cluster CLI command that trains; the launcher appends --agl-url, --policy-url, --model, --metrics-file
      trainer_command: [
        'agl-train',
        '--job',
        'job.json',
        '--tokenizer',
        'tokenizer',
        '--checkpoint',
        aglCpuCheckpoint(p),
      ],
      max_parallel_rollouts: (p.train_batch_size as number) * (p.rollout_n as number),
    }),
    // both the policy server and the trainer start from the harness's shipped SFT checkpoint
    files: (p) => ({ [aglCpuCheckpoint(p)]: `public/${sftCheckpointPath(p.harness as string)}` }),
    entrypointNumCpus: 1,
  },
  'agl-verl': {
    job: (p) => ({
      hydra_overrides: aglVerlOverrides(p),
      max_parallel_rollouts: Math.min(256, (p.train_batch_size as number) * (p.rollout_n as number)),
      // several nodes: the trainer's actors on other nodes must reach the job's Agent Lightning gateway
      multi_node: (p.nnodes as number) > 1,
    }),
    entrypointNumCpus: 1,
    clusterFit: aglVerlClusterFit,
  },
};

/** Why the cluster cannot run this template with these parameters, or null. */
export function clusterFit(template: TemplateName, params: ParamValues, cluster: NodeSummary): string | null {
  return JOBS[template].clusterFit?.(params, cluster) ?? null;
}

/** A zip whose bytes depend only on the file contents (fixed times), so an unchanged package is not re-uploaded. */
function deterministicZip(files: Record<string, Uint8Array>): Uint8Array {
  const tree: Zippable = {};
  for (const name of Object.keys(files).sort())
    tree[name] = [files[name], { mtime: new Date('2020-01-01T00:00:00Z') }];
  return zipSync(tree, { level: 6 });
}

export function jobPackage(template: TemplateName, params: ParamValues, ctx: JobContext): Uint8Array {
  const files: Record<string, Uint8Array> = {};
  const py = join(ctx.root, 'python', 'harness_lab_cluster');
  for (const f of readdirSync(py).filter((n) => n.endsWith('.py')))
    files[`harness_lab_cluster/${f}`] = readFileSync(join(py, f));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
    const p = join(ctx.root, 'public', 'tokenizer', f);
    if (!existsSync(p)) throw new Error(`the policy tokenizer is missing: ${p}`);
    files[`tokenizer/${f}`] = readFileSync(p);
  }
  if (!existsSync(ctx.clusterCli)) throw new Error(`the bundled cluster CLI is missing: ${ctx.clusterCli}`);
  files['cluster/lab.mjs'] = readFileSync(ctx.clusterCli);
  for (const [to, from] of Object.entries(JOBS[template].files?.(params) ?? {})) {
    const p = join(ctx.root, from);
    if (!existsSync(p)) throw new Error(`a file the ${template} job needs is missing: ${p}`);
    files[to] = readFileSync(p);
  }
  const job = { template, params, ...JOBS[template].job(params) };
  files['job.json'] = new TextEncoder().encode(JSON.stringify(job, null, 1));
  return deterministicZip(files);
}

export function submitSpec(template: TemplateName, workingDirUri: string, ctx: JobContext): SubmitSpec {
  return {
    entrypoint: 'python -m harness_lab_cluster.launch job.json',
    submissionId: ctx.submissionId,
    runtimeEnv: {
      working_dir: workingDirUri,
      env_vars: {
        HL_AGL_KEY: ctx.aglKey,
        HL_AGL_HOST: ctx.aglHost,
        HL_RUN_ID: ctx.runId,
        PYTHONUNBUFFERED: '1',
      },
    },
    metadata: { harness_lab_run: ctx.runId, harness_lab_template: template },
    entrypointNumCpus: JOBS[template].entrypointNumCpus,
  };
}
