#!/usr/bin/env python3
"""Cross-check: traces from `lab rollout` through Agent Lightning's real trainer path and through our pipeline.

For every trace set (each harness; every history behaviour; scripted and random engines; the scripted expert's and
the random engine's attempts at the same tasks combined, so groups mix rewards) and every option set (levels,
estimators, rollout-level on/off, norm by std, reward dtype, truncating limits that mark rows is_drop, balance_batch
off, seq-mean-token-sum-norm's loss_scale_factor):

  upstream  the trace as Agent Lightning gateway events (`lab convert --to agl-events`) → the gateway's triplet view
            (agentlightning/server/routes/events.py `_to_triplet_format` + `_dedupe_model_requests_by_prompt_token_ids`)
            → `AglRolloutManager._build_completed_rollout` → python/golden/agl_step.py `train_step_view`: RolloutAdapter,
            the trainer's order (is_drop removal, balance_batch, rewards, rollout-level or row advantages,
            normalize_advantages_by_rollout) and verl's policy losses, ∂L/∂log_prob by autograd at ratio 1;
  ours      `npm run lab -- analyze <trace> --json --per-token --sign grad` with the same options (∂L/∂logπ, as autograd gives).

Rows are matched by the trainer's order; per token the script compares the estimator's advantages, the advantages
per_rollout_mean's loss sees, the mask as trained, and every loss mode's weight, with |ours − upstream| ≤
1e-4·|upstream| + 1e-5·(the largest |upstream| of that quantity in the case; weights are small: 1/tokens), and prints
mismatch counts per trace set and option set, then the totals.

Usage: crosscheck_trainer.py [--out DIR] [--quick]
  Needs the peer venv (python/setup_peer.sh) for this interpreter and `npm` on PATH (run from anywhere).
Exit 1 when anything mismatches, 2 when a step fails to run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings
from typing import Any

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(here)
sys.path.insert(0, os.path.join(here, "golden"))

TOL = {"abs": 1e-5, "rel": 1e-4}

# (name, [lab rollout arguments per part]); parts of one set are combined into one trace (mixed rewards)
TRACE_SETS: list[tuple[str, list[list[str]]]] = [
    ("instruction-scripted", [["--harness", "instruction", "--engine", "scripted", "--n", "6", "--group-size", "2"]]),
    ("instruction-mixed", [
        ["--harness", "instruction", "--engine", "scripted", "--n", "4", "--group-size", "2"],
        ["--harness", "instruction", "--engine", "random", "--n", "4", "--group-size", "2", "--max-tokens", "48"],
    ]),
    ("search-scripted", [["--harness", "search", "--engine", "scripted", "--n", "4", "--group-size", "2"]]),
    *[
        (f"search-{b}-mixed", [
            ["--harness", "search", "--engine", "scripted", "--n", "3", "--group-size", "2", "--behaviour", b],
            ["--harness", "search", "--engine", "random", "--n", "3", "--group-size", "2", "--behaviour", b,
             "--max-turns", "3", "--max-tokens", "40"],
        ])
        for b in ("strip-think", "sliding-window", "summarize", "reformat-tool-output", "changing-system-prompt")
    ],
    ("coding-mixed", [
        ["--harness", "coding", "--engine", "scripted", "--n", "4", "--group-size", "2"],
        ["--harness", "coding", "--engine", "random", "--n", "4", "--group-size", "2", "--max-turns", "3",
         "--max-tokens", "48"],
    ]),
    ("coding-random-long", [["--harness", "coding", "--engine", "random", "--n", "3", "--group-size", "3",
                             "--max-turns", "4", "--max-tokens", "200"]]),
]

BASE = {"trace_aggregator_level": "trajectory", "max_prompt_length": 2048, "max_response_length": 8192,
        "pad_token_id": 0, "reward_fillna_value": 0.0, "adv_estimator": "grpo", "norm_adv_by_std_in_grpo": True,
        "enable_rollout_level_advantage": True, "gamma": 1.0, "clip_ratio": 0.2, "clip_ratio_low": 0.2,
        "clip_ratio_high": 0.2, "clip_ratio_c": 3.0, "loss_scale_factor": None, "rollout_n": 1,
        "rollout_correction": None, "balance_batch": True, "reward_dtype": "bfloat16"}

# (name, params over BASE, the same as `lab analyze` flags)
OPTION_SETS: list[tuple[str, dict, list[str]]] = [
    ("defaults (trajectory, rollout-level grpo, bf16)", {}, []),
    ("transition, row-level grpo", {"trace_aggregator_level": "transition", "enable_rollout_level_advantage": False},
     ["--level", "transition", "--no-rollout-level-adv"]),
    ("rloo rollout-level, float32", {"adv_estimator": "rloo", "reward_dtype": "float32"},
     ["--adv", "rloo", "--reward-dtype", "float32"]),
    ("grpo no std, row-level", {"norm_adv_by_std_in_grpo": False, "enable_rollout_level_advantage": False},
     ["--no-norm-adv-by-std", "--no-rollout-level-adv"]),
    ("opo rollout-level", {"adv_estimator": "opo"}, ["--adv", "opo"]),
    ("gpg row-level", {"adv_estimator": "gpg", "enable_rollout_level_advantage": False},
     ["--adv", "gpg", "--no-rollout-level-adv"]),
    ("reinforce_plus_plus_baseline rollout-level", {"adv_estimator": "reinforce_plus_plus_baseline"},
     ["--adv", "reinforce_plus_plus_baseline"]),
    ("truncation: max_prompt 195, max_response 96 (is_drop rows)",
     {"max_prompt_length": 195, "max_response_length": 96}, ["--max-prompt-length", "195", "--max-response-length", "96"]),
    ("transition truncation 300/64, rloo row-level",
     {"trace_aggregator_level": "transition", "max_prompt_length": 300, "max_response_length": 64,
      "adv_estimator": "rloo", "enable_rollout_level_advantage": False},
     ["--level", "transition", "--max-prompt-length", "300", "--max-response-length", "64", "--adv", "rloo",
      "--no-rollout-level-adv"]),
    ("balance_batch off, loss_scale_factor 512, opo", {"balance_batch": False, "loss_scale_factor": 512,
                                                        "adv_estimator": "opo"},
     ["--no-balance-batch", "--loss-scale-factor", "512", "--adv", "opo"]),
]

LOSS_MODES = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm", "per_rollout_mean"]


def run(cmd: list[str], **kw: Any) -> str:
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout


def lab(*args: str) -> str:
    return run(["npm", "run", "-s", "lab", "--", *args])


def combine(parts: list[str], out: str) -> None:
    """The parts as one JSONL trace; a rollout id already taken gets @<end of the file name> (as the page does)."""
    seen: set[str] = set()
    lines: list[str] = []
    for path in parts:
        stem = os.path.splitext(os.path.basename(path))[0].replace("_", "-").split("-")[-1]
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                rec = json.loads(line)
                rid = rec["rollout_id"]
                if rid in seen:
                    rid = f"{rid}@{stem}"
                    k = 2
                    while rid in seen:
                        rid = f"{rec['rollout_id']}@{stem}#{k}"
                        k += 1
                seen.add(rid)
                rec["rollout_id"] = rid
                lines.append(json.dumps(rec))
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def completed_from_events(bundle: dict) -> list[Any]:
    """Agent Lightning's own path from gateway events to CompletedRollout objects."""
    from agentlightning.schemas import Event, Rollout, RolloutConfig, RolloutLifecycleStatus, RolloutMetadata
    from agentlightning.server.routes.events import _dedupe_model_requests_by_prompt_token_ids, _to_triplet_format
    from agentlightning.verl.agl_rollout_manager import AglRolloutManager, EnqueuedRollout

    out = []
    for i, item in enumerate(bundle["rollouts"]):
        head = item["rollout"]
        raw = [Event.model_validate(e) for e in item["events"]]
        triplet = _dedupe_model_requests_by_prompt_token_ids([_to_triplet_format(e) for e in raw])
        meta = dict(head.get("metadata") or {})
        step = meta.get("batch_idx") or 0
        idx = meta.get("sample_idx_in_batch")
        idx = 0 if idx is None else idx
        enqueued = EnqueuedRollout(data_id=str(meta.get("data_id")), rollout_id=head["rollout_id"], step=step,
                                   sample_idx_in_step=idx, enqueue_time=0.0)
        rollout = Rollout(
            rollout_id=head["rollout_id"], input=None, is_train=head.get("is_train", True), config=RolloutConfig(),
            metadata=RolloutMetadata(**meta),
            status=RolloutLifecycleStatus(state=head["status"]["state"],
                                          error_message=head["status"].get("error_message"),
                                          created_at=0.0, updated_at=0.0),
        )

        class _Store:
            """The manager reads the events from the gateway; here they come from the file."""

            def _fetch_rollout_events(self, rollout_id: str) -> tuple[list[Event], list[Event]]:  # noqa: ARG002
                return raw, triplet

        out.append(AglRolloutManager._build_completed_rollout(_Store(), enqueued, rollout))
        del i
    return out


