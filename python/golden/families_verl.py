"""Golden families of verl's PPO math: advantage, agg_loss, policy_loss, kl_penalty, rollout_correction.

Each `case_*` function builds one case's params and input, then calls the installed verl the way its trainer does
and records what came back (or the exception it raised).
"""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDict
from verl import DataProto
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch
from verl.workers.config import ActorConfig

from common import Rng, f32, outcome_rewards, raises, verl_source

# ---------------------------------------------------------------------------------------------------------------
# advantage: ray_trainer.compute_advantage, as the trainer calls it (rewards in float32 or bfloat16).


def run_advantage(params: dict, inp: dict) -> dict:
    estimator = params["adv_estimator"]
    cfg = params.get("config") or {}
    gamma = float(cfg.get("gamma", params.get("gamma", 1.0)))
    norm = bool(params.get("norm_adv_by_std_in_grpo", True))
    dtype = params.get("reward_dtype", "float32")
    torch_dtype = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    mask = inp["response_mask"]
    tensors = {
        "token_level_rewards": torch.tensor(inp["token_level_rewards"], dtype=torch.float32).to(torch_dtype),
        "response_mask": torch.tensor(mask, dtype=torch.int64),
    }
    if inp.get("reward_baselines") is not None:
        tensors["reward_baselines"] = torch.tensor(inp["reward_baselines"], dtype=torch.float32)
    data = DataProto(
        batch=TensorDict(tensors, batch_size=len(mask)),
        non_tensor_batch={"uid": np.array(inp["index"], dtype=object)},
    )
    config = AlgoConfig(adv_estimator=estimator, gamma=gamma, lam=1.0,
                        norm_adv_by_std_in_grpo=bool(cfg.get("norm_adv_by_std_in_grpo", norm)))
    try:
        out = compute_advantage(
            data, adv_estimator=estimator, gamma=gamma, lam=1.0, num_repeat=1,
            norm_adv_by_std_in_grpo=norm, config=config,
        )
        return {
            "advantages": out.batch["advantages"],
            "returns": out.batch["returns"],
            "advantages_dtype": str(out.batch["advantages"].dtype).replace("torch.", ""),
        }
    except Exception as err:  # noqa: BLE001 - recorded as the upstream exception
        return raises(err)


def advantage_case(name: str, estimator: str, mask: list, rewards: list, index: list[str], *, norm: bool = True,
                   gamma: float = 1.0, baselines: list | None = None, dtype: str = "float32", note: str = "") -> dict:
    params = {
        "adv_estimator": estimator,
        "norm_adv_by_std_in_grpo": norm,
        "gamma": gamma,
        "lam": 1.0,
        "epsilon": 1e-6,
        "config": {"gamma": gamma, "lam": 1.0, "norm_adv_by_std_in_grpo": norm},
        "reward_dtype": dtype,
    }
    if note:
        params["note"] = note
    inp = {"token_level_rewards": f32(rewards), "response_mask": mask, "index": index}
    if baselines is not None:
        inp["reward_baselines"] = f32(baselines)
    return {"name": name, "params": params, "input": inp, "expected": run_advantage(params, inp)}


