/**
 * What the agl-verl template's parameters must satisfy together, checked before anything is submitted, so a
 * run that verl 0.8.0 would refuse fails at the gateway instead of after GPUs are allocated. Each rule names
 * the verl code that enforces it on the cluster:
 *
 * - `data.train_batch_size × actor_rollout_ref.rollout.n` divisible by `trainer.nnodes × n_gpus_per_node`
 *   (verl/utils/config.py `validate_config`: real_train_batch_size % minimal_bsz, minimal_bsz = n_gpus for FSDP);
 * - `ppo_mini_batch_size ≤ train_batch_size` (verl/workers/config/actor.py `ActorConfig.validate`) and
 *   `ppo_mini_batch_size × rollout.n` divisible by the GPUs (each mini-batch is split evenly over the data-
 *   parallel ranks: DataProto.chunk);
 * - vLLM tensor parallelism fits the GPUs: the total divisible by it, and within a node a divisor of the node's
 *   GPUs, across nodes a multiple of them (verl/workers/rollout/replica.py: world_size % gpus_per_replica_node);
 * - `actor_rollout_ref.model.path` has no `.` or `..` segment (a path on the cluster stays where it is named).
 *
 * The lengths against the model's context are checked on the cluster before training (verl_run.py reads the
 * model's config there: the gateway cannot see a cluster path), and the GPUs against the cluster's at submit
 * time (`aglVerlClusterFit`).
 */
import { ParamError, type ParamValues } from './params';

const gpusOf = (p: ParamValues) => (p.nnodes as number) * (p.n_gpus_per_node as number);

/** Throws a ParamError naming the parameter to change. */
export function checkAglVerlParams(p: ParamValues): void {
  const gpus = gpusOf(p);
  const perNode = p.n_gpus_per_node as number;
  const n = p.rollout_n as number;
  const batch = p.train_batch_size as number;
  const mini = p.ppo_mini_batch_size as number;
  const tp = p.tensor_model_parallel_size as number;
  const segments = String(p.model_path).split('/');
  if (segments.some((s) => s === '.' || s === '..'))
    throw new ParamError(
      'params.model_path',
      `must not contain '.' or '..' segments (a Hugging Face id or a path as it is on the cluster); got ${JSON.stringify(p.model_path)}`,
    );
  if (mini > batch)
    throw new ParamError(
      'params.ppo_mini_batch_size',
      `must be at most train_batch_size (${batch}); got ${mini}`,
    );
  if ((batch * n) % gpus !== 0)
    throw new ParamError(
      'params.train_batch_size',
      `train_batch_size × rollout_n (${batch} × ${n} = ${batch * n}) must be divisible by the GPUs, nnodes × n_gpus_per_node (${p.nnodes} × ${perNode} = ${gpus}) (verl validate_config)`,
    );
  if ((mini * n) % gpus !== 0)
    throw new ParamError(
      'params.ppo_mini_batch_size',
      `ppo_mini_batch_size × rollout_n (${mini} × ${n} = ${mini * n}) must be divisible by the GPUs (${gpus}): each mini-batch is split evenly over them`,
    );
  if (tp > gpus || gpus % tp !== 0)
    throw new ParamError(
      'params.tensor_model_parallel_size',
      `vLLM tensor parallelism ${tp} must divide the GPUs (${gpus})`,
    );
  if (tp <= perNode ? perNode % tp !== 0 : tp % perNode !== 0)
    throw new ParamError(
      'params.tensor_model_parallel_size',
      tp <= perNode
        ? `vLLM tensor parallelism ${tp} must divide n_gpus_per_node (${perNode}) so that no replica straddles nodes unevenly`
        : `vLLM tensor parallelism ${tp} spans nodes, so it must be a multiple of n_gpus_per_node (${perNode})`,
    );
}

/** Why the cluster cannot run these parameters (GPUs, nodes), or null when it can. */
export function aglVerlClusterFit(p: ParamValues, cluster: { nodes: number; gpus: number }): string | null {
  const need = gpusOf(p);
  if (cluster.gpus === 0)
    return `agl-verl needs GPUs and this Ray cluster has none (${cluster.nodes} node(s)); use agl-cpu, or add GPU nodes`;
  if (cluster.gpus < need)
    return `agl-verl asks for ${need} GPU(s) (nnodes ${p.nnodes} × n_gpus_per_node ${p.n_gpus_per_node}) and this Ray cluster has ${cluster.gpus}`;
  if (cluster.nodes < (p.nnodes as number))
    return `agl-verl asks for ${p.nnodes} node(s) and this Ray cluster has ${cluster.nodes}`;
  return null;
}

/**
 * Checkpoints and validation on by default: `trainer.save_freq` and `trainer.test_freq` every tenth of the
 * run (at least every step), and verl also saves and validates at the last step when they are positive.
 */
export function aglVerlSchedule(p: ParamValues): { saveFreq: number; testFreq: number } {
  const every = Math.max(1, Math.ceil((p.total_training_steps as number) / 10));
  return { saveFreq: every, testFreq: every };
}
