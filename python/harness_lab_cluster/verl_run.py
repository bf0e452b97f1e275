# The agl-verl template's trainer: Agent Lightning's verl trainer (agentlightning.verl.entrypoint.run_ppo) on
# the config composed from the installed wheels' YAML (verl_config.compose) with the template's Hydra overrides,
# plus the run-time keys only the launcher knows (the job's Agent Lightning gateway and key). The datasets are
# in memory: one row per task of the chosen harness; every non-tensor field of a row becomes the rollout's
# input, which the local runner maps to HL_* variables for harness_lab_cluster.agent (agentlightning.local.
# env_map). Needs the GPU stack in the cluster's image: verl 0.8.0 with its dependencies, torch, vLLM.
#
#   python -m harness_lab_cluster.verl_run job.json --agl-url http://127.0.0.1:PORT
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from harness_lab_cluster.verl_config import compose


def task_rows(params: dict, split: str, count: int) -> list[dict]:
    rows = []
    for i in range(count):
        rows.append(
            {
                "harness": params["harness"],
                "split": split,
                "seed": int(params["seed"]),
                "index": i,
                "behaviour": params["behaviour"],
                # the task id: the gateway's terminal listing reports it as data_id, so viewers group by task
                "data_id": f"{params['harness']}-{split}-s{int(params['seed'])}-{i}",
                "extra_info": {"index": i},
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("--agl-url", required=True)
    parser.add_argument(
        "--dry-run", action="store_true", help="compose the config and build the datasets, print them, do not train"
    )
    args = parser.parse_args(argv)
    job = json.loads(Path(args.job).read_text())
    params = job["params"]
    if not os.environ.get("HL_AGL_KEY"):
        print("verl_run: HL_AGL_KEY is not set", file=sys.stderr)
        return 2
    overrides = list(job["hydra_overrides"]) + [
        f"agentlightning.agl_base_url={args.agl_url}",
        "agentlightning.agl_key=${oc.env:HL_AGL_KEY}",
    ]
    config = compose(overrides)
    steps = int(params["total_training_steps"])
    batch = int(params["train_batch_size"])
    train = task_rows(params, "train", min(batch * steps, 1_000_000))
    val = task_rows(params, "val", max(1, min(64, batch)))

    if args.dry_run:
        from omegaconf import OmegaConf

        print(
            json.dumps(
                {
                    "agentlightning.agl_base_url": config.agentlightning.agl_base_url,
                    "agentlightning.agl_key_is_env": config.agentlightning.agl_key == os.environ["HL_AGL_KEY"],
                    "trainer.logger": OmegaConf.to_container(config.trainer.logger),
                    "train_rows": len(train),
                    "val_rows": len(val),
                    "first_train_row": train[0],
                }
            )
        )
        return 0

    from agentlightning.verl.entrypoint import run_ppo

    run_ppo(config, train, val)
    return 0


if __name__ == "__main__":
    sys.exit(main())