def advantage_cases() -> list[dict]:
    cases: list[dict] = []
    rng = Rng(101)
    for dtype in ("float32", "bfloat16"):
        sfx = "" if dtype == "float32" else "_bf16"

        def add(name: str, estimator: str, mask: list, scores: list, index: list[str], **kw) -> None:
            cases.append(advantage_case(name + sfx, estimator, mask, outcome_rewards(mask, scores), index,
                                        dtype=dtype, **kw))

        # binary rewards, two groups of four
        m = rng.mask(8, 6)
        binary = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
        idx8 = ["a"] * 4 + ["b"] * 4
        # continuous rewards that bf16 cannot hold exactly: the 4+4 group of the docs
        cont = rng.uniform((8,), 0.0, 1.0)
        m16 = rng.mask(16, 10, holes=True, zero_rows=(3, 11))
        s16 = rng.uniform((16,), -1.0, 1.5)
        idx16 = rng.choice(["g0", "g1", "g2", "g3", "g4"], 16)
        mixed_idx = ["a", "a", "a", "b", "c", "c", "d", "d"]
        mixed = [0.25, 0.75, 0.3, 0.9, 0.6, 0.6, 1.0, -0.4]
        for est in ("grpo", "grpo_passk"):
            for norm in (True, False):
                tag = "norm" if norm else "nonorm"
                add(f"{est}_{tag}_binary", est, m, binary, idx8, norm=norm)
                add(f"{est}_{tag}_continuous", est, m, cont, idx8, norm=norm)
        add("grpo_norm_mixed_sizes_singleton_allequal", "grpo", m, mixed, mixed_idx)
        add("grpo_nonorm_mixed_sizes_singleton_allequal", "grpo", m, mixed, mixed_idx, norm=False)
        add("grpo_norm_B16_holes_zero_rows", "grpo", m16, s16, idx16)
        add("grpo_norm_all_singletons", "grpo", m, cont, [f"s{i}" for i in range(8)])
        add("grpo_nonorm_all_singletons", "grpo", m, cont, [f"s{i}" for i in range(8)], norm=False)
        add("grpo_passk_ties", "grpo_passk", m, [1.0, 1.0, 0.0, 0.5, 0.2, 0.2, 0.2, 0.1], idx8)
        add("grpo_passk_singleton_raises", "grpo_passk", m, mixed, mixed_idx)
        for est in ("rloo", "reinforce_plus_plus_baseline", "opo", "gpg"):
            add(f"{est}_binary", est, m, binary, idx8)
            add(f"{est}_continuous", est, m, cont, idx8)
            add(f"{est}_mixed_sizes", est, m, mixed, mixed_idx)
            add(f"{est}_B16_holes_zero_rows", est, m16, s16, idx16)
        add("gpg_all_zero_rewards", "gpg", m, [0.0] * 8, idx8)
        for gamma in (1.0, 0.99, 0.9):
            add(f"rpp_gamma{gamma}_holes_zero_row", "reinforce_plus_plus", m16, s16, idx16, gamma=gamma)
        add("rpp_gamma1_binary", "reinforce_plus_plus", m, binary, idx8)
        cases.append(advantage_case("remax_baselines" + sfx, "remax", m16, outcome_rewards(m16, s16), idx16,
                                    baselines=rng.uniform((16,), -0.5, 1.0), dtype=dtype))
    # multi-turn rows (assistant turns between observation spans, mask 0), where verl 0.9.0's REINFORCE++ carries
    # the return through the observations (verl-project/verl#7300); the last row ends on an observation token that
    # holds the reward, as Agent Lightning's trajectory rows do when the trace ends with a tool result
    mt = [[1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0],
          [1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1],
          [1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0],
          [1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0]]
    scores = [1.0, -0.5, 0.75, 0.3]
    rewards = outcome_rewards(mt, scores)
    rewards[3] = [0.0] * 6 + [0.0] + [0.3] + [0.0] * 4  # the reward on a mask-0 (observation) token
    idx = ["p", "p", "q", "q"]
    for dtype in ("float32", "bfloat16"):
        sfx = "" if dtype == "float32" else "_bf16"
        for gamma in (1.0, 0.9):
            cases.append(advantage_case(f"rpp_gamma{gamma}_multi_turn_observations{sfx}", "reinforce_plus_plus", mt,
                                        f32(rewards), idx, gamma=gamma, dtype=dtype))
        cases.append(advantage_case(f"grpo_multi_turn_observations{sfx}", "grpo", mt, f32(rewards), idx,
                                    dtype=dtype))
    return cases


# ---------------------------------------------------------------------------------------------------------------
# agg_loss


def run_agg_loss(params: dict, inp: dict) -> dict:
    kwargs = {k: params[k] for k in params.get("kwargs_passed", [])}
    if "kwargs_passed" not in params:
        kwargs = {k: params[k] for k in ("dp_size", "batch_num_tokens", "global_batch_size", "loss_scale_factor")
                  if params.get(k) is not None}
    try:
        loss = core_algos.agg_loss(
            loss_mat=torch.tensor(inp["loss_mat"], dtype=torch.float32),
            loss_mask=torch.tensor(inp["loss_mask"], dtype=torch.int64),
            loss_agg_mode=params["loss_agg_mode"],
            **kwargs,
        )
        return {"loss": float(loss)}
    except Exception as err:  # noqa: BLE001
        return raises(err)


