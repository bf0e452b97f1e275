#!/usr/bin/env python3
"""The PyTorch + PEFT side of `npm run bench:train -- --model SHAPE`: one training step of a Llama-family model
of a published shape (the shapes of bench_llama_peer.py, seeded random weights, written as the Hugging Face
folder our engine then loads) on the CPU, with LoRA (PEFT get_peft_model, r / lora_alpha, all seven
projections) and with full fine-tuning: forward, L = -sum(logp) of the fixed ids, backward, clip_grad_norm_,
torch.optim.AdamW over the trainable parameters.

    bench_lora_peer.py --shape smollm2-135m|qwen3-0.6b --out DIR [--seq T] [--r 16] [--alpha 32] [--modes lora,full]
                       [--repeat R] [--threads N]

Prints one JSON line: per mode the step seconds and process CPU seconds (medians of --repeat steps
in a row, the first included), tokens/s,
the first step's loss and gradient norm, and the peak RSS after the steps.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_llama_peer import SHAPES  # noqa: E402

ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def main(argv):
    p = argparse.ArgumentParser(prog="bench_lora_peer.py")
    p.add_argument("--shape", required=True, choices=sorted(SHAPES))
    p.add_argument("--out", required=True)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--r", type=int, default=16)
    p.add_argument("--alpha", type=float, default=32)
    p.add_argument("--modes", default="lora,full")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    import peft
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.set_num_threads(args.threads)
    spec = dict(SHAPES[args.shape])
    config = AutoConfig.for_model(spec.pop("model_type"), **spec)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="eager")
    model.save_pretrained(args.out, safe_serialization=True, max_shard_size="1GB")
    tok = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "public", "tokenizer")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok, f), os.path.join(args.out, f))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (1, args.seq), generator=g)
    out = {"peer": f"torch {torch.__version__} / transformers {transformers.__version__} / peft {peft.__version__} "
                   f"(eager, {args.threads} thread)", "shape": args.shape, "seq": args.seq, "ids": ids.tolist(),
           "modes": {}}
    for mode in args.modes.split(","):
        m = model
        if mode == "lora":
            m = get_peft_model(model, LoraConfig(r=args.r, lora_alpha=args.alpha, target_modules=ALL,
                                                 lora_dropout=0.0, task_type="CAUSAL_LM"))
        params = [q for q in m.parameters() if q.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.01)
        m.train()
        # --repeat steps in a row, the first included; the loss and norm are the first step's
        times, cpu, first = [], [], None
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            logits = m(input_ids=ids).logits
            lp = torch.gather(torch.log_softmax(logits[:, :-1].float(), -1), 2, ids[:, 1:, None])
            loss = -lp.sum()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            first = first or (float(loss), float(norm))
        sec = statistics.median(times)
        out["modes"][mode] = {"seconds": sec, "cpu_seconds": statistics.median(cpu),
                              "tokens_per_s": args.seq / sec, "loss": first[0],
                              "grad_norm": first[1], "trainable": sum(q.numel() for q in params),
                              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        del opt
        if mode == "lora":
            model = m.unload()  # the base without the adapter, for the next mode
            for q in model.parameters():
                q.requires_grad_(True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
