# Composes Agent Lightning's verl trainer config (agentlightning/verl/config.yaml: `defaults: [ppo_trainer,
# _self_]`, `hydra.searchpath: [pkg://verl/trainer/config]`) from the YAML files of the installed wheels. The
# `pkg://verl…` search path would import the verl package, which imports torch; pointing Hydra at the wheel's
# YAML folder with a `file://` search path needs neither, so the same composition runs on a CPU machine (the
# template test) and on the cluster (the agl-verl launcher).
#
#   python -m harness_lab_cluster.verl_config OVERRIDES.json [--keys KEY,KEY…]
#
# OVERRIDES.json is a JSON list of Hydra override strings. Prints one JSON object: each requested key's value in
# the composed config (after interpolation). Exits 2 with Hydra's message when an override does not compose.
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml


def agl_verl_config_dir() -> Path:
    spec = importlib.util.find_spec("agentlightning")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("agentlightning is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "verl"


def verl_trainer_config_dir() -> Path:
    # the distribution's files, located without importing verl
    path = Path(str(importlib.metadata.distribution("verl").locate_file("verl/trainer/config")))
    if not (path / "ppo_trainer.yaml").exists():
        raise RuntimeError(f"verl's trainer YAML is not at {path}")
    return path


def versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in ("agentlightning", "verl", "hydra-core", "omegaconf")}


def compose(overrides: list[str]) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    source = agl_verl_config_dir() / "config.yaml"
    doc = yaml.safe_load(source.read_text())
    searchpath = doc.get("hydra", {}).get("searchpath", [])
    if searchpath != ["pkg://verl/trainer/config"]:
        raise RuntimeError(f"{source}: unexpected hydra.searchpath {searchpath!r}")
    doc["hydra"]["searchpath"] = [f"file://{verl_trainer_config_dir()}"]
    with tempfile.TemporaryDirectory(prefix="hl-verl-config-") as tmp:
        (Path(tmp) / "config.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        with initialize_config_dir(config_dir=tmp, version_base=None, job_name="harness_lab"):
            return hydra_compose(config_name="config", overrides=list(overrides))


def main(argv: list[str] | None = None) -> int:
    from omegaconf import OmegaConf

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("overrides", help="JSON file with a list of Hydra override strings")
    parser.add_argument("--keys", default="", help="comma-separated keys to print")
    args = parser.parse_args(argv)
    try:
        overrides = json.loads(Path(args.overrides).read_text())
    except (OSError, ValueError) as e:
        print(f"verl_config: cannot read {args.overrides}: {e}", file=sys.stderr)
        return 2
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        print("verl_config: the overrides file must hold a JSON list of strings", file=sys.stderr)
        return 2
    try:
        cfg = compose(overrides)
    except Exception as e:  # Hydra's own error names the override and the key
        print(f"verl_config: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    out: dict[str, Any] = {"_versions": versions()}
    for key in [k for k in args.keys.split(",") if k]:
        value = OmegaConf.select(cfg, key, throw_on_missing=False, default="<absent>")
        out[key] = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