def agg_case(name: str, mode: str, loss_mat: list, mask: list, **kwargs) -> dict:
    params = {
        "loss_agg_mode": mode,
        "dp_size": kwargs.get("dp_size", 1),
        "batch_num_tokens": kwargs.get("batch_num_tokens"),
        "global_batch_size": kwargs.get("global_batch_size"),
        "loss_scale_factor": kwargs.get("loss_scale_factor"),
        "kwargs_passed": sorted(kwargs),
    }
    inp = {"loss_mat": f32(loss_mat), "loss_mask": mask}
    return {"name": name, "params": params, "input": inp, "expected": run_agg_loss(params, inp)}


AGG_MODES = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


def agg_loss_cases() -> list[dict]:
    rng = Rng(202)
    cases = []
    m = rng.mask(6, 9)
    lm = rng.normal((6, 9), 2.0)
    mh = rng.mask(7, 10, holes=True, zero_rows=(2,))
    lh = rng.normal((7, 10), 1.5, 0.3)
    ntok = int(np.asarray(mh).sum())
    for mode in AGG_MODES:
        cases.append(agg_case(f"{mode}_defaults", mode, lm, m))
        cases.append(agg_case(f"{mode}_holes_zero_row", mode, lh, mh))
        cases.append(agg_case(f"{mode}_dp1_globals", mode, lh, mh, batch_num_tokens=ntok + 5, global_batch_size=9))
        cases.append(agg_case(f"{mode}_dp2_globals", mode, lh, mh, dp_size=2, batch_num_tokens=2 * ntok,
                              global_batch_size=14))
        cases.append(agg_case(f"{mode}_dp2_no_globals", mode, lh, mh, dp_size=2))
        cases.append(agg_case(f"{mode}_all_masked", mode, lm, [[0] * 9 for _ in range(6)]))
        cases.append(agg_case(f"{mode}_loss_scale_factor", mode, lh, mh, loss_scale_factor=64))
    # a result whose float32 value is integral (adjacent float32 values 8 apart): still a float
    big = f32(np.full((2, 4), 121310744.0) + np.asarray([[0, 8, 16, 24], [32, 40, 48, 56]]))
    cases.append(agg_case("token-mean_integral_float_result", "token-mean", big, [[1, 1, 1, 1], [1, 1, 0, 0]]))
    # verl 0.9.0's token-sum (verl-project/verl#7197); 0.8.0 raises ValueError for it
    cases.append(agg_case("token-sum_defaults", "token-sum", lm, m))
    cases.append(agg_case("token-sum_holes_zero_row", "token-sum", lh, mh))
    cases.append(agg_case("token-sum_dp2", "token-sum", lh, mh, dp_size=2))
    cases.append(agg_case("token-sum_dp2_globals_ignored", "token-sum", lh, mh, dp_size=2, batch_num_tokens=2 * ntok,
                          global_batch_size=14))
    cases.append(agg_case("token-sum_all_masked", "token-sum", lm, [[0] * 9 for _ in range(6)]))
    return cases


# ---------------------------------------------------------------------------------------------------------------
# policy_loss: get_policy_loss_fn(loss_mode) with the keyword arguments the actor passes; ∂L/∂log_prob by autograd.


def actor_config(clip_ratio: float, low, high, c: float, mode: str, policy_loss=None) -> ActorConfig:
    extra = {} if policy_loss is None else {"policy_loss": policy_loss}
    return ActorConfig(
        strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio=clip_ratio,
        clip_ratio_low=low, clip_ratio_high=high, clip_ratio_c=c, loss_agg_mode=mode, **extra,
    )


