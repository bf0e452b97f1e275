"""Golden families of Agent Lightning's verl adapter: agl_trajectory, agl_rollout_level_advantage, agl_train_step."""

from __future__ import annotations

import zlib

import numpy as np
import torch
from tensordict import TensorDict
from verl import DataProto
from verl.trainer.config import AlgoConfig

from agl_step import build_batch, completed_rollouts, kept_row_count, train_step_view
from common import Rng, agl_source, f32, outcome_rewards, raises

# ---------------------------------------------------------------------------------------------------------------
# Scenario rollouts (the `agl_trajectory` input shape). Token ids are arbitrary integers; no tokenizer is involved.


class Scenarios:
    def __init__(self, seed: int) -> None:
        self.rng = Rng(seed)

    def ids(self, n: int) -> list[int]:
        return self.rng.ints(100, 5000, n)

    def lps(self, n: int) -> list[float]:
        return self.rng.uniform((n,), -3.0, -0.01)

    def call(self, prompt: list[int], n_resp: int, lp: str = "ok") -> dict:
        resp = self.ids(n_resp)
        log_probs = {"ok": self.lps(n_resp), "none": None, "short": self.lps(max(0, n_resp - 1))}[lp]
        return {"prompt_token_ids": prompt, "response_token_ids": resp, "response_log_probs": log_probs}

    def chain(self, n_calls: int, first_prompt: int, resp: tuple[int, int], obs: tuple[int, int],
              lp_modes: list[str] | None = None) -> list[dict]:
        """Calls whose prompts extend the previous prompt + response with an observation (mergeable)."""
        calls = []
        prompt = self.ids(first_prompt)
        for k in range(n_calls):
            c = self.call(prompt, int(self.rng.g.integers(resp[0], resp[1] + 1)),
                          (lp_modes or ["ok"] * n_calls)[k])
            calls.append(c)
            prompt = prompt + c["response_token_ids"] + self.ids(int(self.rng.g.integers(obs[0], obs[1] + 1)))
        return calls

    def rollout(self, rid: str, data_id: str, idx: int, reward, triplets, step: int = 0) -> dict:
        return {"rollout_id": rid, "data_id": data_id, "step": step, "sample_idx_in_step": idx,
                "final_reward": reward, "triplets": triplets}


