#!/usr/bin/env python3
"""Same-run peer for the core benchmark: Agent Lightning's own Python path on one CPU core.

It runs the installed packages (set up by python/setup_peer.sh), not a re-implementation:
  (a) merge   agentlightning.verl.rollout_adapter.RolloutAdapter(trace_aggregator_level="trajectory")
              .get_train_data_batch(rollouts, global_steps=0)
  (b) advantage  agentlightning.verl.rollout_level_advantage.compute_rollout_level_advantage with GRPO, which
              calls verl.trainer.ppo.ray_trainer.compute_advantage -> core_algos.compute_grpo_outcome_advantage
  (c) normalize  agentlightning.verl.per_rollout_loss.normalize_advantages_by_rollout
in the order, and with the arguments, that agentlightning/verl/trainer.py uses (uid = data_id_list,
token_level_rewards = token_level_scores, num_trained_rows = len(batch)).

Reading and validating the file and building the CompletedRollout/Triplet pydantic objects are not timed.
The objects are rebuilt before every repetition because get_train_data_batch extends the first triplet's
log_probs list in place (`current_response_log_probs += ...`), so a reused input would grow.

Usage: bench_peer.py BATCH.json [--repeat R]
Prints one JSON line on stdout; anything the libraries print goes to stderr. Exit 2 on a bad file or flag.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import statistics
import sys
import time
from collections import Counter
from typing import Any, NoReturn

PROG = "bench_peer"


class BatchError(Exception):
    """A problem with the batch file, worded for the person who made it."""


def fail(message: str) -> NoReturn:
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------------------------
# Reading and validating the batch file (not timed).


def _is_int(value: Any) -> bool:
    return type(value) is int  # bool is not a token id


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _int_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list):
        raise BatchError(f"{where} must be a list of integers, got {type(value).__name__}")
    # map(type, ...) runs in C: ~76M ids are checked in a couple of seconds.
    if not set(map(type, value)) <= {int}:
        bad = next(i for i, v in enumerate(value) if not _is_int(v))
        raise BatchError(f"{where}[{bad}] must be an integer token id, got {value[bad]!r}")
    return value


def _log_prob_list(value: Any, where: str) -> list[float] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise BatchError(f"{where} must be a list of numbers or null, got {type(value).__name__}")
    if not set(map(type, value)) <= {int, float}:
        bad = next(i for i, v in enumerate(value) if type(v) not in (int, float))
        raise BatchError(f"{where}[{bad}] must be a number, got {value[bad]!r}")
    return value


def _field(obj: dict, key: str, where: str) -> Any:
    if key not in obj:
        raise BatchError(f"{where} is missing {key!r}")
    return obj[key]


def validate_batch(doc: Any) -> tuple[list[dict], dict]:
    """Check the structure; returns (rollouts, params) with every field typed as the adapter needs."""
    if not isinstance(doc, dict):
        raise BatchError(f"top level must be an object with 'rollouts' and 'params', got {type(doc).__name__}")
    rollouts = _field(doc, "rollouts", "top level")
    if not isinstance(rollouts, list) or not rollouts:
        raise BatchError("'rollouts' must be a non-empty list")
    params = _field(doc, "params", "top level")
    if not isinstance(params, dict):
        raise BatchError(f"'params' must be an object, got {type(params).__name__}")
    for key in ("max_prompt_length", "max_response_length"):
        value = _field(params, key, "params")
        if not _is_int(value) or value <= 0:
            raise BatchError(f"params.{key} must be a positive integer, got {value!r}")
    if not _is_int(_field(params, "pad_token_id", "params")):
        raise BatchError(f"params.pad_token_id must be an integer, got {params['pad_token_id']!r}")
    if not _is_number(_field(params, "reward_fillna_value", "params")):
        raise BatchError(f"params.reward_fillna_value must be a finite number, got {params['reward_fillna_value']!r}")

    seen_ids: set[str] = set()
    for i, rollout in enumerate(rollouts):
        where = f"rollouts[{i}]"
        if not isinstance(rollout, dict):
            raise BatchError(f"{where} must be an object, got {type(rollout).__name__}")
        for key in ("rollout_id", "data_id"):
            if not isinstance(_field(rollout, key, where), str):
                raise BatchError(f"{where}.{key} must be a string, got {rollout[key]!r}")
        if rollout["rollout_id"] in seen_ids:
            raise BatchError(f"{where}.rollout_id {rollout['rollout_id']!r} is used by an earlier rollout")
        seen_ids.add(rollout["rollout_id"])
        for key in ("step", "sample_idx_in_step"):
            if not _is_int(_field(rollout, key, where)):
                raise BatchError(f"{where}.{key} must be an integer, got {rollout[key]!r}")
        reward = _field(rollout, "final_reward", where)
        if reward is not None and not _is_number(reward):
            raise BatchError(f"{where}.final_reward must be a finite number or null, got {reward!r}")
        triplets = _field(rollout, "triplets", where)
        if triplets is None:
            continue
        if not isinstance(triplets, list):
            raise BatchError(f"{where}.triplets must be a list or null, got {type(triplets).__name__}")
        for j, triplet in enumerate(triplets):
            twhere = f"{where}.triplets[{j}]"
            if not isinstance(triplet, dict):
                raise BatchError(f"{twhere} must be an object, got {type(triplet).__name__}")
            _int_list(_field(triplet, "prompt_token_ids", twhere), f"{twhere}.prompt_token_ids")
            _int_list(_field(triplet, "response_token_ids", twhere), f"{twhere}.response_token_ids")
            # A log-prob list of the wrong length is legal: upstream then drops rollout_log_probs, as it would.
            _log_prob_list(_field(triplet, "response_log_probs", twhere), f"{twhere}.response_log_probs")
    return rollouts, params


def load_batch(path: str) -> tuple[list[dict], dict]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as err:
        fail(f"cannot read batch file {path}: {err.strerror}")
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError as err:
        fail(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})")
    except json.JSONDecodeError as err:
        fail(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}")
    del raw
    try:
        return validate_batch(doc)
    except BatchError as err:
        fail(f"{path}: {err}")


def count_tokens(rollouts: list[dict]) -> tuple[int, int]:
    """(trajectory tokens, tokens summed over calls).

    Trajectory tokens are the prompt+response tokens of the training rows the trajectory-level aggregation is fed:
    a call whose prompt extends the previous call's prompt+response adds only its new tokens (the observation)
    and its response; any other call adds its whole prompt. For the benchmark's shape this is each rollout's
    final context. The second count adds every call's full prompt, so shared prefixes count once per call.
    """
    trajectory = calls = 0
    for rollout in rollouts:
        context: list[int] | None = None
        for triplet in rollout["triplets"] or ():
            prompt, response = triplet["prompt_token_ids"], triplet["response_token_ids"]
            calls += len(prompt) + len(response)
            if context is not None and prompt[: len(context)] == context:
                trajectory += len(prompt) - len(context) + len(response)
            else:
                trajectory += len(prompt) + len(response)
            context = prompt + response
    return trajectory, calls


# ---------------------------------------------------------------------------------------------------------------
# The timed path.


def build_rollouts(CompletedRollout: Any, Triplet: Any, rollouts: list[dict]) -> list[Any]:
    """Real pydantic objects, built as the AGL rollout manager builds them (prompt/response dicts)."""
    out = []
    for r in rollouts:
        triplets = None
        if r["triplets"] is not None:
            triplets = [
                Triplet(
                    prompt={"token_ids": t["prompt_token_ids"]},
                    response={
                        "token_ids": t["response_token_ids"],
                        # A fresh list: the adapter extends it in place.
                        "log_probs": None if t["response_log_probs"] is None else list(t["response_log_probs"]),
                    },
                )
                for t in r["triplets"]
            ]
        out.append(
            CompletedRollout(
                rollout_id=r["rollout_id"],
                data_id=r["data_id"],
                step=r["step"],
                sample_idx_in_step=r["sample_idx_in_step"],
                enqueue_time=0.0,
                final_reward=r["final_reward"],
                triplets=triplets,
            )
        )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("batch", help="batch JSON file (rollouts + params)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions; the median is printed (default 3)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")

    # The JSON line must be the only thing on stdout; the libraries print progress and warnings there, from
    # Python and from native code, so point file descriptor 1 at stderr until the result is ready.
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        result = run(args.batch, args.repeat)
    except (RuntimeError, ValueError) as err:
        # What upstream raises on a batch it cannot train on, e.g. "get_train_data_batch emitted zero training
        # rows." when every rollout is empty.
        fail(f"{args.batch}: the Agent Lightning path rejected this batch: {type(err).__name__}: {err}")
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(real_stdout)
    print(json.dumps(result), flush=True)
    return 0


def run(path: str, repeat: int) -> dict[str, Any]:
    rollouts_json, params = load_batch(path)
    tokens, call_tokens = count_tokens(rollouts_json)

    from importlib.metadata import version

    import torch
    import verl
    from agentlightning.verl.agl_rollout_manager import CompletedRollout, Triplet
    from agentlightning.verl.per_rollout_loss import normalize_advantages_by_rollout
    from agentlightning.verl.rollout_adapter import RolloutAdapter
    from agentlightning.verl.rollout_level_advantage import compute_rollout_level_advantage
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.core_algos import AdvantageEstimator

    # The adapter imports wandb lazily on its first call to see whether a run is active; import it here so the
    # first repetition does not time a multi-second import.
    with contextlib.suppress(ImportError):
        import wandb  # noqa: F401

    torch.set_num_threads(1)
    # The trainer passes rollout_n as num_repeat; for GRPO verl ignores it, but pass the batch's group size.
    group_size = max(Counter(r["data_id"] for r in rollouts_json).values())
    algo = AlgoConfig(adv_estimator="grpo", gamma=1.0, lam=1.0, norm_adv_by_std_in_grpo=True)

    samples: dict[str, list[float]] = {"merge": [], "advantage": [], "normalize": [], "total": []}
    cpu_samples: dict[str, list[float]] = {"merge": [], "advantage": [], "normalize": [], "total": []}
    rows = 0
    for _ in range(repeat):
        rollouts = build_rollouts(CompletedRollout, Triplet, rollouts_json)
        gc.collect()

        c0, t0 = time.process_time(), time.perf_counter()
        adapter = RolloutAdapter(
            max_prompt_length=params["max_prompt_length"],
            max_response_length=params["max_response_length"],
            device=torch.device("cpu"),
            pad_token_id=params["pad_token_id"],
            reward_fillna_value=float(params["reward_fillna_value"]),
            trace_aggregator_level="trajectory",
            tokenizer=None,
        )
        batch, _metrics = adapter.get_train_data_batch(rollouts, global_steps=0)
        t1, c1 = time.perf_counter(), time.process_time()
        # As agentlightning/verl/trainer.py: the GRPO group is the task, and without an in-reward KL the rewards
        # are the scores.
        batch.non_tensor_batch["uid"] = batch.non_tensor_batch["data_id_list"]
        batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
        batch, _adv_metrics = compute_rollout_level_advantage(
            batch,
            adv_estimator=AdvantageEstimator.GRPO,
            gamma=algo.gamma,
            lam=algo.lam,
            num_repeat=group_size,
            norm_adv_by_std_in_grpo=algo.norm_adv_by_std_in_grpo,
            config=algo,
        )
        t2, c2 = time.perf_counter(), time.process_time()
        batch.batch["advantages"] = normalize_advantages_by_rollout(
            batch.batch["advantages"],
            batch.batch["response_mask"],
            batch.non_tensor_batch["rollout_id_list"],
            num_trained_rows=len(batch),
        )
        t3, c3 = time.perf_counter(), time.process_time()

        rows = len(batch)
        samples["merge"].append(t1 - t0)
        samples["advantage"].append(t2 - t1)
        samples["normalize"].append(t3 - t2)
        samples["total"].append(t3 - t0)
        cpu_samples["merge"].append(c1 - c0)
        cpu_samples["advantage"].append(c2 - c1)
        cpu_samples["normalize"].append(c3 - c2)
        cpu_samples["total"].append(c3 - c0)
        del batch, rollouts, adapter

    seconds = {stage: statistics.median(values) for stage, values in samples.items()}
    cpu_seconds = {stage: statistics.median(values) for stage, values in cpu_samples.items()}
    return {
        "peer": f"agentlightning {version('agentlightning')} + verl {verl.__version__}",
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds["total"],
        "repeat": repeat,
        # Context for the reader; the fields above are the contract.
        "call_tokens": call_tokens,
        "call_tokens_per_s": call_tokens / seconds["total"],
        "rollouts": len(rollouts_json),
        "rows": rows,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "samples": samples,
        # Process CPU time of the same stages: on a shared machine wall time also counts time spent waiting for
        # a core, which this does not.
        "cpu_seconds": cpu_seconds,
        "cpu_tokens_per_s": tokens / cpu_seconds["total"] if cpu_seconds["total"] > 0 else None,
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