def run_policy_loss(params: dict, inp: dict) -> dict:
    import agentlightning.verl.per_rollout_loss  # noqa: F401  (registers per_rollout_mean)

    mode = params["loss_agg_mode"]
    log_prob = torch.tensor(inp["log_prob"], dtype=torch.float32, requires_grad=True)
    isw = inp.get("rollout_is_weights")
    try:
        # the loss function first: a release without the loss raises here, before its config is built
        fn = core_algos.get_policy_loss_fn(params["loss_mode"])
        policy_loss = None
        if "dro_beta" in params:
            from verl.workers.config.actor import PolicyLossConfig

            policy_loss = PolicyLossConfig(loss_mode=params["loss_mode"], dro_beta=params["dro_beta"])
        config = actor_config(params.get("clip_ratio", 0.2), params.get("clip_ratio_low"),
                              params.get("clip_ratio_high"), params.get("clip_ratio_c", 3.0), mode, policy_loss)
        config.global_batch_info.update(params.get("global_batch_info") or {})
        pg_loss, metrics = fn(
            old_log_prob=torch.tensor(inp["old_log_prob"], dtype=torch.float32),
            log_prob=log_prob,
            advantages=torch.tensor(inp["advantages"], dtype=torch.float32),
            response_mask=torch.tensor(inp["response_mask"], dtype=torch.int64),
            loss_agg_mode=mode,
            config=config,
            rollout_is_weights=None if isw is None else torch.tensor(isw, dtype=torch.float32),
        )
        pg_loss.backward()
        if params["loss_mode"] == "dro":  # DRO reports only actor/ppo_kl
            return {"pg_loss": float(pg_loss), "ppo_kl": float(metrics["actor/ppo_kl"]),
                    "grad_log_prob": log_prob.grad}
        return {
            "pg_loss": float(pg_loss),
            "pg_clipfrac": float(metrics["actor/pg_clipfrac"]),
            "ppo_kl": float(metrics["actor/ppo_kl"]),
            "pg_clipfrac_lower": float(metrics["actor/pg_clipfrac_lower"]),
            "grad_log_prob": log_prob.grad,
        }
    except Exception as err:  # noqa: BLE001
        return raises(err)


def policy_case(name: str, loss_mode: str, mode: str, old: list, lp: list, adv: list, mask: list, *,
                clip=(0.2, 0.2, 0.2), c: float = 3.0, is_weights: list | None = None, gbi: dict | None = None,
                dro_beta: float | None = None) -> dict:
    params = {
        "loss_mode": loss_mode,
        "loss_agg_mode": mode,
        "clip_ratio": clip[0],
        "clip_ratio_low": clip[1],
        "clip_ratio_high": clip[2],
        "clip_ratio_c": c,
        "global_batch_info": gbi or {},
    }
    if loss_mode == "dro":
        params["dro_beta"] = dro_beta
    inp = {"old_log_prob": f32(old), "log_prob": f32(lp), "advantages": f32(adv), "response_mask": mask,
           "rollout_is_weights": None if is_weights is None else f32(is_weights)}
    return {"name": name, "params": params, "input": inp, "expected": run_policy_loss(params, inp)}


