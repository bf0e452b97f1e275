"""The upstream defaults of the config field table's keys, from the composed Agent Lightning + verl config.

Composes agentlightning/verl/config.yaml (which pulls verl's trainer config, ppo_trainer, through its Hydra search
path) exactly as `python -m agentlightning.verl` does, once per trace_aggregator.level, and writes for every key
given on stdin (a JSON list) its value, or marks it absent, plus the sample lengths the trainer hands the rollout
adapter at that level (agentlightning/verl/trainer.py: the trajectory_* lengths at trajectory level, data.* at
transition level).

    npx tsx tests/tools/config-keys.ts | python/.venv-peer/bin/python python/extract_upstream_defaults.py \
        > tests/fixtures/upstream/agl-1.0.0-verl-0.8.0-defaults.json
"""

import json
import os
import sys
from importlib.metadata import version

import agentlightning
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from omegaconf.errors import MissingMandatoryValue

LEVELS = ("trajectory", "transition")
ABSENT = object()


def value_of(cfg, key):
    try:
        v = OmegaConf.select(cfg, key, throw_on_missing=True, default=ABSENT)
    except MissingMandatoryValue:
        return {"mandatory": True}
    if v is ABSENT:
        return None
    if OmegaConf.is_config(v):
        v = OmegaConf.to_container(v, resolve=True)
    return {"value": v}


def adapter_lengths(cfg):
    """The rollout adapter's max_prompt_length / max_response_length for this config (trainer.py's rule)."""
    agg = cfg.agentlightning.trace_aggregator
    level = str(agg.get("level", "transition"))
    trajectory = level.startswith("trajectory")
    return {
        "max_prompt_length": agg.get("trajectory_max_prompt_length", cfg.data.max_prompt_length)
        if trajectory
        else cfg.data.max_prompt_length,
        "max_response_length": agg.get("trajectory_max_response_length", cfg.data.max_response_length)
        if trajectory
        else cfg.data.max_response_length,
    }


def main():
    keys = json.load(sys.stdin)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        sys.exit("stdin must be a JSON list of config keys")
    config_dir = os.path.join(os.path.dirname(agentlightning.__file__), "verl")
    out = {
        "source": {
            "agentlightning": version("agentlightning"),
            "verl": version("verl"),
            "config": "agentlightning/verl/config.yaml (defaults: ppo_trainer from verl/trainer/config)",
        },
        "levels": {},
    }
    for level in LEVELS:
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            cfg = compose(config_name="config", overrides=[f"agentlightning.trace_aggregator.level={level}"])
        values, absent, mandatory = {}, [], []
        for k in keys:
            v = value_of(cfg, k)
            if v is None:
                absent.append(k)
            elif v.get("mandatory"):
                mandatory.append(k)
            else:
                values[k] = v["value"]
        out["levels"][level] = {
            "values": values,
            "absent": absent,
            "mandatory": mandatory,
            "adapter": adapter_lengths(cfg),
        }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