def close(g: float, e: float, scale: float) -> bool:
    if math.isnan(e):
        return math.isnan(g)
    return abs(g - e) <= TOL["abs"] * scale + TOL["rel"] * abs(e)


def scale_of(rows: list[list[float]]) -> float:
    return max((abs(x) for r in rows for x in r), default=0.0) or 1.0


def compare(ours: dict, up: dict) -> dict[str, int]:
    """Mismatch counts per quantity; rows matched by the trainer's order."""
    counts = {"rows": 0, "tokens": 0, "mask": 0, "advantages": 0, "normalized": 0, **{m: 0 for m in LOSS_MODES}}
    if up.get("skipped"):
        counts["rows"] = 0 if ours["trainer"]["skipped"] else 1
        return counts
    trained = sorted((r for r in ours["tokens"] if r["trainPosition"] >= 0), key=lambda r: r["trainPosition"])
    if len(trained) != up["n_rows"] or [r["rolloutId"] for r in trained] != up["rollout_ids"]:
        counts["rows"] = abs(len(trained) - up["n_rows"]) or 1
        return counts
    s_adv = scale_of(up["advantages"])
    s_norm = scale_of(up["normalized_advantages"])
    s_w = {m: scale_of(up["weights"][m]) for m in LOSS_MODES}
    for k, row in enumerate(trained):
        n = up["response_lengths"][k]
        if len(row["mask"]) != n:
            counts["rows"] += 1
            continue
        counts["tokens"] += n
        for t in range(n):
            if row["responseMask"][t] != up["response_mask"][k][t]:
                counts["mask"] += 1
            if not close(row["advantages"][t], up["advantages"][k][t], s_adv):
                counts["advantages"] += 1
            if not close(row["modeAdvantages"]["per_rollout_mean"][t], up["normalized_advantages"][k][t], s_norm):
                counts["normalized"] += 1
            for m in LOSS_MODES:
                if not close(row["weights"][m][t], up["weights"][m][k][t], s_w[m]):
                    counts[m] += 1
    return counts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="crosscheck_trainer.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="keep the traces and reports here (default: a temporary folder)")
    parser.add_argument("--quick", action="store_true", help="first three trace sets and option sets only")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    from agl_step import train_step_view

    out_dir = args.out or tempfile.mkdtemp(prefix="crosscheck-")
    os.makedirs(out_dir, exist_ok=True)
    sets = TRACE_SETS[:3] if args.quick else TRACE_SETS
    options = OPTION_SETS[:3] if args.quick else OPTION_SETS
    totals: dict[str, int] = {}
    n_cases = 0
    failures = 0
    for name, parts in sets:
        paths = []
        try:
            for k, part in enumerate(parts):
                p = os.path.join(out_dir, f"{name}-part{k}-{'random' if 'random' in part else 'scripted'}.jsonl")
                lab("rollout", *part, "--seed", "7", "--workers", "2", "--out", p)
                paths.append(p)
            trace = os.path.join(out_dir, f"{name}.jsonl")
            combine(paths, trace)
            events = os.path.join(out_dir, f"{name}.events.json")
            lab("convert", trace, events, "--to", "agl-events")
            with open(events, encoding="utf-8") as handle:
                completed = completed_from_events(json.load(handle))
        except Exception as err:  # noqa: BLE001
            print(f"crosscheck: {name}: {err}", file=sys.stderr)
            return 2
        n_rollouts = len(completed)
        rewards = sorted({r.final_reward for r in completed}, key=lambda x: (x is None, x))
        print(f"\n{name}: {n_rollouts} rollouts, rewards {rewards}")
        for label, params, flags in options:
            p = {**BASE, **params}
            try:
                up = train_step_view(completed, p)
            except Exception as err:  # noqa: BLE001
                up = {"raises": f"{type(err).__name__}: {err}"}
            r = subprocess.run(["npm", "run", "-s", "lab", "--", "analyze", trace, "--json", "--per-token", "--sign", "grad", *flags],
                               cwd=repo, capture_output=True, text=True)
            n_cases += 1
            if "raises" in up:
                ok = r.returncode != 0 and "the trainer raises" in r.stderr
                print(f"  {label}: upstream raises {up['raises'][:80]}; ours {'raises too' if ok else 'does not'}")
                failures += 0 if ok else 1
                continue
            if r.returncode != 0:
                print(f"  {label}: lab analyze failed: {r.stderr[-500:]}")
                failures += 1
                continue
            c = compare(json.loads(r.stdout), up)
            for k, v in c.items():
                totals[k] = totals.get(k, 0) + v
            bad = {k: v for k, v in c.items() if k != "tokens" and v}
            failures += 1 if bad else 0
            print(f"  {label}: {up['n_rows']} rows, {c['tokens']} tokens, dropped is_drop "
                  f"{up['n_sample_dropped_marked']}; mismatches: {bad or 'none'}")
    print(f"\ncrosscheck: {n_cases} trace × option cases; {totals.get('tokens', 0)} tokens compared per quantity")
    print("mismatches: " + ", ".join(f"{k}={v}" for k, v in totals.items() if k != "tokens"))
    print(f"cases with a mismatch: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
