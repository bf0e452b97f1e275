#!/usr/bin/env python3
"""Write PEFT LoRA adapters and their PyTorch references for the tiny llama / qwen2 / qwen3 folders.

    bash python/tiny_models/make.sh [OUT_DIR]   (runs generate.py, then this)
    lora_refs.py [--models DIR]

For each base folder (tests/models/<name>, written by generate.py) this builds a PEFT 0.21 LoRA model
(`get_peft_model`, LoraConfig(r, lora_alpha, target_modules), PEFT's own initialisation under a fixed torch
seed), records that initialisation's statistics (A ~ kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)),
B = 0), then sets B to seeded N(0, 0.1) values (with PEFT's B = 0 the gradient of A is identically zero and a
gradient test of A could not fail) and saves the adapter with `save_pretrained` into tests/models/lora/<name>/
(adapter_config.json + adapter_model.safetensors, PEFT's own files). Then, in float32 on the CPU, on the
left-padded batch of the base folder's reference.json (verl-style position_ids):

  reference.json     log-probs with the adapter and with it disabled (`disable_adapter()`), the weighted
                     loss L = -sum(w * logp) for seeded per-token weights w, the gradient's global norm, the
                     AdamW hyper-parameters, and the init statistics
  grads.safetensors  dL/dA and dL/dB of every adapter tensor (PEFT's saved names)
  step.safetensors   the adapter after clip_grad_norm_ and one torch.optim.AdamW step on it
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.abspath(os.path.join(here, "..", ".."))

ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# (base folder, r, lora_alpha, target_modules, seed): qwen2 adapts a subset with alpha/r = 8
ADAPTERS = {
    "llama": dict(r=4, alpha=8, targets=ALL, seed=11),
    "qwen2": dict(r=2, alpha=16, targets=["q_proj", "v_proj", "down_proj"], seed=12),
    "qwen3": dict(r=4, alpha=4, targets=ALL, seed=13),
}
ADAMW = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, max_grad_norm=1.0)


def saved_name(name):
    """PEFT's parameter name → the name save_pretrained writes (the adapter name dropped)."""
    return name.replace(".default.weight", ".weight")


def logprobs(model, ids, mask, position_ids):
    import torch

    logits = model(input_ids=ids, attention_mask=mask, position_ids=position_ids).logits.float()
    lp = torch.gather(torch.log_softmax(logits[:, :-1], -1), 2, ids[:, 1:, None])[..., 0]
    valid = (mask[:, 1:] * mask[:, :-1]).bool()
    out = torch.zeros(ids.shape, dtype=torch.float32)
    out[:, 1:] = torch.where(valid, lp, torch.zeros_like(lp))
    return out


def build(name, spec, models_dir):
    import peft
    import safetensors.torch
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base_dir = os.path.join(models_dir, name)
    out_dir = os.path.join(models_dir, "lora", name)
    os.makedirs(out_dir, exist_ok=True)
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32, attn_implementation="eager")
    base.eval()
    torch.manual_seed(spec["seed"])
    cfg = LoraConfig(r=spec["r"], lora_alpha=spec["alpha"], target_modules=spec["targets"], lora_dropout=0.0,
                     bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(base, cfg)
    lora = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert all(".lora_" in n for n in lora), "only LoRA tensors are trainable"
    init = {}
    for n, p in lora.items():
        t = p.detach()
        if ".lora_A." in n:
            fan_in = t.shape[1]
            init[saved_name(n)] = {"fan_in": fan_in, "bound": 1 / math.sqrt(fan_in), "max_abs": float(t.abs().max()),
                                   "std": float(t.std())}
        else:
            init[saved_name(n)] = {"max_abs": float(t.abs().max())}
    g = torch.Generator().manual_seed(spec["seed"] + 100)
    with torch.no_grad():
        for n, p in lora.items():
            if ".lora_B." in n:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    # the base as the repository names it (save_pretrained would write this machine's absolute path)
    model.peft_config["default"].base_model_name_or_path = f"tests/models/{name}"
    model.save_pretrained(out_dir)
    os.remove(os.path.join(out_dir, "README.md"))  # PEFT's model-card stub

    ref = json.load(open(os.path.join(base_dir, "reference.json")))
    lp_ref = ref["left_padded"]
    ids = torch.tensor(lp_ref["ids"])
    mask = torch.tensor(lp_ref["mask"])
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    weights = (torch.rand(ids.shape, generator=g) * 2 - 1) * mask
    model.eval()
    with torch.no_grad():
        with model.disable_adapter():
            lp_base = logprobs(model, ids, mask, position_ids)
    model.zero_grad()
    lp = logprobs(model, ids, mask, position_ids)
    loss = -(weights * lp).sum()
    loss.backward()
    grads = {saved_name(n): p.grad.detach().clone().contiguous() for n, p in lora.items()}
    params = list(lora.values())
    total = torch.nn.utils.clip_grad_norm_(params, ADAMW["max_grad_norm"])
    opt = torch.optim.AdamW(params, lr=ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"],
                            weight_decay=ADAMW["weight_decay"])
    opt.step()
    stepped = {saved_name(n): p.detach().clone().contiguous() for n, p in lora.items()}
    safetensors.torch.save_file(grads, os.path.join(out_dir, "grads.safetensors"))
    safetensors.torch.save_file(stepped, os.path.join(out_dir, "step.safetensors"))
    out = {
        "base": name,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
        "r": spec["r"], "lora_alpha": spec["alpha"], "target_modules": spec["targets"],
        "scaling": spec["alpha"] / spec["r"], "compute_dtype": "float32", "attn_implementation": "eager",
        "batch": {"ids": lp_ref["ids"], "mask": lp_ref["mask"], "weights": weights.tolist()},
        "logprobs": lp.detach().tolist(), "logprobs_base": lp_base.tolist(),
        "loss": float(loss), "grad_norm": float(total),
        "adamw": {**ADAMW, "betas": list(ADAMW["betas"])},
        "init": init,
    }
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    files = sorted(os.listdir(out_dir))
    size = sum(os.path.getsize(os.path.join(out_dir, x)) for x in files)
    print(f"lora/{name}: r={spec['r']} alpha={spec['alpha']} {len(lora)} tensors, loss {float(loss):.6f}, "
          f"|g| {float(total):.6f}, {size // 1024} kB: {', '.join(files)}")


def main(argv):
    parser = argparse.ArgumentParser(prog="lora_refs.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=os.path.join(repo, "tests", "models"))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    for name, spec in ADAPTERS.items():
        build(name, spec, args.models)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