def policy_loss_cases() -> list[dict]:
    rng = Rng(303)
    cases = []
    B, T = 6, 8
    m = rng.mask(B, T, holes=True, zero_rows=(4,))
    old = rng.normal((B, T), 0.5, -1.0)
    near = f32(np.asarray(old) + np.asarray(rng.normal((B, T), 0.15)))
    far = f32(np.asarray(old) + np.asarray(rng.normal((B, T), 1.2)))
    adv = rng.normal((B, T), 1.0)
    neg = f32(-np.abs(np.asarray(adv)))
    isw = rng.uniform((B, T), 0.3, 2.0)
    ntok = int(np.asarray(m).sum())
    for mode in AGG_MODES:
        cases.append(policy_case(f"vanilla_{mode}_near_ratios", "vanilla", mode, old, near, adv, m))
        cases.append(policy_case(f"vanilla_{mode}_far_ratios", "vanilla", mode, old, far, adv, m))
        cases.append(policy_case(f"vanilla_{mode}_ratio_one", "vanilla", mode, old, old, adv, m))
        cases.append(policy_case(f"vanilla_{mode}_rollout_is_weights", "vanilla", mode, old, near, adv, m,
                                 is_weights=isw))
        cases.append(policy_case(f"vanilla_{mode}_engine_globals", "vanilla", mode, old, far, adv, m,
                                 gbi={"dp_size": 1, "batch_num_tokens": ntok, "global_batch_size": B,
                                      "loss_scale_factor": None}))
        cases.append(policy_case(f"vanilla_{mode}_dp2", "vanilla", mode, old, far, adv, m,
                                 gbi={"dp_size": 2, "batch_num_tokens": 2 * ntok + 3, "global_batch_size": 2 * B,
                                      "loss_scale_factor": None}))
    cases.append(policy_case("vanilla_seq-mean-token-sum-norm_loss_scale_factor10", "vanilla",
                             "seq-mean-token-sum-norm", old, far, adv, m, gbi={"loss_scale_factor": 10}))
    cases.append(policy_case("vanilla_neg_adv_dual_clip_c3", "vanilla", "token-mean", old, far, neg, m))
    cases.append(policy_case("vanilla_neg_adv_dual_clip_c10", "vanilla", "token-mean", old, far, neg, m, c=10.0))
    cases.append(policy_case("vanilla_asym_clip", "vanilla", "token-mean", old, far, adv, m, clip=(0.2, 0.1, 0.28)))
    cases.append(policy_case("vanilla_low_high_none_fallback", "vanilla", "token-mean", old, far, adv, m,
                             clip=(0.3, None, None)))
    huge = f32(np.asarray(old) + np.where(np.arange(T) % 2 == 0, 25.0, -25.0))
    cases.append(policy_case("vanilla_logratio_clamp_pm20", "vanilla", "token-mean", old, huge, adv, m))
    for label, lp in (("ratio_one", old), ("far_ratios", far)):
        cases.append(policy_case(f"per_rollout_mean_{label}", "per_rollout_mean", "token-mean", old, lp, adv, m,
                                 is_weights=isw))
    cases.append(policy_case("per_rollout_mean_dp2", "per_rollout_mean", "token-mean", old, far, neg, m,
                             gbi={"dp_size": 2}))
    # verl 0.9.0's dro (verl-project/verl#7245) over every aggregation, and vanilla with token-sum (#7197);
    # 0.8.0 raises ValueError for both
    for mode in [*AGG_MODES, "token-sum"]:
        cases.append(policy_case(f"dro_{mode}_far_ratios", "dro", mode, old, far, adv, m, dro_beta=0.05))
    cases.append(policy_case("dro_token-mean_rollout_is_weights_beta0.5", "dro", "token-mean", old, near, neg, m,
                             is_weights=isw, dro_beta=0.5))
    cases.append(policy_case("dro_token-mean_engine_globals", "dro", "token-mean", old, far, adv, m, dro_beta=0.1,
                             gbi={"dp_size": 2, "batch_num_tokens": 2 * ntok + 3, "global_batch_size": 2 * B,
                                  "loss_scale_factor": None}))
    cases.append(policy_case("dro_beta_zero_raises", "dro", "token-mean", old, far, adv, m, dro_beta=0.0))
    cases.append(policy_case("vanilla_token-sum_far_ratios", "vanilla", "token-sum", old, far, adv, m))
    return cases


# ---------------------------------------------------------------------------------------------------------------
# kl_penalty, with ∂(Σ kl)/∂logprob from autograd


def run_kl_penalty(params: dict, inp: dict) -> dict:
    logprob = torch.tensor(inp["logprob"], dtype=torch.float32, requires_grad=True)
    try:
        kl = core_algos.kl_penalty(logprob, torch.tensor(inp["ref_logprob"], dtype=torch.float32), params["kl_penalty"])
        kl.sum().backward()
        return {"kl": kl, "grad_logprob": logprob.grad}
    except Exception as err:  # noqa: BLE001
        return raises(err)


def kl_case(name: str, kind: str, lp: list, ref: list) -> dict:
    params = {"kl_penalty": kind}
    inp = {"logprob": lp, "ref_logprob": ref}
    return {"name": name, "params": params, "input": inp, "expected": run_kl_penalty(params, inp)}


def kl_penalty_cases() -> list[dict]:
    rng = Rng(404)
    lp = rng.normal((4, 6), 0.8, -1.5)
    ref = f32(np.asarray(lp) + np.asarray(rng.normal((4, 6), 0.4)))
    ext_lp = f32([[-30.0, -1.0, 0.0, -0.5], [-1.0, -25.0, -3.0, -40.0]])
    ext_ref = f32([[0.0, -30.0, -28.0, -0.5], [-40.0, 0.0, -3.0, -10.0]])
    cases = []
    for kind in ("kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"):
        for suffix in ("", "+"):
            cases.append(kl_case(f"{kind}{suffix}_moderate", kind + suffix, lp, ref))
            cases.append(kl_case(f"{kind}{suffix}_extreme_clamps", kind + suffix, ext_lp, ext_ref))
    cases.append(kl_case("full", "full", lp, ref))
    cases.append(kl_case("full+", "full+", lp, ref))
    cases.append(kl_case("unknown_name", "k4", lp, ref))
    return cases


