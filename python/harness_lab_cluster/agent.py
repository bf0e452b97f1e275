# The thin Python agent class Agent Lightning's local runner loads (agentlightning.controller.local_reconciler:
# `config.local.agent_class`, instantiated with no arguments, `.run()` called). It runs ONE task of a Harness Lab
# harness by spawning the project's agent CLI (`lab agent`), which talks to AGL_OPENAI_BASE_URL and posts its
# reward to AGL_EVENT_URL with AGL_KEY, exactly as the runner set them for this rollout. The task comes from the
# rollout input through `agentlightning.local.env_map` (HL_HARNESS, HL_SPLIT, HL_SEED, HL_INDEX, HL_BEHAVIOUR).
# The job launcher sets HL_LAB_JS (the bundled CLI) and HL_NODE (the node binary).
from __future__ import annotations

import os
import subprocess

_REQUIRED = ("AGL_OPENAI_BASE_URL", "HL_LAB_JS", "HL_HARNESS", "HL_INDEX")


class HarnessLabAgent:
    """Runs `node $HL_LAB_JS agent --harness … --index …` for the rollout this process was started for."""

    def run(self) -> None:
        env = os.environ
        missing = [name for name in _REQUIRED if not env.get(name)]
        if missing:
            raise RuntimeError(f"HarnessLabAgent: environment variable(s) {', '.join(missing)} not set")
        argv = [
            env.get("HL_NODE") or "node",
            env["HL_LAB_JS"],
            "agent",
            "--harness",
            env["HL_HARNESS"],
            "--split",
            env.get("HL_SPLIT") or "train",
            "--seed",
            env.get("HL_SEED") or "0",
            "--index",
            env["HL_INDEX"],
        ]
        behaviour = env.get("HL_BEHAVIOUR")
        if behaviour and behaviour != "none":
            argv += ["--behaviour", behaviour]
        # The agent inherits AGL_OPENAI_BASE_URL, AGL_EVENT_URL and AGL_KEY from the runner.
        code = subprocess.run(argv, env=dict(env), check=False).returncode
        if code != 0:
            raise RuntimeError(f"lab agent exited with code {code}")
