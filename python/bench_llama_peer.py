#!/usr/bin/env python3
"""The PyTorch side of `npm run bench:engine -- --model SHAPE`: a Llama-family model of a published shape with
seeded random weights (AutoConfig.for_model -> AutoModelForCausalLM.from_config), written as a Hugging Face
folder that our engine then loads, and its log-prob forward timed on the CPU in this process.

    bench_llama_peer.py --shape smollm2-135m|qwen3-0.6b --out DIR [--batch B] [--seq T] [--repeat R] [--threads N]

Prints one JSON line: the shape, seconds and process CPU seconds (medians of --repeat after a warm-up),
tokens/s, peak RSS, and the per-position log-probs of the fixed ids (seeded), for the engine-vs-PyTorch difference.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
import warnings

SHAPES = {
    # HuggingFaceTB/SmolLM2-135M's config.json shape
    "smollm2-135m": dict(model_type="llama", vocab_size=49152, hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000.0,
                         tie_word_embeddings=True),
    # Qwen/Qwen3-0.6B's config.json shape
    "qwen3-0.6b": dict(model_type="qwen3", vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                       num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
                       tie_word_embeddings=True),
}


def main(argv):
    parser = argparse.ArgumentParser(prog="bench_llama_peer.py")
    parser.add_argument("--shape", required=True, choices=sorted(SHAPES))
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.set_num_threads(args.threads)
    spec = dict(SHAPES[args.shape])
    config = AutoConfig.for_model(spec.pop("model_type"), **spec)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="eager").eval()
    # shards of at most 1 GB (Node reads files below 2 GiB; it also exercises model.safetensors.index.json)
    model.save_pretrained(args.out, safe_serialization=True, max_shard_size="1GB")
    # the folder needs a tokenizer to load; the project's own (ids of the benchmark are drawn from the model's
    # vocabulary, not through it)
    import os
    import shutil

    tok = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "public", "tokenizer")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok, f), os.path.join(args.out, f))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), generator=g)

    def forward():
        with torch.no_grad():
            logits = model(input_ids=ids).logits
            lp = torch.log_softmax(logits[:, :-1].float(), -1)
            return torch.gather(lp, 2, ids[:, 1:, None])[..., 0]

    forward()
    times, cpu = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        lp = forward()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    sec = statistics.median(times)
    print(json.dumps({  # noqa: E501
        "peer": f"torch {torch.__version__} / transformers {transformers.__version__} (eager, {args.threads} thread)",
        "shape": args.shape, "seconds": sec, "cpu_seconds": statistics.median(cpu),
        "tokens_per_s": args.batch * args.seq / sec,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "ids": ids.tolist(), "logprobs": lp.tolist(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
