#!/usr/bin/env python3
"""Load a LoRA adapter folder our engine wrote into PEFT and compare log-probs with ours.

    npx tsx tests/tools/lora-adapter-out.ts --model tests/models/qwen3 --out /tmp/adapter
    python/.venv-peer/bin/python python/tiny_models/check_adapter.py --base tests/models/qwen3 --adapter /tmp/adapter

`PeftModel.from_pretrained(base, adapter)` reads adapter_config.json + adapter_model.safetensors as written;
the script then computes float32 eager log-probs of the batch in adapter/logprobs.json (left-padded, verl-style
position_ids) with the adapter and with it disabled, prints the max |Δ| against ours, and exits 1 when either
exceeds --tol (default 1e-4) or when PEFT reports missing / unexpected adapter keys.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings


def main(argv):
    p = argparse.ArgumentParser(prog="check_adapter.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True)
    p.add_argument("--adapter", required=True)
    p.add_argument("--ours", help="our log-probs (default: ADAPTER/logprobs.json)")
    p.add_argument("--tol", type=float, default=1e-4)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    import peft
    import torch
    import transformers
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    ours = json.load(open(args.ours or os.path.join(args.adapter, "logprobs.json")))
    base = AutoModelForCausalLM.from_pretrained(args.base, dtype=torch.float32, attn_implementation="eager")
    model = PeftModel.from_pretrained(base, args.adapter)
    model.eval()
    # every tensor of the file must have been loaded into a LoRA module (PEFT warns, not fails, on mismatches)
    from safetensors.torch import load_file

    saved = load_file(os.path.join(args.adapter, "adapter_model.safetensors"))
    state = {k.replace(".default.weight", ".weight"): v for k, v in model.state_dict().items() if "lora_" in k}
    missing = sorted(set(state) - set(saved))
    unexpected = sorted(set(saved) - set(state))
    mismatch = [k for k in saved if k in state and not torch.equal(saved[k], state[k])]
    ids = torch.tensor(ours["ids"])
    mask = torch.tensor(ours["mask"])
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)

    def logprobs():
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask, position_ids=position_ids).logits.float()
        lp = torch.gather(torch.log_softmax(logits[:, :-1], -1), 2, ids[:, 1:, None])[..., 0]
        valid = (mask[:, 1:] * mask[:, :-1]).bool()
        out = torch.zeros(ids.shape)
        out[:, 1:] = torch.where(valid, lp, torch.zeros_like(lp))
        return out

    with_adapter = logprobs()
    with model.disable_adapter():
        without = logprobs()
    d = float((with_adapter - torch.tensor(ours["logprobs"])).abs().max())
    d_base = float((without - torch.tensor(ours["logprobs_base"])).abs().max())
    moved = float((with_adapter - without).abs().max())
    cfg = model.peft_config["default"]
    print(f"check_adapter: peft {peft.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"  adapter {args.adapter}: r={cfg.r} lora_alpha={cfg.lora_alpha} targets={sorted(cfg.target_modules)}, "
          f"{len(saved)} tensors; missing {len(missing)}, unexpected {len(unexpected)}, differing after load {len(mismatch)}")
    print(f"  max |logp PEFT - ours| with the adapter {d:.3e}, disabled {d_base:.3e} "
          f"(the adapter moves PEFT's log-probs by up to {moved:.3e}); tolerance {args.tol:g}")
    ok = d <= args.tol and d_base <= args.tol and not missing and not unexpected and not mismatch
    print("  ok" if ok else "  FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
