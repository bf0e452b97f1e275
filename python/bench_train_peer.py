#!/usr/bin/env python3
"""Same-run PyTorch peer for `npm run bench:train`: one policy update step of the same model on the same batch.

The model is the project's policy (src/engine/model.ts) written in torch: GPT-2 shape, token + learned
position embeddings, pre-LayerNorm blocks (eps 1e-5) of causal multi-head attention and a tanh-GELU MLP, a
final LayerNorm, the output head tied to the token embedding; linear layers y = x @ W + b with W stored
(in, out), as the checkpoint stores them. The step is what the trainer's update does: log-softmax at the batch
temperature, loss = -sum(weights * log p(token_t | tokens_<t)), backward, global-norm clipping, AdamW with the
same hyper-parameters (weight decay on the matrices only, as the flat layout puts them first).

It loads the weights from the safetensors checkpoint the benchmark used (F32 tensors named like ours) and the
batch from a JSON file, runs one warm-up step and then `--repeat` timed steps from the same starting state,
and prints one JSON line: median seconds, tokens/s, the loss and the gradient norm of the first step (the
benchmark checks them against its own engine, so the peer is known to compute the same thing).

Usage: bench_train_peer.py CHECKPOINT.safetensors BATCH.json [--repeat R] [--threads N]
  BATCH.json: {"tokens": [[id, …], …] (B rows of T ids), "weights": [[w, …], …] (B×T), "temperature": t,
               "optimizer": {"lr", "beta1", "beta2", "eps", "weight_decay", "max_grad_norm"}}
Exit 2 on a bad file or flag.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import struct
import sys
import time
from typing import NoReturn

PROG = "bench_train_peer"


def fail(message: str) -> NoReturn:
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(2)


def read_safetensors(path: str):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e}")
    if len(raw) < 8:
        fail(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8 : 8 + n])
    except ValueError as e:
        fail(f"{path}: header is not JSON ({e})")
    meta = header.pop("__metadata__", {})
    try:
        config = json.loads(meta["harness_lab.policy_config"])
    except (KeyError, ValueError):
        fail(f"{path}: metadata has no valid 'harness_lab.policy_config'")
    return config, header, memoryview(raw)[8 + n :]


def main() -> None:
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("checkpoint")
    ap.add_argument("batch")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    if a.repeat < 1:
        fail("--repeat must be >= 1")
    if a.threads < 1:
        fail("--threads must be >= 1")

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    cfg, tensors, data = read_safetensors(a.checkpoint)
    V, T, L, C, H = (cfg[k] for k in ("vocabSize", "contextLength", "layers", "width", "heads"))

    def tensor(name: str) -> torch.Tensor:
        e = tensors.get(name)
        if e is None:
            fail(f"{a.checkpoint}: tensor '{name}' is missing")
        if e.get("dtype") != "F32":
            fail(f"{a.checkpoint}: tensor '{name}' is {e.get('dtype')}, expected F32")
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:end]), dtype=torch.float32).reshape(e["shape"])
        return t.clone()

    try:
        with open(a.batch) as f:
            batch = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {a.batch}: {e}")
    for key in ("tokens", "weights", "optimizer"):
        if key not in batch:
            fail(f"{a.batch}: missing '{key}'")
    tokens = torch.tensor(batch["tokens"], dtype=torch.long)
    weights = torch.tensor(batch["weights"], dtype=torch.float32)
    if tokens.dim() != 2 or weights.shape != tokens.shape:
        fail(f"{a.batch}: tokens and weights must both be B×T lists (got {tuple(tokens.shape)}, {tuple(weights.shape)})")
    if int(tokens.max()) >= V or int(tokens.min()) < 0:
        fail(f"{a.batch}: token ids must be in [0, {V})")
    B, Tb = tokens.shape
    if Tb > T:
        fail(f"{a.batch}: {Tb} positions exceed the context {T}")
    temperature = float(batch.get("temperature", 1.0))
    opt = batch["optimizer"]

    names = ["wte", "wpe"]
    for l in range(L):
        names += [f"h{l}.attn.qkv.w", f"h{l}.attn.proj.w", f"h{l}.mlp.fc.w", f"h{l}.mlp.proj.w"]
    n_matrices = len(names)
    for l in range(L):
        names += [f"h{l}.ln1.w", f"h{l}.ln1.b", f"h{l}.attn.qkv.b", f"h{l}.attn.proj.b"]
        names += [f"h{l}.ln2.w", f"h{l}.ln2.b", f"h{l}.mlp.fc.b", f"h{l}.mlp.proj.b"]
    names += ["lnf.w", "lnf.b"]
    start = {n: tensor(n) for n in names}

    def forward_logp(p):
        x = p["wte"][tokens] + p["wpe"][:Tb]
        hs = C // H
        mask = torch.ones(Tb, Tb, dtype=torch.bool).tril()
        for l in range(L):
            h = f"h{l}."
            y = F.layer_norm(x, (C,), p[h + "ln1.w"], p[h + "ln1.b"], 1e-5)
            qkv = y @ p[h + "attn.qkv.w"] + p[h + "attn.qkv.b"]
            q, k, v = qkv.split(C, dim=-1)
            q = q.view(B, Tb, H, hs).transpose(1, 2)
            k = k.view(B, Tb, H, hs).transpose(1, 2)
            v = v.view(B, Tb, H, hs).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
            att = att.masked_fill(~mask, float("-inf")).softmax(-1)
            o = (att @ v).transpose(1, 2).reshape(B, Tb, C)
            x = x + o @ p[h + "attn.proj.w"] + p[h + "attn.proj.b"]
            y = F.layer_norm(x, (C,), p[h + "ln2.w"], p[h + "ln2.b"], 1e-5)
            y = F.gelu(y @ p[h + "mlp.fc.w"] + p[h + "mlp.fc.b"], approximate="tanh")
            x = x + y @ p[h + "mlp.proj.w"] + p[h + "mlp.proj.b"]
        x = F.layer_norm(x, (C,), p["lnf.w"], p["lnf.b"], 1e-5)
        logits = (x @ p["wte"].T) / temperature
        logp = logits.log_softmax(-1)
        # position t holds log p(tokens[t] | tokens[<t]); position 0 has none
        out = torch.zeros(B, Tb)
        out[:, 1:] = logp[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1)
        return out

    def one_step():
        params = {n: t.clone().requires_grad_(True) for n, t in start.items()}
        decay = [params[n] for n in names[:n_matrices]]
        no_decay = [params[n] for n in names[n_matrices:]]
        optim = torch.optim.AdamW(
            [{"params": decay, "weight_decay": opt["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
            lr=opt["lr"],
            betas=(opt["beta1"], opt["beta2"]),
            eps=opt["eps"],
        )
        t0 = time.perf_counter()
        logp = forward_logp(params)
        loss = -(weights * logp).sum()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), opt["max_grad_norm"])
        optim.step()
        return time.perf_counter() - t0, float(loss), float(norm)

    one_step()
    runs = [one_step() for _ in range(a.repeat)]
    secs = statistics.median(r[0] for r in runs)
    real = int((tokens != -1).sum())
    print(
        json.dumps(
            {
                "peer": f"torch {torch.__version__} (CPU, {a.threads} thread{'s' if a.threads > 1 else ''})",
                "tokens": B * Tb,
                "seconds": secs,
                "tokens_per_s": B * Tb / secs,
                "loss": runs[0][1],
                "grad_norm": runs[0][2],
                "repeat": a.repeat,
                "real_positions": real,
            }
        )
    )


if __name__ == "__main__":
    main()