# ---------------------------------------------------------------------------------------------------------------
# rollout_correction: compute_rollout_correction_and_add_to_batch on a DataProto


def run_rollout_correction(params: dict, inp: dict) -> dict:
    batch = DataProto(batch=TensorDict({
        "old_log_probs": torch.tensor(inp["old_log_prob"], dtype=torch.float32),
        "rollout_log_probs": torch.tensor(inp["rollout_log_prob"], dtype=torch.float32),
        "response_mask": torch.tensor(inp["response_mask"], dtype=torch.int64),
    }, batch_size=len(inp["response_mask"])))
    cfg = {k: params.get(k) for k in ("rollout_is", "rollout_is_threshold", "rollout_is_batch_normalize",
                                      "rollout_rs", "rollout_rs_threshold")}
    try:
        out, metrics = compute_rollout_correction_and_add_to_batch(batch, cfg)
        return {
            "rollout_is_weights": out.batch["rollout_is_weights"] if "rollout_is_weights" in out.batch else None,
            "response_mask": out.batch["response_mask"],
            "metrics": metrics,
        }
    except Exception as err:  # noqa: BLE001
        return raises(err)


def rc_case(name: str, old: list, roll: list, mask: list, *, rollout_is=None, threshold=2.0, batch_normalize=False,
            rs=None, rs_threshold=None) -> dict:
    params = {"rollout_is": rollout_is, "rollout_is_threshold": threshold,
              "rollout_is_batch_normalize": batch_normalize, "rollout_rs": rs, "rollout_rs_threshold": rs_threshold}
    inp = {"old_log_prob": f32(old), "rollout_log_prob": f32(roll), "response_mask": mask}
    return {"name": name, "params": params, "input": inp, "expected": run_rollout_correction(params, inp)}


