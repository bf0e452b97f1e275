#!/usr/bin/env python3
"""Write a synthetic multi-turn agent batch for the core benchmark and its Python peer.

The shape follows a tool-using agent: every rollout makes `--calls` model calls, and call k's prompt is call
k-1's prompt + call k-1's response + an observation (the tool output the harness appended). That is exactly the
shape Agent Lightning's trajectory-level trace aggregation merges back into one training row per rollout
(prompt = the first prompt; response = every response with the observations in between, masked out).

Defaults give ~8.5M trajectory tokens for 1,024 rollouts x 16 calls: first prompt ~500 tokens, responses ~450,
observations ~40, so a trajectory holds 500 + 16*450 + 15*40 ~= 8,300 tokens.

Output format (the same as the `agl_trajectory` golden input, plus `params`):
  {"rollouts": [{"rollout_id", "data_id", "step", "sample_idx_in_step", "final_reward",
                 "triplets": [{"prompt_token_ids", "response_token_ids", "response_log_probs"}]}],
   "params": {"max_prompt_length", "max_response_length", "pad_token_id", "reward_fillna_value"}}

Only the standard library is used, so any Python 3 can run it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

# Qwen2.5/Qwen3 vocabularies put their special tokens from 151643 (<|endoftext|>) up; ordinary text ids are below.
VOCAB_LIMIT = 151643
PAD_TOKEN_ID = 151643


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def span(text: str) -> tuple[int, int]:
    """Parse an inclusive length range "LO:HI"."""
    parts = text.split(":")
    try:
        lo, hi = (int(parts[0]), int(parts[1])) if len(parts) == 2 else (None, None)
    except ValueError:
        lo = hi = None
    if lo is None or hi is None or lo < 0 or hi < lo:
        raise argparse.ArgumentTypeError(f"expected LO:HI with 0 <= LO <= HI, got {text!r}")
    return lo, hi


def round_up(value: int, multiple: int) -> int:
    return max(multiple, -(-value // multiple) * multiple)


def make_rollout(
    rng: random.Random,
    *,
    index: int,
    data_id: str,
    calls: int,
    prompt_len: tuple[int, int],
    response_len: tuple[int, int],
    observation_len: tuple[int, int],
    success_rate: float,
) -> tuple[dict, int, int]:
    """One rollout; returns it with its first prompt's length and its merged response's length."""
    ids = rng.randrange
    first_prompt = [ids(VOCAB_LIMIT) for _ in range(rng.randint(*prompt_len))]
    prompt = first_prompt
    triplets = []
    merged_response_len = 0
    for call in range(calls):
        if call > 0:
            observation = [ids(VOCAB_LIMIT) for _ in range(rng.randint(*observation_len))]
            prev = triplets[-1]
            prompt = prev["prompt_token_ids"] + prev["response_token_ids"] + observation
            merged_response_len += len(observation)
        n = rng.randint(*response_len)
        response = [ids(VOCAB_LIMIT) for _ in range(n)]
        # Sampled-token log-probs are <= 0; an exponential with mean 0.5 nats is a plausible spread. Four decimals
        # keep the file small; the minimum magnitude keeps every value strictly negative.
        log_probs = [-max(1e-4, round(rng.expovariate(2.0), 4)) for _ in range(n)]
        triplets.append({"prompt_token_ids": prompt, "response_token_ids": response, "response_log_probs": log_probs})
        merged_response_len += n
    rollout = {
        "rollout_id": f"ro-{index:06d}",
        "data_id": data_id,
        "step": 0,
        "sample_idx_in_step": index,
        "final_reward": 1.0 if rng.random() < success_rate else 0.0,
        "triplets": triplets,
    }
    return rollout, len(first_prompt), merged_response_len


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=positive_int, default=1024)
    parser.add_argument("--calls", type=positive_int, default=16, help="model calls per rollout")
    parser.add_argument("--group-size", type=positive_int, default=8, help="rollouts per data_id (GRPO group)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--prompt-len", type=span, default=(400, 600), help="first prompt length LO:HI")
    parser.add_argument("--response-len", type=span, default=(200, 700), help="response length LO:HI")
    parser.add_argument("--observation-len", type=span, default=(20, 60), help="observation length LO:HI")
    parser.add_argument(
        "--max-prompt-length",
        type=positive_int,
        default=None,
        help="default: the longest first prompt rounded up to 256 (no truncation)",
    )
    parser.add_argument(
        "--max-response-length",
        type=positive_int,
        default=None,
        help="default: the longest merged trajectory response rounded up to 512 (no truncation)",
    )
    parser.add_argument("--out", required=True, help="output JSON file")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    rollouts = []
    longest_prompt = 0
    longest_response = 0
    trajectory_tokens = 0
    call_tokens = 0
    for index in range(args.rollouts):
        group = index // args.group_size
        if index % args.group_size == 0:
            # Each task has its own difficulty so groups mix all-correct, all-wrong and split outcomes.
            success_rate = rng.random()
        rollout, first_prompt_len, merged_len = make_rollout(
            rng,
            index=index,
            data_id=f"task-{group:05d}",
            calls=args.calls,
            prompt_len=args.prompt_len,
            response_len=args.response_len,
            observation_len=args.observation_len,
            success_rate=success_rate,
        )
        rollouts.append(rollout)
        longest_prompt = max(longest_prompt, first_prompt_len)
        longest_response = max(longest_response, merged_len)
        trajectory_tokens += first_prompt_len + merged_len
        call_tokens += sum(len(t["prompt_token_ids"]) + len(t["response_token_ids"]) for t in rollout["triplets"])

    params = {
        "max_prompt_length": args.max_prompt_length or round_up(longest_prompt, 256),
        "max_response_length": args.max_response_length or round_up(longest_response, 512),
        "pad_token_id": PAD_TOKEN_ID,
        "reward_fillna_value": 0.0,
    }
    try:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump({"rollouts": rollouts, "params": params}, out, separators=(",", ":"))
            out.write("\n")
    except OSError as err:
        print(f"make_synthetic_batch: cannot write {args.out}: {err.strerror}", file=sys.stderr)
        return 2
    print(
        f"wrote {args.out}: {args.rollouts} rollouts x {args.calls} calls, "
        f"{trajectory_tokens} trajectory tokens, {call_tokens} prompt+response tokens summed over calls, "
        f"params {json.dumps(params)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
