"""What Agent Lightning's trainer does with a batch of completed rollouts, run on the installed packages.

`train_step_view` follows agentlightning/verl/trainer.py:AgentLightningRayPPOTrainer._train_step from the
rollout adapter to the actor's loss, step by step, with the real functions:

  RolloutAdapter.get_train_data_batch → uid = data_id_list → response_mask (compute_response_mask when the adapter
  emitted none) → drop is_drop rows → [trim to a multiple of the mini-batch: not done here, the whole batch is
  one mini-batch] → RayPPOTrainer._balance_batch (one data-parallel rank) → old_log_probs → token_level_rewards = token_level_scores (bfloat16, as the adapter makes them)
  → compute_rollout_correction_and_add_to_batch (when configured and rollout_log_probs exist) →
  compute_rollout_level_advantage or compute_advantage → normalize_advantages_by_rollout (per_rollout_mean) →
  the policy loss of each loss mode with the global batch info verl 0.8.0's engine passes
  (dp_size, batch_num_tokens = the mini-batch's mask tokens, global_batch_size = its rows, loss_scale_factor)

and records ∂L/∂log_prob of every token by autograd at log_prob = old_log_prob (ratio 1) for each loss mode. The
old log-probs are the given ones, else the rollout log-probs (a trainer whose policy equals the engine's), else 0.

Used by the golden family `agl_train_step` and by python/crosscheck_trainer.py.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

AGG_MODES = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
LOSS_MODES = [*AGG_MODES, "per_rollout_mean"]


def completed_rollouts(items: list[dict]) -> list[Any]:
    """The golden `agl_trajectory` input shape as CompletedRollout / Triplet objects."""
    from agentlightning.verl.agl_rollout_manager import CompletedRollout, Triplet

    return [
        CompletedRollout(
            rollout_id=r["rollout_id"],
            data_id=r["data_id"],
            step=r["step"],
            sample_idx_in_step=r["sample_idx_in_step"],
            enqueue_time=0.0,
            final_reward=r["final_reward"],
            triplets=None
            if r["triplets"] is None
            else [
                Triplet(
                    prompt={"token_ids": list(t["prompt_token_ids"])},
                    response={
                        "token_ids": list(t["response_token_ids"]),
                        "log_probs": None if t["response_log_probs"] is None else list(t["response_log_probs"]),
                    },
                )
                for t in r["triplets"]
            ],
        )
        for r in items
    ]


def actor_config(p: dict, loss_agg_mode: str) -> Any:
    from verl.workers.config import ActorConfig

    config = ActorConfig(
        strategy="fsdp",
        rollout_n=p.get("rollout_n", 1),
        ppo_micro_batch_size_per_gpu=1,
        clip_ratio=p.get("clip_ratio", 0.2),
        clip_ratio_low=p.get("clip_ratio_low", 0.2),
        clip_ratio_high=p.get("clip_ratio_high", 0.2),
        clip_ratio_c=p.get("clip_ratio_c", 3.0),
        loss_agg_mode=loss_agg_mode,
        loss_scale_factor=p.get("loss_scale_factor"),
    )
    return config


def build_batch(rollouts: list[Any], p: dict) -> tuple[Any, dict]:
    from agentlightning.verl.rollout_adapter import RolloutAdapter

    adapter = RolloutAdapter(
        max_prompt_length=p["max_prompt_length"],
        max_response_length=p["max_response_length"],
        device=torch.device("cpu"),
        pad_token_id=p.get("pad_token_id", 0),
        reward_fillna_value=p.get("reward_fillna_value", 0.0),
        trace_aggregator_level=p["trace_aggregator_level"],
    )
    # the adapter extends the first triplet's log-prob list in place: give it a copy
    return adapter.get_train_data_batch(copy.deepcopy(rollouts), global_steps=0)


class _OneRank:
    """What RayPPOTrainer._balance_batch reads from the trainer, for one data-parallel rank."""

    use_prefix_grouper = False

    def __init__(self) -> None:
        self.actor_rollout_wg = None

    def _get_dp_size(self, worker_group: Any, role: str) -> int:  # noqa: ARG002
        return 1


def balance(batch: Any) -> Any:
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    RayPPOTrainer._balance_batch(_OneRank(), batch, metrics={})
    return batch


def unpad(t: torch.Tensor, lens: list[int]) -> list[list]:
    return [t[i, :n].tolist() for i, n in enumerate(lens)]


def train_step_view(rollouts: list[Any], p: dict, old_log_probs: list[list[float]] | None = None) -> dict:
    """The trainer's numbers for one batch; rows are the kept rows in batch order, values unpadded."""
    import agentlightning.verl.per_rollout_loss  # noqa: F401  (registers per_rollout_mean)
    from agentlightning.verl.per_rollout_loss import normalize_advantages_by_rollout
    from agentlightning.verl.rollout_level_advantage import compute_rollout_level_advantage
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.ray_trainer import compute_advantage, compute_response_mask
    from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch

    batch, adapter_metrics = build_batch(rollouts, p)
    out: dict[str, Any] = {}
    batch.non_tensor_batch["uid"] = batch.non_tensor_batch["data_id_list"]
    if "response_mask" not in batch.batch:
        batch.batch["response_mask"] = compute_response_mask(batch)
    n_collected = len(batch)
    keep = (~batch.batch["is_drop_mask"].bool()).nonzero(as_tuple=True)[0].tolist()
    out["n_sample_collected"] = n_collected
    out["n_sample_dropped_marked"] = n_collected - len(keep)
    if not keep:
        # upstream: "no trainable batch after drop+floor; skipping this training step" (_train_step returns None)
        return {**out, "n_rows": 0, "skipped": True}
    out["skipped"] = False
    batch = batch[keep]
    R = p["max_response_length"]
    mask = batch.batch["response_mask"]
    # the old log-probs are given per kept row in adapter order; they travel with their rows through the reorder
    if old_log_probs is not None:
        old = torch.zeros(mask.shape, dtype=torch.float32)
        for i, row in enumerate(old_log_probs):
            old[i, : len(row)] = torch.tensor(row, dtype=torch.float32)
    elif "rollout_log_probs" in batch.batch:
        old = batch.batch["rollout_log_probs"].float().clone()
    else:
        old = torch.zeros(mask.shape, dtype=torch.float32)
    batch.batch["old_log_probs"] = old
    if p.get("balance_batch", True):
        batch = balance(batch)
    old = batch.batch["old_log_probs"]
    response_lens = batch.batch["attention_mask"][:, -R:].sum(-1).tolist()
    scores = batch.batch["token_level_scores"]
    if p.get("reward_dtype", "bfloat16") == "float32":
        # not an upstream setting: the same scores as float32 tensors holding the unrounded rewards, to see what
        # the adapter's bfloat16 costs (verl's functions then run in float32)
        raw = {r.rollout_id: (r.final_reward if r.final_reward is not None else p.get("reward_fillna_value", 0.0))
               for r in rollouts}
        f = torch.zeros(scores.shape, dtype=torch.float32)
        nz = scores != 0
        for i, rid in enumerate(batch.non_tensor_batch["rollout_id_list"]):
            f[i][nz[i]] = raw[rid]
            if not nz[i].any() and raw[rid] != 0:
                last = int(batch.batch["attention_mask"][i, -R:].sum()) - 1
                f[i, last] = raw[rid]
        scores = f
    batch.batch["token_level_rewards"] = scores

    rc = p.get("rollout_correction")
    if rc is not None and "rollout_log_probs" in batch.batch:
        batch, rc_metrics = compute_rollout_correction_and_add_to_batch(batch, rc)
        out["rollout_correction_metrics"] = rc_metrics
    mask = batch.batch["response_mask"]

    estimator = p["adv_estimator"]
    config = AlgoConfig(
        adv_estimator=estimator,
        gamma=p.get("gamma", 1.0),
        lam=1.0,
        norm_adv_by_std_in_grpo=p.get("norm_adv_by_std_in_grpo", True),
    )
    adv_kwargs = {
        "adv_estimator": estimator,
        "gamma": p.get("gamma", 1.0),
        "lam": 1.0,
        "num_repeat": p.get("rollout_n", 1),
        "norm_adv_by_std_in_grpo": p.get("norm_adv_by_std_in_grpo", True),
        "config": config,
    }
    if p.get("enable_rollout_level_advantage", True):
        batch, rl_metrics = compute_rollout_level_advantage(batch, **adv_kwargs)
        out["rollout_level_advantage_metrics"] = rl_metrics
    else:
        batch = compute_advantage(batch, **adv_kwargs)
    advantages = batch.batch["advantages"]
    normalized = normalize_advantages_by_rollout(
        advantages, mask, batch.non_tensor_batch["rollout_id_list"], num_trained_rows=len(batch)
    )
    is_weights = batch.batch["rollout_is_weights"] if "rollout_is_weights" in batch.batch else None
    gbi = {
        "dp_size": 1,
        "batch_num_tokens": int(mask.sum()),
        "global_batch_size": len(batch),
        "loss_scale_factor": p.get("loss_scale_factor"),
    }
    weights: dict[str, list] = {}
    losses: dict[str, float] = {}
    for mode in LOSS_MODES:
        per_rollout = mode == "per_rollout_mean"
        config_a = actor_config(p, "token-mean" if per_rollout else mode)
        config_a.global_batch_info.update(gbi)
        log_prob = old.clone().requires_grad_(True)
        loss, _ = core_algos.get_policy_loss_fn("per_rollout_mean" if per_rollout else "vanilla")(
            old_log_prob=old,
            log_prob=log_prob,
            advantages=normalized if per_rollout else advantages,
            response_mask=mask,
            loss_agg_mode=config_a.loss_agg_mode,
            config=config_a,
            rollout_is_weights=is_weights,
        )
        loss.backward()
        weights[mode] = unpad(log_prob.grad, response_lens)
        losses[mode] = float(loss)

    out.update(
        {
            "n_rows": len(batch),
            "rollout_ids": [str(x) for x in batch.non_tensor_batch["rollout_id_list"]],
            "response_lengths": response_lens,
            "response_mask": unpad(mask, response_lens),
            "advantages_dtype": str(advantages.dtype).replace("torch.", ""),
            "advantages": unpad(advantages.float(), response_lens),
            "normalized_advantages": unpad(normalized.float(), response_lens),
            "rollout_is_weights": None if is_weights is None else unpad(is_weights, response_lens),
            "weights": weights,
            "losses_at_ratio_one": losses,
            "adapter_counters": {
                k: adapter_metrics.get(k)
                for k in ("training/n_sample", "training/n_truncated_sample", "training/n_skipped_empty_rows")
            },
        }
    )
    return out


def kept_row_count(rollouts: list[Any], p: dict) -> tuple[int, list[int]]:
    """Rows after the is_drop removal and their response lengths (for recording per-token inputs)."""
    batch, _ = build_batch(rollouts, p)
    keep = (~batch.batch["is_drop_mask"].bool()).nonzero(as_tuple=True)[0].tolist()
    R = p["max_response_length"]
    lens = batch.batch["attention_mask"][:, -R:].sum(-1).tolist()
    return len(keep), [lens[i] for i in keep]


def as_lists(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x