def rollout_correction_cases() -> list[dict]:
    rng = Rng(505)
    B, T = 6, 8
    m = rng.mask(B, T, min_len=2)
    mh = rng.mask(B, T, holes=True, zero_rows=(1,))
    roll = rng.normal((B, T), 0.7, -1.2)
    old = f32(np.asarray(roll) + np.asarray(rng.normal((B, T), 0.3)))
    old_far = f32(np.asarray(roll) + np.asarray(rng.normal((B, T), 1.5)))
    huge = f32(np.asarray(roll) + np.where(np.arange(T) % 3 == 0, 30.0, -0.1))
    cases = [
        rc_case("no_correction_metrics_only", old, roll, m),
        rc_case("token_is_thr2", old_far, roll, m, rollout_is="token"),
        rc_case("token_is_thr1.5_batchnorm", old_far, roll, m, rollout_is="token", threshold=1.5,
                batch_normalize=True),
        rc_case("token_is_threshold_string", old_far, roll, m, rollout_is="token", threshold="3.0"),
        rc_case("token_is_icepop", old_far, roll, m, rollout_is="token", threshold="0.5_2.0"),
        rc_case("sequence_is_icepop", old, roll, m, rollout_is="sequence", threshold="0.5_3.0"),
        rc_case("sequence_is_thr2", old, roll, m, rollout_is="sequence"),
        rc_case("sequence_is_thr5_batchnorm", old, roll, m, rollout_is="sequence", threshold=5.0,
                batch_normalize=True),
        rc_case("sequence_is_huge_logratio_safety_bound", huge, roll, m, rollout_is="sequence"),
        rc_case("token_is_huge_logratio_safety_bound", huge, roll, m, rollout_is="token"),
        rc_case("token_is_holes_zero_row", old_far, roll, mh, rollout_is="token"),
        rc_case("sequence_is_holes_zero_row_batchnorm", old, roll, mh, rollout_is="sequence", batch_normalize=True),
        rc_case("rs_token_k1_lower_upper", old_far, roll, m, rs="token_k1", rs_threshold="0.5_2.0"),
        rc_case("rs_token_k1_single_thr", old_far, roll, m, rs="token_k1", rs_threshold=2.0),
        rc_case("rs_token_k2", old_far, roll, m, rs="token_k2", rs_threshold=0.3),
        rc_case("rs_token_k3", old_far, roll, m, rs="token_k3", rs_threshold=0.3),
        rc_case("rs_seq_sum_k1", old, roll, m, rs="seq_sum_k1", rs_threshold="0.3_3"),
        rc_case("rs_seq_sum_k3", old, roll, m, rs="seq_sum_k3", rs_threshold=0.8),
        rc_case("rs_seq_mean_k1", old_far, roll, m, rs="seq_mean_k1", rs_threshold=1.5),
        rc_case("rs_seq_mean_k2", old_far, roll, m, rs="seq_mean_k2", rs_threshold=0.5),
        rc_case("rs_seq_mean_k3", old_far, roll, m, rs="seq_mean_k3", rs_threshold=0.5),
        rc_case("rs_seq_max_k2", old_far, roll, mh, rs="seq_max_k2", rs_threshold=1.0),
        rc_case("rs_seq_max_k3", old_far, roll, mh, rs="seq_max_k3", rs_threshold=1.0),
        rc_case("rs_combined_token_k1_seq_mean_k3", old_far, roll, m, rs="token_k1,seq_mean_k3",
                rs_threshold="0.4_2.5,0.6"),
        rc_case("rs_combined_shared_threshold", old_far, roll, m, rs="token_k2, seq_max_k2", rs_threshold=0.8),
        rc_case("token_is_plus_rs_seq_max_k2", old_far, roll, mh, rollout_is="token", rs="seq_max_k2",
                rs_threshold=1.0),
        rc_case("sequence_is_plus_rs_token_k1", old, roll, m, rollout_is="sequence", rs="token_k1",
                rs_threshold="0.6_1.8"),
        rc_case("rs_without_threshold_raises", old, roll, m, rs="token_k2"),
        rc_case("rs_unknown_option_raises", old, roll, m, rs="token_k9", rs_threshold=1.0),
        rc_case("is_unknown_level_raises", old, roll, m, rollout_is="row"),
        rc_case("is_threshold_inverted_raises", old, roll, m, rollout_is="token", threshold="3_2"),
        rc_case("is_threshold_nonpositive_raises", old, roll, m, rollout_is="token", threshold=-1.0),
        rc_case("all_masked_raises", old, roll, [[0] * T for _ in range(B)], rollout_is="token"),
        # where verl 0.9.0 differs: rollout_is_seq_fraction_* on raw weights (verl-project/verl#6806), and a k1
        # rejection threshold with lower > upper (a ValueError from 0.9.0 on)
        rc_case("token_is_thr1.2_seq_fraction_raw", old_far, roll, mh, rollout_is="token", threshold=1.2),
        rc_case("token_is_icepop_seq_fraction_raw", old_far, roll, m, rollout_is="token", threshold="0.8_1.2"),
        rc_case("rs_token_k1_inverted_lo_hi", old_far, roll, m, rs="token_k1", rs_threshold="2.0_0.5"),
    ]
    return cases


FAMILIES = {
    "advantage": (
        verl_source("verl/trainer/ppo/ray_trainer.py:compute_advantage -> core_algos.get_adv_estimator_fn"),
        advantage_cases,
    ),
    "agg_loss": (verl_source("verl/trainer/ppo/core_algos.py:agg_loss"), agg_loss_cases),
    "policy_loss": (
        verl_source("verl/trainer/ppo/core_algos.py:get_policy_loss_fn (vanilla; per_rollout_mean from "
                    "agentlightning/verl/per_rollout_loss.py), grad_log_prob by autograd"),
        policy_loss_cases,
    ),
    "kl_penalty": (verl_source("verl/trainer/ppo/core_algos.py:kl_penalty"), kl_penalty_cases),
    "rollout_correction": (
        verl_source("verl/trainer/ppo/rollout_corr_helper.py:compute_rollout_correction_and_add_to_batch"),
        rollout_correction_cases,
    ),
}

# family → run(params, input) → expected: the upstream call alone, for check_peer_golden.py
RUNNERS = {
    "advantage": run_advantage,
    "agg_loss": run_agg_loss,
    "policy_loss": run_policy_loss,
    "kl_penalty": run_kl_penalty,
    "rollout_correction": run_rollout_correction,
}
