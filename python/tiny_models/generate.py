#!/usr/bin/env python3
"""Write the tiny random Llama-family folders of tests/models/ and their transformers reference values.

    bash python/tiny_models/make.sh [OUT_DIR]   (makes the pinned venv when it is missing, then runs this)
    generate.py [--out DIR]

Each folder is what `save_pretrained` writes for a model built by AutoConfig.for_model →
AutoModelForCausalLM.from_config (seeded random weights), plus the project's byte-level BPE tokenizer
(public/tokenizer/) saved through transformers, a generation_config.json, and `reference.json`: per-position
log-probs and entropies that transformers (float32, eager attention, CPU) computes for fixed id sequences, a
left-padded batch of the same rows, the top-k of the full distribution at chosen positions, and the L2 norm of
every parameter's gradient of L = −Σ logp. Values of a folder stored in bf16 / f16 are computed from the stored
(rounded) weights cast to float32; `f32_source` names the f32 folder with the same weights before rounding.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import warnings

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.abspath(os.path.join(here, "..", ".."))

VOCAB = 1024
# Fixed id sequences (lengths 16, 9, 5): seeded, then written into reference.json with the values.
SEQ_LENGTHS = [16, 9, 5]
TOPK = 5

COMMON = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
              num_attention_heads=4, max_position_embeddings=128, rms_norm_eps=1e-6,
              bos_token_id=None)

MODELS = {
    # SmolLM2 / Llama 3 shape: GQA, tied embeddings, llama3 rope scaling
    "llama": dict(model_type="llama", seed=1, dtype="float32", shard=None, common=dict(
        num_key_value_heads=2, tie_word_embeddings=True, rope_theta=10000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 16})),
    # linear rope scaling, untied head, stored bf16 in shards
    "llama-linear-bf16": dict(model_type="llama", seed=2, dtype="bfloat16", shard="60KB", common=dict(
        num_key_value_heads=4, tie_word_embeddings=False, rope_theta=500000.0,
        rope_scaling={"rope_type": "linear", "factor": 2.0})),
    # Qwen2 / Qwen2.5: qkv biases, untied lm_head, GQA 4:1, sharded
    "qwen2": dict(model_type="qwen2", seed=3, dtype="float32", shard="150KB", common=dict(
        num_key_value_heads=1, tie_word_embeddings=False, rope_theta=1000000.0)),
    # Qwen3: per-head q_norm / k_norm, explicit head_dim (16 != 32 / 4), GQA 2:1, tied
    "qwen3": dict(model_type="qwen3", seed=4, dtype="float32", shard=None, common=dict(
        num_key_value_heads=2, head_dim=16, tie_word_embeddings=True, rope_theta=1000000.0)),
    # the same weights as qwen3, stored rounded
    "qwen3-bf16": dict(model_type="qwen3", seed=4, dtype="bfloat16", shard=None, source="qwen3", common=None),
    "qwen3-f16": dict(model_type="qwen3", seed=4, dtype="float16", shard=None, source="qwen3", common=None),
}


def sequences():
    import torch

    g = torch.Generator().manual_seed(20)
    # ids below the special tokens (ordinary text tokens) plus a few special ones at fixed places
    seqs = [torch.randint(0, 1017, (n,), generator=g).tolist() for n in SEQ_LENGTHS]
    seqs[0][0] = 1018  # <|im_start|>
    seqs[1][4] = 1019  # <|im_end|>
    return seqs


def tokenizer():
    from transformers import PreTrainedTokenizerFast

    src = os.path.join(repo, "public", "tokenizer")
    cfg = json.load(open(os.path.join(src, "tokenizer_config.json")))
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(src, "tokenizer.json"),
                                  eos_token=cfg["eos_token"], pad_token=cfg["pad_token"])
    tok.chat_template = cfg["chat_template"]
    tok.model_max_length = 128
    return tok


def per_position(model, ids, mask, position_ids):
    """logp[b,t] = log p(ids[b,t] | ids[b,<t]) and the entropy of that distribution; 0 where undefined."""
    import torch

    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=position_ids).logits.float()
    logsm = torch.log_softmax(logits, dim=-1)
    B, T = ids.shape
    logp = torch.zeros(B, T)
    ent = torch.zeros(B, T)
    lp = torch.gather(logsm[:, :-1], 2, ids[:, 1:, None])[..., 0]
    en = -(logsm[:, :-1].exp() * logsm[:, :-1]).sum(-1)
    valid = (mask[:, 1:] * mask[:, :-1]).bool()
    logp[:, 1:] = torch.where(valid, lp, torch.zeros_like(lp))
    ent[:, 1:] = torch.where(valid, en, torch.zeros_like(en))
    return logp, ent, logsm


def references(model, seqs, pad_id):
    import torch

    out = {"sequences": [], "left_padded": None, "topk": [], "grad_norms": {}}
    for s in seqs:
        ids = torch.tensor([s])
        mask = torch.ones_like(ids)
        logp, ent, logsm = per_position(model, ids, mask, torch.arange(len(s))[None])
        out["sequences"].append({"ids": s, "logprobs": logp[0].tolist(), "entropy": ent[0].tolist()})
        # the full distribution after the last token, top-k
        last = logsm[0, -1]
        vals, idx = torch.topk(last, TOPK)
        out["topk"].append({"row": len(out["topk"]), "position": len(s) - 1, "ids": idx.tolist(),
                            "logprobs": vals.tolist()})
    # left-padded batch of the same rows; positions count real tokens only (as verl computes position_ids)
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, T - len(s):] = torch.tensor(s)
        mask[b, T - len(s):] = 1
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    logp, ent, _ = per_position(model, ids, mask, position_ids)
    out["left_padded"] = {"ids": ids.tolist(), "mask": mask.tolist(), "logprobs": logp.tolist(),
                          "entropy": ent.tolist()}
    # gradient of L = −Σ logp over all rows (unpadded, one at a time, summed)
    model.zero_grad()
    for s in seqs:
        ids_t = torch.tensor([s])
        logits = model(input_ids=ids_t).logits.float()
        lp = torch.gather(torch.log_softmax(logits[:, :-1], -1), 2, ids_t[:, 1:, None])
        (-lp.sum()).backward()
    for name, p in model.named_parameters():
        out["grad_norms"][name] = float(p.grad.norm())
    return out


def build(name, spec, out_dir, tok, seqs, built):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    folder = os.path.join(out_dir, name)
    shutil.rmtree(folder, ignore_errors=True)
    eos = [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]
    pad = tok.convert_tokens_to_ids("<|endoftext|>")
    if spec.get("source"):
        model = built[spec["source"]]
    else:
        kw = {**COMMON, **spec["common"], "eos_token_id": eos, "pad_token_id": pad}
        config = AutoConfig.for_model(spec["model_type"], **kw)
        config._attn_implementation = "eager"
        torch.manual_seed(spec["seed"])
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
        # from_config's init is N(0, 0.02) and unit norms; spread the norm gains and biases so that a
        # misplaced gain or bias shows in the log-probs
        with torch.no_grad():
            for n, p in model.named_parameters():
                if n.endswith("norm.weight"):
                    p.uniform_(0.5, 1.5)
                elif n.endswith(".bias"):
                    p.normal_(0, 0.1)
                elif n.endswith("embed_tokens.weight") or n.endswith("lm_head.weight"):
                    p.normal_(0, 0.5)
                else:
                    p.normal_(0, 0.2)
        model.eval()
        built[name] = model
    dtype = getattr(torch, spec["dtype"])
    stored = AutoModelForCausalLM.from_config(model.config, attn_implementation="eager", dtype=torch.float32)
    stored.load_state_dict(model.state_dict())
    stored = stored.to(dtype)
    kwargs = {"safe_serialization": True}
    if spec["shard"]:
        kwargs["max_shard_size"] = spec["shard"]
    stored.save_pretrained(folder, **kwargs)
    tok.save_pretrained(folder)
    GenerationConfig(bos_token_id=None, eos_token_id=eos, pad_token_id=pad, do_sample=True, temperature=0.7,
                     top_p=0.9).save_pretrained(folder)
    # the reference: the stored weights as transformers loads them, computed in float32
    ref_model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    ref_model.eval()
    ref = references(ref_model, seqs, pad)
    import tokenizers
    import transformers
    ref = {"model_type": spec["model_type"], "storage_dtype": spec["dtype"], "f32_source": spec.get("source"),
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                        "tokenizers": tokenizers.__version__},
           "attn_implementation": "eager", "compute_dtype": "float32", "pad_id": pad, **ref}
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    files = sorted(os.listdir(folder))
    size = sum(os.path.getsize(os.path.join(folder, x)) for x in files)
    print(f"{name}: {spec['model_type']} {spec['dtype']}, {size // 1024} kB: {', '.join(files)}")


def main(argv):
    parser = argparse.ArgumentParser(prog="generate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(repo, "tests", "models"))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)
    tok = tokenizer()
    seqs = sequences()
    built = {}
    for name, spec in MODELS.items():
        build(name, spec, args.out, tok, seqs, built)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
