"""Shared helpers of the golden generator: seeded inputs, float32-exact JSON, the file layout.

Every value a case records is what the installed upstream code returned; these helpers only shape inputs and
write outputs. Float inputs are float32 values written as the exact doubles they are, so the TypeScript side
reads back bit-identical inputs; non-finite numbers are the strings "nan", "inf", "-inf".
"""

from __future__ import annotations

import json
import math
import os
from importlib.metadata import version
from typing import Any

import numpy as np
import torch

TOLERANCE = {"abs": 1e-5, "rel": 1e-4}


def versions() -> dict[str, str]:
    return {
        "agentlightning": version("agentlightning"),
        "verl": version("verl"),
        "torch": torch.__version__.split("+")[0],
    }


def verl_source(path: str) -> str:
    return f"volcengine/verl@v{versions()['verl']}(pypi) {path}"


def agl_source(path: str) -> str:
    return f"microsoft/agent-lightning@v{versions()['agentlightning']}(pypi) {path}"


def jsonable(value: Any) -> Any:
    """Tensors, arrays and numbers as JSON values: floats exact, non-finite as strings, ints as ints."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.dtype in (torch.bfloat16, torch.float16):
            value = value.float()
        return jsonable(value.tolist())
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    return value


def f32(values: Any) -> list:
    """Rounds nested numbers to float32 and returns them as exact doubles (the recorded input)."""
    return np.asarray(values, dtype=np.float32).tolist()


class Rng:
    """numpy Generator with the shapes the cases use."""

    def __init__(self, seed: int) -> None:
        self.g = np.random.default_rng(seed)

    def mask(self, B: int, T: int, *, holes: bool = False, zero_rows: tuple[int, ...] = (), min_len: int = 1) -> list:
        m = np.zeros((B, T), dtype=np.int64)
        for b in range(B):
            if b in zero_rows:
                continue
            n = int(self.g.integers(min_len, T + 1))
            m[b, :n] = 1
            if holes and n > 3:
                start = int(self.g.integers(1, n - 1))
                end = min(n - 1, start + int(self.g.integers(1, 3)))
                m[b, start:end] = 0
        return m.tolist()

    def normal(self, shape: tuple[int, ...], scale: float = 1.0, loc: float = 0.0) -> list:
        return f32(self.g.normal(loc, scale, size=shape))

    def uniform(self, shape: tuple[int, ...], lo: float, hi: float) -> list:
        return f32(self.g.uniform(lo, hi, size=shape))

    def choice(self, values: list, size: int) -> list:
        return [values[int(i)] for i in self.g.integers(0, len(values), size=size)]

    def ints(self, lo: int, hi: int, size: int) -> list[int]:
        return [int(x) for x in self.g.integers(lo, hi, size=size)]


def outcome_rewards(mask: list, scores: list[float]) -> list:
    """token_level_rewards with each row's score on its last valid token (rows without one get none)."""
    out = np.zeros((len(mask), len(mask[0]) if mask else 0), dtype=np.float32)
    for b, row in enumerate(mask):
        valid = [t for t, v in enumerate(row) if v]
        if valid:
            out[b, valid[-1]] = scores[b]
    return out.tolist()


def raises(err: BaseException) -> dict:
    return {"raises": type(err).__name__, "message": str(err)[:200]}


def write_family(out_dir: str, family: str, source: str, cases: list[dict], tolerance: dict | None = None) -> str:
    names = [c["name"] for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"golden: {family} has duplicate case names {sorted(dup)}")
    doc = {
        "family": family,
        "source": source,
        "generator": {"script": "python/golden/generate.py", **versions()},
        "tolerance": tolerance or TOLERANCE,
        "cases": [jsonable(c) for c in cases],
    }
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{family}.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, separators=(",", ":"), allow_nan=False)
        handle.write("\n")
    return path
