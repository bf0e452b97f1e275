# The agl-verl template's trainer: Agent Lightning's verl trainer (agentlightning.verl.entrypoint.run_ppo) on
# the config composed from the installed wheels' YAML (verl_config.compose) with the template's Hydra overrides,
# plus the run-time keys only the launcher knows (the job's Agent Lightning gateway and key). The datasets are
# in memory: one row per task of the chosen harness; every non-tensor field of a row becomes the rollout's
# input, which the local runner maps to HL_* variables for harness_lab_cluster.agent (agentlightning.local.
# env_map). Needs the GPU stack in the cluster's image: verl 0.8.0 with its dependencies, torch, vLLM.
#
# What this adds around Agent Lightning's run_ppo, and why:
# - verl's file logger (verl/utils/tracking.py FileLogger) runs inside Agent Lightning's `_AglTaskRunner` actor,
#   not in this process, so VERL_FILE_LOGGER_PATH goes into the Ray runtime_env's env_vars (through
#   `ray_kwargs.ray_init.runtime_env`, merged with verl's own PPO env vars because run_ppo merges the two dicts
#   shallowly), and the actor is pinned to this node (NodeAffinitySchedulingStrategy), where the launcher tails
#   that file;
# - `agentlightning.agl_base_url` is the address the launcher says every node can reach (`--agl-url`);
# - the prompt and response lengths are checked against the model's context before anything is allocated;
# - checkpoints go to $HL_CHECKPOINT_DIR (default ~/harness-lab-checkpoints/<run>), not the job's package folder.
#
#   python -m harness_lab_cluster.verl_run job.json --agl-url http://HOST:PORT [--dry-run]
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


def model_context(model_path: str) -> int | None:
    """The model's context length from its config.json (a folder on this node, or the Hugging Face cache/hub)."""
    cfg: dict | None = None
    local = Path(model_path) / "config.json"
    if local.is_file():
        cfg = json.loads(local.read_text())
    else:
        try:
            from transformers import AutoConfig  # the GPU stack has it

            cfg = AutoConfig.from_pretrained(model_path).to_dict()
        except Exception:  # no transformers here, or the model cannot be resolved: verl will say so itself
            return None
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        if isinstance(cfg.get(key), int):
            return int(cfg[key])
    return None


def check_lengths(params: dict) -> str | None:
    need = int(params["max_prompt_length"]) + int(params["max_response_length"])
    ctx = model_context(str(params["model_path"]))
    if ctx is not None and need > ctx:
        return (
            f"max_prompt_length + max_response_length ({params['max_prompt_length']} + {params['max_response_length']}"
            f" = {need}) exceed the context of {params['model_path']} ({ctx} tokens)"
        )
    return None


def actor_runtime_env(metrics_file: str) -> tuple[dict, bool]:
    """verl's PPO env vars plus VERL_FILE_LOGGER_PATH, for ray_kwargs.ray_init.runtime_env; and whether verl's
    own were included (importing verl needs torch: on a CPU machine, a dry run has only the file logger's)."""
    try:
        from verl.trainer.constants_ppo import get_ppo_ray_runtime_env
    except ImportError:
        env, with_verl = {}, False
    else:
        env, with_verl = dict(get_ppo_ray_runtime_env().get("env_vars", {})), True
    env["VERL_FILE_LOGGER_PATH"] = metrics_file
    return {"env_vars": env}, with_verl


def pin_task_runner_here(entrypoint) -> None:
    """Places Agent Lightning's task-runner actor on this node, where the launcher reads the file logger."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    runner_cls = entrypoint._AglTaskRunner

    class _Pinned:
        def remote(self, *args, **kwargs):
            node = ray.get_runtime_context().get_node_id()
            strategy = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
            return runner_cls.options(scheduling_strategy=strategy).remote(*args, **kwargs)

    entrypoint._AglTaskRunner = _Pinned()


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
    metrics_file = os.environ.get("VERL_FILE_LOGGER_PATH", "")
    if not metrics_file:
        print("verl_run: VERL_FILE_LOGGER_PATH is not set (the launcher sets it)", file=sys.stderr)
        return 2
    unfit = check_lengths(params)
    if unfit:
        print(f"verl_run: {unfit}", file=sys.stderr)
        return 2
    run_id = os.environ.get("HL_RUN_ID") or "run"
    checkpoints = os.environ.get("HL_CHECKPOINT_DIR") or str(Path.home() / "harness-lab-checkpoints" / run_id)
    overrides = list(job["hydra_overrides"]) + [
        f"agentlightning.agl_base_url={args.agl_url}",
        "agentlightning.agl_key=${oc.env:HL_AGL_KEY}",
        f"trainer.default_local_dir={checkpoints}",
    ]
    config = compose(overrides)
    from omegaconf import OmegaConf, open_dict

    runtime_env, with_verl_env = actor_runtime_env(metrics_file)
    if not with_verl_env and not args.dry_run:
        print("verl_run: verl cannot be imported here (the GPU stack: bash python/setup_cluster.sh --gpu)", file=sys.stderr)
        return 2
    with open_dict(config):
        config.ray_kwargs.ray_init.runtime_env = OmegaConf.create(runtime_env)
    steps = int(params["total_training_steps"])
    batch = int(params["train_batch_size"])
    train = task_rows(params, "train", min(batch * steps, 1_000_000))
    val = task_rows(params, "val", max(1, min(64, batch)))

    if args.dry_run:
        print(
            json.dumps(
                {
                    "agentlightning.agl_base_url": config.agentlightning.agl_base_url,
                    "agentlightning.agl_key_is_env": config.agentlightning.agl_key == os.environ["HL_AGL_KEY"],
                    "trainer.logger": OmegaConf.to_container(config.trainer.logger),
                    "trainer.save_freq": config.trainer.save_freq,
                    "trainer.test_freq": config.trainer.test_freq,
                    "trainer.default_local_dir": config.trainer.default_local_dir,
                    "ray_kwargs.ray_init.runtime_env": OmegaConf.to_container(config.ray_kwargs.ray_init.runtime_env),
                    "runtime_env_has_verl_defaults": with_verl_env,
                    "lengths_checked": model_context(str(params["model_path"])) is not None,
                    "train_rows": len(train),
                    "val_rows": len(val),
                    "first_train_row": train[0],
                }
            )
        )
        return 0

    from agentlightning.verl import entrypoint

    pin_task_runner_here(entrypoint)
    entrypoint.run_ppo(config, train, val)
    return 0


if __name__ == "__main__":
    sys.exit(main())