def scenario_inputs() -> list[tuple[str, dict, list[dict]]]:
    """(name, sizes, rollouts) for every agl_trajectory scenario."""
    s = Scenarios(606)
    out = []
    out.append(("single_turn_mixed", {"P": 12, "R": 8, "fill": -0.5}, [
        s.rollout("st-a", "q0", 0, 1.0, [s.call(s.ids(5), 4)]),
        s.rollout("st-b", "q0", 1, 0.3, [s.call(s.ids(8), 6)]),
        s.rollout("st-c", "q1", 2, None, [s.call(s.ids(3), 2)]),
    ]))
    out.append(("mergeable_with_observations", {"P": 16, "R": 40, "fill": 0.0}, [
        s.rollout("mo-a", "q2", 0, 0.75, s.chain(3, 6, (2, 5), (1, 4))),
        s.rollout("mo-b", "q2", 1, 0.25, s.chain(4, 5, (1, 3), (2, 3))),
    ]))
    out.append(("mergeable_no_observation", {"P": 16, "R": 32, "fill": 0.0}, [
        s.rollout("mn-a", "q3", 0, 1.0, s.chain(3, 4, (2, 4), (0, 0))),
    ]))
    # retokenisation mismatch: the next prompt re-encodes the previous response differently
    a = s.chain(2, 5, (3, 4), (2, 2))
    broken = list(a[1]["prompt_token_ids"])
    broken[6] = broken[6] + 1
    a[1]["prompt_token_ids"] = broken
    out.append(("mismatch_retokenized", {"P": 16, "R": 24, "fill": 0.0}, [
        s.rollout("mr-a", "q4", 0, 0.5, a + s.chain(1, 4, (2, 2), (0, 0))),
        s.rollout("mr-b", "q4", 1, 0.0, s.chain(2, 5, (2, 3), (1, 2))),
    ]))
    # dropped "thinking" block: the next prompt leaves out the start of the previous response
    t = s.chain(2, 4, (5, 6), (2, 2))
    p0 = t[0]["prompt_token_ids"]
    r0 = t[0]["response_token_ids"]
    t[1]["prompt_token_ids"] = p0 + r0[3:] + s.ids(2)
    out.append(("mismatch_dropped_thinking", {"P": 16, "R": 24, "fill": 0.0}, [
        s.rollout("dt-a", "q5", 0, 1.0, t + [s.call(t[1]["prompt_token_ids"] + s.ids(3), 2)]),
    ]))
    out.append(("truncation_prompt_and_response", {"P": 10, "R": 8, "fill": 0.0}, [
        s.rollout("tr-a", "q6", 0, 1.0, [s.call(s.ids(14), 3)]),
        s.rollout("tr-b", "q6", 1, 0.5, [s.call(s.ids(4), 13)]),
        s.rollout("tr-c", "q7", 2, 0.0, s.chain(3, 3, (2, 3), (4, 4))),
        s.rollout("tr-d", "q7", 3, 0.7, s.chain(2, 3, (5, 5), (6, 6))),
    ]))
    out.append(("empty_responses", {"P": 12, "R": 12, "fill": 0.25}, [
        s.rollout("er-a", "q8", 0, 1.0, [s.call(s.ids(4), 0), s.call(s.ids(5), 3)]),
        s.rollout("er-b", "q8", 1, 0.0, None),
        s.rollout("er-c", "q8", 2, 0.5, []),
        s.rollout("er-d", "q9", 3, None, [s.call(s.ids(3), 2)]),
    ]))
    out.append(("logprob_availability_mixed", {"P": 16, "R": 30, "fill": 0.0}, [
        s.rollout("lp-a", "q10", 0, 1.0, s.chain(3, 4, (2, 3), (1, 2), ["ok", "none", "ok"])),
        s.rollout("lp-b", "q10", 1, 0.0, s.chain(2, 4, (2, 3), (1, 2), ["short", "ok"])),
        s.rollout("lp-c", "q11", 2, 0.5, [s.call(s.ids(4), 3)]),
    ]))
    rand = []
    for i in range(10):
        kind = i % 3
        calls = s.chain(int(s.rng.g.integers(1, 4)), int(s.rng.g.integers(2, 8)), (1, 6), (0, 3))
        if kind == 1 and len(calls) > 1:
            calls[1]["prompt_token_ids"] = s.ids(len(calls[1]["prompt_token_ids"]))
        rand.append(s.rollout(f"rm-{i}", f"q{12 + i % 3}", i % 4, [1.0, 0.0, 0.4, None][i % 4], calls,
                              step=i // 4))
    out.append(("random_mixed_batch", {"P": 12, "R": 20, "fill": 0.0}, rand))
    return out


def trajectory_expected(rollouts, p: dict) -> dict:
    batch, metrics = build_batch(completed_rollouts(rollouts), p)
    P, R = p["max_prompt_length"], p["max_response_length"]
    attn = batch.batch["attention_mask"]
    level = p["trace_aggregator_level"]
    has_lp = "rollout_log_probs" in batch.batch
    rows = []
    for i in range(len(batch)):
        pmask = attn[i, :P].bool()
        rlen = int(attn[i, P:].sum())
        scores = batch.batch["token_level_scores"][i].float()
        rows.append({
            "rollout_id": str(batch.non_tensor_batch["rollout_id_list"][i]),
            "data_id": str(batch.non_tensor_batch["data_id_list"][i]),
            "turn_index": int(batch.non_tensor_batch["turn_index_list"][i])
            if "turn_index_list" in batch.non_tensor_batch else None,
            "prompt_ids": batch.batch["prompts"][i][pmask].tolist(),
            "response_ids": batch.batch["responses"][i, :rlen].tolist(),
            "response_mask": batch.batch["response_mask"][i, :rlen].tolist()
            if "response_mask" in batch.batch else attn[i, P:P + rlen].tolist(),
            "response_log_probs": batch.batch["rollout_log_probs"][i, :rlen].tolist() if has_lp else None,
            "token_level_scores": scores[:rlen].tolist(),
            "reward": float(scores.sum()),
            "is_drop": bool(batch.batch["is_drop_mask"][i]),
            "position_ids": batch.batch["position_ids"][i][attn[i].bool()].tolist(),
        })
    return {
        "n_rows": len(batch),
        "rows": rows,
        "batch_keys": sorted(batch.batch.keys()),
        "has_response_mask_key": "response_mask" in batch.batch,
        "has_rollout_log_probs_key": has_lp,
        "counters": {
            "unmerged_count": metrics.get("training/n_unmerged_rollouts"),
            "n_trunc": metrics["training/n_truncated_sample"],
            "n_skipped_empty": metrics["training/n_skipped_empty_rows"],
            "n_merge_mismatch_rows": metrics.get("training/n_trace_merge_mismatch_rows"),
        },
        "metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float))},
    }


def run_agl_trajectory(params: dict, inp: dict) -> dict:
    try:
        return trajectory_expected(inp["rollouts"], params)
    except Exception as err:  # noqa: BLE001
        return raises(err)


def adapter_params(level: str, sizes: dict) -> dict:
    return {"trace_aggregator_level": level, "max_prompt_length": sizes["P"], "max_response_length": sizes["R"],
            "pad_token_id": 0, "reward_fillna_value": sizes["fill"], "global_steps": 0}


def agl_trajectory_cases() -> list[dict]:
    cases = []
    for name, sizes, rollouts in scenario_inputs():
        for level in ("transition", "trajectory"):
            p = adapter_params(level, sizes)
            inp = {"rollouts": rollouts}
            cases.append({"name": f"{name}__{level}", "params": p, "input": inp,
                          "expected": run_agl_trajectory(p, inp)})
    s = Scenarios(607)
    empty = [s.rollout("ae-a", "q0", 0, 1.0, [s.call(s.ids(3), 0)]), s.rollout("ae-b", "q0", 1, 0.0, None)]
    p = adapter_params("transition", {"P": 8, "R": 8, "fill": 0.0})
    inp = {"rollouts": empty}
    cases.append({"name": "all_rows_empty_raises__transition", "params": p, "input": inp,
                  "expected": run_agl_trajectory(p, inp)})
    return cases


# ---------------------------------------------------------------------------------------------------------------
# agl_rollout_level_advantage: compute_rollout_level_advantage → normalize_advantages_by_rollout → per_rollout_mean


def run_agl_rollout_level_advantage(params: dict, inp: dict) -> dict:
    import agentlightning.verl.per_rollout_loss  # noqa: F401
    from agentlightning.verl.per_rollout_loss import normalize_advantages_by_rollout
    from agentlightning.verl.rollout_level_advantage import compute_rollout_level_advantage
    from verl.trainer.ppo import core_algos
    from verl.workers.config import ActorConfig

    mask = inp["response_mask"]
    B = len(mask)
    estimator, gamma, norm = params["adv_estimator"], params.get("gamma", 1.0), params["norm_adv_by_std_in_grpo"]
    torch_dtype = torch.bfloat16 if params.get("reward_dtype") == "bfloat16" else torch.float32
    batch = DataProto(
        batch=TensorDict({
            "token_level_rewards": torch.tensor(inp["token_level_rewards"]).to(torch_dtype),
            "response_mask": torch.tensor(mask, dtype=torch.int64),
        }, batch_size=B),
        non_tensor_batch={"uid": np.array(inp["uid"], dtype=object), "data_id_list": np.array(inp["uid"], dtype=object),
                          "rollout_id_list": np.array(inp["rollout_id"], dtype=object)},
    )
    algo = AlgoConfig(adv_estimator=estimator, gamma=gamma, lam=1.0, norm_adv_by_std_in_grpo=norm)
    try:
        batch, metrics = compute_rollout_level_advantage(batch, adv_estimator=estimator, gamma=gamma,
                                                         lam=params.get("lam", 1.0),
                                                         num_repeat=params.get("num_repeat", 1),
                                                         norm_adv_by_std_in_grpo=norm, config=algo)
        adv = batch.batch["advantages"]
        normalized = normalize_advantages_by_rollout(adv, batch.batch["response_mask"],
                                                     batch.non_tensor_batch["rollout_id_list"],
                                                     num_trained_rows=params["num_trained_rows"])
        config = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1,
                             clip_ratio=params["clip_ratio"], clip_ratio_low=params["clip_ratio_low"],
                             clip_ratio_high=params["clip_ratio_high"], clip_ratio_c=params["clip_ratio_c"],
                             loss_agg_mode=params.get("loss_agg_mode", "token-mean"))
        config.global_batch_info.update(params.get("global_batch_info") or {})
        isw = inp.get("rollout_is_weights")
        pg_loss, m = core_algos.get_policy_loss_fn(params.get("loss_mode", "per_rollout_mean"))(
            old_log_prob=torch.tensor(inp["old_log_prob"]), log_prob=torch.tensor(inp["log_prob"]),
            advantages=normalized, response_mask=batch.batch["response_mask"],
            loss_agg_mode=config.loss_agg_mode, config=config,
            rollout_is_weights=None if isw is None else torch.tensor(isw),
        )
        return {
            "advantages": adv, "returns": batch.batch["returns"],
            "advantages_dtype": str(adv.dtype).replace("torch.", ""),
            "normalized_advantages": normalized, "pg_loss": float(pg_loss),
            "pg_clipfrac": m["actor/pg_clipfrac"], "ppo_kl": m["actor/ppo_kl"],
            "pg_clipfrac_lower": m["actor/pg_clipfrac_lower"], "rollout_level_advantage_metrics": metrics,
        }
    except Exception as err:  # noqa: BLE001
        return raises(err)


def rla_case(name: str, estimator: str, rollout_id: list[str], uid: list[str], mask: list, scores: list[float], *,
             dtype: str = "float32", norm: bool = True, gamma: float = 1.0, num_trained_rows: int | None = None,
             old=None, lp=None, isw=None, dp: int | None = None, clip=(0.2, 0.2, 0.28), c: float = 3.0,
             rewards: list | None = None) -> dict:
    B, T = len(mask), len(mask[0])
    rng = Rng(zlib.crc32(name.encode()))
    old = old if old is not None else rng.normal((B, T), 0.5, -1.0)
    lp = lp if lp is not None else f32(np.asarray(old) + np.asarray(rng.normal((B, T), 0.2)))
    ntr = num_trained_rows if num_trained_rows is not None else B
    params = {"adv_estimator": estimator, "norm_adv_by_std_in_grpo": norm, "gamma": gamma, "lam": 1.0,
              "num_repeat": 1, "reward_dtype": dtype, "num_trained_rows": ntr, "clip_ratio": clip[0],
              "clip_ratio_low": clip[1], "clip_ratio_high": clip[2], "clip_ratio_c": c,
              "loss_mode": "per_rollout_mean", "loss_agg_mode": "token-mean",
              "global_batch_info": {} if dp is None else {"dp_size": dp}}
    inp = {"rollout_id": rollout_id, "uid": uid,
           "token_level_rewards": f32(rewards if rewards is not None else outcome_rewards(mask, scores)),
           "response_mask": mask, "old_log_prob": f32(old), "log_prob": f32(lp),
           "rollout_is_weights": None if isw is None else f32(isw)}
    return {"name": name, "params": params, "input": inp, "expected": run_agl_rollout_level_advantage(params, inp)}


def agl_rollout_level_cases() -> list[dict]:
    rng = Rng(707)
    cases = []
    # 11 rows from 7 rollouts in 3 uid groups, rows of a rollout interleaved with others
    rid = ["r0", "r1", "r0", "r2", "r3", "r1", "r4", "r5", "r6", "r4", "r0"]
    uid = ["u0", "u0", "u0", "u0", "u1", "u0", "u1", "u1", "u2", "u1", "u0"]
    reward_of = {"r0": 0.8, "r1": 0.1, "r2": 0.45, "r3": 1.0, "r4": 0.0, "r5": 0.35, "r6": 0.6}
    mask = rng.mask(11, 9, holes=True)
    scores = [reward_of[r] for r in rid]
    for dtype in ("float32", "bfloat16"):
        sfx = "" if dtype == "float32" else "_bf16"
        for est in ("grpo", "rloo", "opo", "gpg", "grpo_passk", "reinforce_plus_plus_baseline"):
            cases.append(rla_case(f"{est}_multirow_rollouts{sfx}", est, rid, uid, mask, scores, dtype=dtype))
        cases.append(rla_case(f"grpo_nonorm_multirow_rollouts{sfx}", "grpo", rid, uid, mask, scores, dtype=dtype,
                              norm=False))
        cases.append(rla_case(f"rpp_gamma1_holes_non_constant_raises{sfx}", "reinforce_plus_plus", rid, uid, mask, scores,
                              dtype=dtype))
        cases.append(rla_case(f"grpo_num_trained_rows_64{sfx}", "grpo", rid, uid, mask, scores, dtype=dtype,
                              num_trained_rows=64))
        # the docs' 4+4 group: continuous rewards that bf16 rounds
        r8 = [f"g{i}" for i in range(8)]
        m8 = rng.mask(8, 7)
        s8 = [0.9, 0.7, 0.2, 0.1, 0.85, 0.15, 0.6, 0.3]
        cases.append(rla_case(f"grpo_4plus4{sfx}", "grpo", r8, ["a"] * 4 + ["b"] * 4, m8, s8, dtype=dtype))
    cases.append(rla_case("grpo_singleton_uid_group", "grpo", ["x", "y", "x"], ["u", "v", "u"],
                          [[1, 1, 0], [1, 0, 0], [1, 1, 1]], [1.0, 0.0, 1.0]))
    cases.append(rla_case("grpo_binary_allequal_group", "grpo", ["a", "b", "c", "d"], ["u"] * 4,
                          rng.mask(4, 5), [1.0, 1.0, 1.0, 1.0]))
    cases.append(rla_case("grpo_rollout_is_weights", "grpo", rid, uid, mask, scores,
                          isw=rng.uniform((11, 9), 0.2, 2.0)))
    cases.append(rla_case("grpo_dp2", "grpo", rid, uid, mask, scores, dp=2))
    far_old = rng.normal((11, 9), 0.5, -1.0)
    cases.append(rla_case("grpo_far_ratios_dual_clip", "grpo", rid, uid, mask, scores, old=far_old,
                          lp=f32(np.asarray(far_old) + np.asarray(rng.normal((11, 9), 1.5))), c=3.0))
    m_empty = [[1, 1, 0], [0, 0, 0], [1, 0, 0]]
    cases.append(rla_case("grpo_empty_nonrepresentative_row_raises", "grpo", ["a", "a", "b"], ["u", "u", "u"],
                          m_empty, [1.0, 1.0, 0.0]))
    cases.append(rla_case("grpo_rows_disagree_on_reward_raises", "grpo", ["a", "a", "b"], ["u", "u", "u"],
                          [[1, 1, 0], [1, 1, 1], [1, 0, 0]], [1.0, 0.5, 0.0]))
    cases.append(rla_case("grpo_rows_disagree_on_uid_raises", "grpo", ["a", "a", "b"], ["u", "v", "u"],
                          [[1, 1, 0], [1, 1, 1], [1, 0, 0]], [1.0, 1.0, 0.0]))
    holes = [[1, 1, 0, 1, 1], [1, 1, 1, 1, 0], [1, 0, 1, 1, 1]]
    cases.append(rla_case("rpp_gamma0.9_holes_non_constant_raises", "reinforce_plus_plus", ["a", "b", "c"],
                          ["u", "u", "u"], holes, [1.0, 0.0, 0.5], gamma=0.9))
    return cases


# ---------------------------------------------------------------------------------------------------------------
# agl_train_step: the trainer's order from completed rollouts to every loss mode's per-token weights


def run_agl_train_step(params: dict, inp: dict) -> dict:
    try:
        return train_step_view(completed_rollouts(inp["rollouts"]), params, inp.get("old_log_probs"))
    except Exception as err:  # noqa: BLE001
        return raises(err)


def train_step_case(name: str, rollouts: list[dict], p: dict, *, with_old: bool = False, seed: int = 0) -> dict:
    inp: dict = {"rollouts": rollouts, "old_log_probs": None}
    if with_old:
        try:
            _, lens = kept_row_count(completed_rollouts(rollouts), p)
            rng = Rng(seed)
            inp["old_log_probs"] = [rng.uniform((n,), -3.0, -0.05) for n in lens]
        except Exception:  # noqa: BLE001 - the run below records the exception
            pass
    return {"name": name, "params": p, "input": inp, "expected": run_agl_train_step(p, inp)}


def agl_train_step_cases() -> list[dict]:
    s = Scenarios(808)
    groups = []
    for g in range(3):
        for k in range(4):
            shape = (g + k) % 4
            if shape == 0:
                calls = s.chain(3, 5, (2, 5), (1, 3))
            elif shape == 1:  # a merge failure: two rows at trajectory level
                calls = s.chain(2, 4, (2, 4), (1, 2))
                calls.append(s.call(s.ids(6), 3))
            elif shape == 2:  # over-long first prompt: is_drop
                calls = s.chain(2, 30, (2, 3), (1, 1))
            else:
                calls = [s.call(s.ids(5), int(s.rng.g.integers(2, 9)))]
            reward = [0.9, 0.3, 0.0, 1.0, 0.65, None][(3 * g + k) % 6]
            groups.append(s.rollout(f"ts-{g}-{k}", f"task-{g}", 4 * g + k, reward, calls))
    groups.append(s.rollout("ts-nocalls", "task-0", 99, 1.0, None))
    groups.append(s.rollout("ts-empty", "task-1", 98, 0.5, []))
    base = {"trace_aggregator_level": "trajectory", "max_prompt_length": 24, "max_response_length": 28,
            "pad_token_id": 0, "reward_fillna_value": 0.0, "adv_estimator": "grpo",
            "norm_adv_by_std_in_grpo": True, "enable_rollout_level_advantage": True, "gamma": 1.0,
            "clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0,
            "loss_scale_factor": None, "rollout_n": 1, "rollout_correction": None, "balance_batch": True}
    cases = []
    for level in ("trajectory", "transition"):
        for rla in (True, False):
            for est in ("grpo", "rloo", "opo", "gpg", "reinforce_plus_plus_baseline", "grpo_passk"):
                if est not in ("grpo", "rloo") and not rla and level == "transition":
                    continue
                p = {**base, "trace_aggregator_level": level, "enable_rollout_level_advantage": rla,
                     "adv_estimator": est}
                cases.append(train_step_case(f"{est}_{level}_{'rollout' if rla else 'row'}_level", groups, p))
    cases.append(train_step_case("grpo_nonorm_trajectory", groups, {**base, "norm_adv_by_std_in_grpo": False}))
    for est in ("grpo", "opo"):
        cases.append(train_step_case(f"{est}_trajectory_rollout_level_no_balance", groups,
                                     {**base, "adv_estimator": est, "balance_batch": False}))
    cases.append(train_step_case("grpo_float32_rewards", groups, {**base, "reward_dtype": "float32"}))
    cases.append(train_step_case("grpo_loss_scale_factor", groups, {**base, "loss_scale_factor": 100}))
    cases.append(train_step_case("grpo_long_limits_no_drop", groups,
                                 {**base, "max_prompt_length": 64, "max_response_length": 64}))
    cases.append(train_step_case("grpo_truncating_response", groups, {**base, "max_response_length": 9}))
    rc = {"rollout_is": "token", "rollout_is_threshold": 2.0, "rollout_is_batch_normalize": False,
          "rollout_rs": "token_k1", "rollout_rs_threshold": "0.3_3.0"}
    cases.append(train_step_case("grpo_rollout_correction_trainer_log_probs", groups,
                                 {**base, "rollout_correction": rc}, with_old=True, seed=11))
    cases.append(train_step_case("grpo_trainer_log_probs_no_correction", groups, base, with_old=True, seed=12))
    cases.append(train_step_case("grpo_sequence_is_batchnorm", groups,
                                 {**base, "rollout_correction": {"rollout_is": "sequence",
                                                                 "rollout_is_threshold": 3.0,
                                                                 "rollout_is_batch_normalize": True,
                                                                 "rollout_rs": None,
                                                                 "rollout_rs_threshold": None}},
                                 with_old=True, seed=13))
    dropped_all = [s.rollout("dd-0", "t", 0, 1.0, [s.call(s.ids(40), 3)])]
    cases.append(train_step_case("every_row_dropped_skips_the_step", dropped_all, base))
    return cases


FAMILIES = {
    "agl_trajectory": (agl_source("agentlightning/verl/rollout_adapter.py:RolloutAdapter.get_train_data_batch"),
                       agl_trajectory_cases),
    "agl_rollout_level_advantage": (
        agl_source("agentlightning/verl/rollout_level_advantage.py:compute_rollout_level_advantage (-> verl "
                   "ray_trainer.compute_advantage) + per_rollout_loss.py:normalize_advantages_by_rollout + "
                   "get_policy_loss_fn('per_rollout_mean')"),
        agl_rollout_level_cases,
    ),
    "agl_train_step": (
        agl_source("agentlightning/verl/trainer.py:AgentLightningRayPPOTrainer._train_step order (RolloutAdapter, "
                   "is_drop removal, rollout correction, rollout-level advantage, per-rollout normalisation) -> "
                   "verl policy losses with the 0.8.0 engine's global batch info, grads by autograd"),
        agl_train_step_cases,
    ),
}

RUNNERS = {
    "agl_trajectory": run_agl_trajectory,
    "agl_rollout_level_advantage": run_agl_rollout_level_advantage,
    "agl_train_step": run_agl_train_step,
}
