#!/usr/bin/env python3
"""Check that the peer's installed packages reproduce the golden Agent Lightning vectors.

The golden files were made with verl at a 0.8.0.dev commit; the peer installs verl 0.8.0 and agentlightning 1.0.0
from PyPI. This runs the same upstream calls the peer times on every `agl_trajectory` case (rows, masks, scores)
and on the `agl_rollout_level_advantage` cases (advantages, per-rollout normalised advantages), so a version
drift that changed the math would show here.

Usage: check_peer_golden.py [GOLDEN_DIR]   (default: the nearest shared/golden in or above the repository)
Prints one line per failing case and the closing line "N passed, M failed"; exit 1 when any case fails.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any


def close(got: Any, exp: Any, tol: dict) -> bool:
    if isinstance(exp, list):
        return isinstance(got, list) and len(got) == len(exp) and all(close(g, e, tol) for g, e in zip(got, exp))
    if isinstance(exp, str) and exp in ("nan", "inf", "-inf") and isinstance(got, float):
        exp = float(exp)
    if isinstance(exp, str) or isinstance(exp, bool) or exp is None:
        return got == exp
    if isinstance(exp, float) or isinstance(got, float):
        if math.isnan(exp):
            return math.isnan(got)
        if math.isinf(exp):
            return got == exp
        return abs(got - exp) <= tol["abs"] + tol["rel"] * abs(exp)
    return got == exp


def trajectory_case(case: dict) -> str | None:
    import torch
    from agentlightning.verl.agl_rollout_manager import CompletedRollout, Triplet
    from agentlightning.verl.rollout_adapter import RolloutAdapter

    p = case["params"]
    rollouts = [
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
        for r in case["input"]["rollouts"]
    ]
    adapter = RolloutAdapter(
        max_prompt_length=p["max_prompt_length"],
        max_response_length=p["max_response_length"],
        device=torch.device("cpu"),
        pad_token_id=p["pad_token_id"],
        reward_fillna_value=p["reward_fillna_value"],
        trace_aggregator_level=p["trace_aggregator_level"],
    )
    expected = case["expected"]
    try:
        batch, _ = adapter.get_train_data_batch(rollouts, global_steps=p["global_steps"])
    except Exception as err:  # noqa: BLE001 - compared with the recorded upstream exception
        if "raises" in expected and type(err).__name__ == expected["raises"]:
            return None
        return f"raised {type(err).__name__}: {err}"
    if "raises" in expected:
        return f"expected {expected['raises']}, got a batch"
    if len(batch) != expected["n_rows"]:
        return f"n_rows {len(batch)} != {expected['n_rows']}"
    P = p["max_prompt_length"]
    attention = batch.batch["attention_mask"]
    for i, row in enumerate(expected["rows"]):
        prompt_mask = attention[i, :P].bool()
        response_len = int(attention[i, P:].sum())
        got = {
            "rollout_id": str(batch.non_tensor_batch["rollout_id_list"][i]),
            "prompt_ids": batch.batch["prompts"][i][prompt_mask].tolist(),
            "response_ids": batch.batch["responses"][i, :response_len].tolist(),
            "token_level_scores": batch.batch["token_level_scores"][i, :response_len].float().tolist(),
            "is_drop": bool(batch.batch["is_drop_mask"][i]),
        }
        if "response_mask" in batch.batch:
            got["response_mask"] = batch.batch["response_mask"][i, :response_len].tolist()
        if row.get("response_log_probs") is not None and "rollout_log_probs" in batch.batch:
            got["response_log_probs"] = batch.batch["rollout_log_probs"][i, :response_len].tolist()
        for key, value in got.items():
            if not close(value, row[key], {"abs": 1e-5, "rel": 1e-4}):
                return f"row {i} {key}: got {value} expected {row[key]}"
    return None


def advantage_case(case: dict) -> str | None:
    import numpy as np
    import torch
    from agentlightning.verl.per_rollout_loss import normalize_advantages_by_rollout
    from agentlightning.verl.rollout_level_advantage import compute_rollout_level_advantage
    from tensordict import TensorDict
    from verl import DataProto
    from verl.trainer.config import AlgoConfig

    p, inp, expected = case["params"], case["input"], case["expected"]
    dtype = torch.bfloat16 if p["reward_dtype"] == "bfloat16" else torch.float32
    rewards = torch.tensor(inp["token_level_rewards"], dtype=torch.float32).to(dtype)
    mask = torch.tensor(inp["response_mask"], dtype=torch.int64)
    batch = DataProto(
        batch=TensorDict({"token_level_rewards": rewards, "response_mask": mask}, batch_size=len(mask)),
        non_tensor_batch={
            "uid": np.array(inp["uid"], dtype=object),
            "data_id_list": np.array(inp["uid"], dtype=object),
            "rollout_id_list": np.array(inp["rollout_id"], dtype=object),
        },
    )
    algo = AlgoConfig(
        adv_estimator=p["adv_estimator"],
        gamma=p["gamma"],
        lam=p["lam"],
        norm_adv_by_std_in_grpo=p["norm_adv_by_std_in_grpo"],
    )
    try:
        batch, _ = compute_rollout_level_advantage(
            batch,
            adv_estimator=p["adv_estimator"],
            gamma=p["gamma"],
            lam=p["lam"],
            num_repeat=p["num_repeat"],
            norm_adv_by_std_in_grpo=p["norm_adv_by_std_in_grpo"],
            config=algo,
        )
        normalized = normalize_advantages_by_rollout(
            batch.batch["advantages"],
            batch.batch["response_mask"],
            batch.non_tensor_batch["rollout_id_list"],
            num_trained_rows=p["num_trained_rows"],
        )
    except Exception as err:  # noqa: BLE001 - compared with the recorded upstream exception
        if "raises" in expected and type(err).__name__ == expected["raises"]:
            return None
        return f"raised {type(err).__name__}: {err}"
    if "raises" in expected:
        return f"expected {expected['raises']}, got advantages"
    tol = {"abs": 1e-5, "rel": 1e-4}
    for key, value in (("advantages", batch.batch["advantages"]), ("normalized_advantages", normalized)):
        if not close(value.float().tolist(), expected[key], tol):
            return f"{key}: got {value.float().tolist()} expected {expected[key]}"
    return None


def find_golden() -> str | None:
    directory = os.path.dirname(os.path.abspath(__file__))
    while True:
        candidate = os.path.join(directory, "shared", "golden")
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def main(argv: list[str]) -> int:
    golden = argv[0] if argv else find_golden()
    if golden is None:
        print("check_peer_golden: no shared/golden found in or above the repository; pass GOLDEN_DIR", file=sys.stderr)
        return 2
    passed = failed = 0
    for family, check in (("agl_trajectory", trajectory_case), ("agl_rollout_level_advantage", advantage_case)):
        path = os.path.join(golden, f"{family}.json")
        try:
            with open(path, encoding="utf-8") as handle:
                cases = json.load(handle)["cases"]
        except (OSError, ValueError, KeyError) as err:
            print(f"check_peer_golden: cannot read {path}: {err}", file=sys.stderr)
            return 2
        for case in cases:
            problem = check(case)
            if problem is None:
                passed += 1
            else:
                failed += 1
                print(f"FAIL {family}/{case['name']}: {problem}", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
