#!/usr/bin/env python3
"""Check that golden files still describe the installed upstream packages: every case of every family.

Each case's recorded `params` and `input` go through the same upstream call the generator makes
(python/golden/families_*.py `RUNNERS`: verl's compute_advantage / agg_loss / policy losses with autograd /
kl_penalty / rollout correction, Agent Lightning's RolloutAdapter, rollout-level advantage and the trainer's order),
and the result is compared with `expected` field by field with the file's tolerance (integer fields exactly,
exception cases by class). Any file of the shared schema works, e.g. ../shared/golden/*.json.

Usage: check_peer_golden.py [GOLDEN_DIR_OR_FILE]...   (default: tests/golden of this repository)
Prints one line per failing case and the closing line "N passed, M failed"; exit 1 when any case fails, 2 when a
file cannot be read or names a family without a runner.
"""

from __future__ import annotations

import glob
import json
import math
import os
import sys
import warnings
from typing import Any

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "golden"))

# the keys whose numbers are integers (compared exactly), as src/core/golden/families declares them
EXACT_KEYS = {
    "agl_trajectory": {"n_rows", "prompt_ids", "response_ids", "response_mask", "turn_index", "position_ids",
                       "counters"},
    "rollout_correction": {"response_mask"},
    "agl_rollout_level_advantage": {"rollout_level_advantage_metrics"},
    "agl_train_step": {"n_sample_collected", "n_sample_dropped_marked", "n_rows", "response_lengths",
                       "response_mask", "adapter_counters", "rollout_level_advantage_metrics"},
}


def differences(got: Any, exp: Any, tol: dict, path: str, exact: bool, exact_keys: set[str], out: list[str]) -> None:
    if len(out) > 5:
        return
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            out.append(f"{path}: got {type(got).__name__}, expected an object")
            return
        for k, v in exp.items():
            differences(got.get(k), v, tol, f"{path}.{k}" if path else k, exact or k in exact_keys, exact_keys, out)
        return
    if isinstance(exp, list):
        if not isinstance(got, list) or len(got) != len(exp):
            out.append(f"{path}: got {len(got) if isinstance(got, list) else got!r} values, expected {len(exp)}")
            return
        for i, (g, e) in enumerate(zip(got, exp)):
            differences(g, e, tol, f"{path}[{i}]", exact, exact_keys, out)
        return
    if exp is None or isinstance(exp, (str, bool)) and exp not in ("nan", "inf", "-inf"):
        if got != exp:
            out.append(f"{path}: got {got!r}, expected {exp!r}")
        return
    e = float(exp) if isinstance(exp, str) else exp
    g = float(got) if isinstance(got, str) else got
    if not isinstance(g, (int, float)):
        out.append(f"{path}: got {got!r}, expected {exp!r}")
        return
    if math.isnan(e):
        ok = math.isnan(g)
    elif math.isinf(e) or exact:
        ok = g == e
    else:
        ok = math.isfinite(g) and abs(g - e) <= tol["abs"] + tol["rel"] * abs(e)
    if not ok:
        out.append(f"{path}: got {got!r}, expected {exp!r}")


def main(argv: list[str]) -> int:
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    from common import jsonable
    from families_agl import RUNNERS as AGL
    from families_verl import RUNNERS as VERL

    runners = {**VERL, **AGL}
    targets = argv or [os.path.join(here, "..", "tests", "golden")]
    files: list[str] = []
    for t in targets:
        files.extend(sorted(glob.glob(os.path.join(t, "*.json"))) if os.path.isdir(t) else [t])
    if not files:
        print(f"check_peer_golden: no golden files in {targets}", file=sys.stderr)
        return 2
    passed = failed = 0
    for path in files:
        try:
            with open(path, encoding="utf-8") as handle:
                doc = json.load(handle)
            family, tol, cases = doc["family"], doc["tolerance"], doc["cases"]
        except (OSError, ValueError, KeyError) as err:
            print(f"check_peer_golden: cannot read {path}: {err}", file=sys.stderr)
            return 2
        run = runners.get(family)
        if run is None:
            print(f"check_peer_golden: {path}: no runner for family {family!r} (known: {sorted(runners)})",
                  file=sys.stderr)
            return 2
        f_pass = f_fail = 0
        for case in cases:
            exp = case["expected"]
            got = jsonable(run(case["params"], case["input"]))
            if isinstance(exp, dict) and "raises" in exp:
                problems = [] if isinstance(got, dict) and got.get("raises") == exp["raises"] else [
                    f"expected {exp['raises']}, got {got.get('raises', 'a result') if isinstance(got, dict) else got}"]
            elif isinstance(got, dict) and "raises" in got:
                problems = [f"raised {got['raises']}: {got['message']}"]
            else:
                problems = []
                differences(got, exp, tol, "", False, EXACT_KEYS.get(family, set()), problems)
            if problems:
                f_fail += 1
                print(f"FAIL {family}/{case['name']}: {'; '.join(problems[:3])}", file=sys.stderr)
            else:
                f_pass += 1
        print(f"{path}: {family}: {f_pass} passed, {f_fail} failed")
        passed += f_pass
        failed += f_fail
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
