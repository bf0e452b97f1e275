# The entrypoint of every Ray job the Harness Lab gateway submits:
#
#   python -m harness_lab_cluster.launch job.json
#
# run in the job's working_dir (the package the gateway uploaded: this folder, the bundled CLI under cluster/,
# the policy tokenizer under tokenizer/, and job.json). It starts Agent Lightning's three services the way
# Agent Lightning runs them, with the real entry points of the installed `agentlightning` wheel:
#
#   1. `agl-server` (the gateway: store + OpenAI-compatible proxy) on a free port, key from $HL_AGL_KEY;
#   2. `agl-controller runner_type=local`, which runs each rollout's agent (harness_lab_cluster.agent) as a local
#      subprocess with AGL_OPENAI_BASE_URL / AGL_EVENT_URL / AGL_KEY;
#   3. the trainer: for `agl-cpu` the project's own trainer (job.json's `trainer_command`, today `lab agl-train`)
#      with the project's policy behind
#      `lab policy-server`; for `agl-verl` Agent Lightning's verl trainer (harness_lab_cluster.verl_run).
#
# Every rollout agl-server finishes is copied at once into the job's spool (harness_lab_cluster.spool), which
# the Harness Lab gateway reads by cursor; after training the spool stays up (at most SPOOL_LINGER_S) until the
# gateway has read all of it.
#
# Lines starting with "[harness-lab] " are for the gateway that reads the job's log: `agl-gateway {"url": …}`
# (the job's Agent Lightning gateway), `agl-spool {"url": …}` (where to read rollouts) and `verl-file-logger
# <json>` (each line of $VERL_FILE_LOGGER_PATH as it is written). Children's output is forwarded with a `[name]`
# prefix (the gateway's per-request access log lines are not). The job ends with the trainer's exit code; on
# SIGTERM (Ray's job stop) every child is stopped first. The job also ends, stopping its children, when its
# driver is lost: Ray starts this process from a supervisor that dies with its node, and a launcher whose
# parent changed (reparented) stops everything rather than train on, unseen. Children get SIGTERM if the
# launcher itself is killed (PR_SET_PDEATHSIG).
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from harness_lab_cluster.spool import Spool

MARK = "[harness-lab] "
FILE_LOGGER_MARK = "[harness-lab:verl-file-logger] "
MODEL_NAME = "harness-lab-policy"
SPOOL_LINGER_S = 60.0
# Per-request noise: uvicorn's access log (`INFO:     127.0.0.1:5555 - "GET /api/rollouts/terminal?after=3
# HTTP/1.1" 200 OK`) and httpx's line for each of the controller's reconcile polls (every 0.5 s).
_ACCESS_LOG = re.compile(
    r'^INFO:\s+\S+:\d+ - "[A-Z]+ \S+ HTTP/[\d.]+" \d{3}|\[httpx\]\[INFO\] - HTTP Request: GET \S+/api/rollouts\?state_in='
)

_print_lock = threading.Lock()


_secrets: list[str] = []


def say(line: str) -> None:
    # the job log is readable by anyone with the Ray token: the run's key never goes into it (verl prints the
    # resolved config, agentlightning.agl_key included)
    for secret in _secrets:
        line = line.replace(secret, "[redacted]")
    with _print_lock:
        print(line, flush=True)


def announce(kind: str, **fields: object) -> None:
    say(f"{MARK}{kind} {json.dumps(fields)}")


def _die_with_parent() -> None:
    # runs in the child between fork and exec: SIGTERM when the launcher dies (Linux prctl PR_SET_PDEATHSIG)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class DriverLost(RuntimeError):
    pass


def _ancestors(pid: int, depth: int = 4) -> list[int]:
    out = []
    for _ in range(depth):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if pid <= 1:
            break
        out.append(pid)
    return out


def _alive(pid: int) -> bool:
    # a dead process whose parent died too can stay a zombie (state Z) where nothing reaps it: that is gone
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZXx"


_parent_pid = os.getppid()
# Ray's job supervisor (an actor process titled `ray::JobSupervisor…`) starts the entrypoint through `sh -c`.
def _find_supervisor() -> int | None:
    for p in _ancestors(os.getpid()):
        try:
            if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"ray::"):
                return p
        except OSError:
            continue
    return None


_supervisor = _find_supervisor()


def check_driver() -> None:
    """Raises when the process that started this job (Ray's job supervisor) is gone: the node died."""
    if os.getppid() != _parent_pid or (_supervisor is not None and not _alive(_supervisor)):
        raise DriverLost(
            f"the job's Ray supervisor (pid {_supervisor or _parent_pid}) is gone (the Ray node died or was stopped): stopping the job's processes"
        )


class Child:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: str, on_line=None) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            preexec_fn=_die_with_parent,
        )
        self.tail: list[str] = []
        self._on_line = on_line
        self._reader = threading.Thread(target=self._forward, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _forward(self, stream: IO[str]) -> None:
        for raw in stream:
            line = raw.rstrip("\n")
            self.tail = (self.tail + [line])[-40:]
            if self._on_line:
                self._on_line(line)
            if not _ACCESS_LOG.search(line):
                say(f"[{self.name}] {line}")

    def stop(self, grace: float = 10.0) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def join_output(self, timeout: float = 5.0) -> None:
        self._reader.join(timeout)


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_http(url: str, child: Child, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        check_driver()
        if child.proc.poll() is not None:
            raise RuntimeError(
                f"{child.name} exited with code {child.proc.returncode} before answering {url}:\n"
                + "\n".join(child.tail[-15:])
            )
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{child.name} did not answer {url} within {timeout:.0f} s")


def tail_file_logger(path: Path, stop: threading.Event) -> None:
    """Forwards each complete line of the file logger's JSONL to the job log as it is written."""
    pos = 0
    pending = ""
    while True:
        finished = stop.is_set()
        if path.exists():
            with path.open("r", encoding="utf-8") as f:
                f.seek(pos)
                chunk = f.read()
                pos = f.tell()
            pending += chunk
            *lines, pending = pending.split("\n")
            for line in lines:
                if line.strip():
                    say(FILE_LOGGER_MARK + line)
        if finished:
            return
        stop.wait(0.2)


def hydra_run_args(run_dir: Path, name: str) -> list[str]:
    # keep Hydra's outputs and working directory out of the package folder
    return [f"hydra.run.dir={run_dir / name}", "hydra.output_subdir=null", "hydra.job.chdir=false"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Harness Lab job launcher")
    parser.add_argument("job", help="job.json written by the gateway")
    args = parser.parse_args(argv)

    workdir = Path.cwd()
    job = json.loads(Path(args.job).read_text())
    template = job["template"]
    key = os.environ.get("HL_AGL_KEY", "")
    if not key:
        say(f"{MARK}error HL_AGL_KEY is not set: the gateway passes the Agent Lightning key in the job's env_vars")
        return 2
    _secrets.append(key)
    host = os.environ.get("HL_AGL_HOST", "127.0.0.1")
    bin_dir = Path(sys.executable).parent
    node = os.environ.get("HL_NODE") or shutil.which("node")
    lab_js = workdir / "cluster" / "lab.mjs"
    if node is None:
        say(f"{MARK}error no `node` on PATH of this Ray node: install Node.js >= 20 on every node (agents run `lab agent`)")
        return 2

    run_dir = Path(tempfile.mkdtemp(prefix="hl-job-"))
    metrics_file = run_dir / "metrics.jsonl"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(workdir), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["HL_LAB_JS"] = str(lab_js)
    env["HL_NODE"] = node
    env["VERL_FILE_LOGGER_PATH"] = str(metrics_file)
    # Agent processes (harness_lab_cluster.agent → lab agent) inherit these through the controller.

    children: list[Child] = []
    stopping = threading.Event()

    def shutdown(*_: object) -> None:
        stopping.set()
        for c in reversed(children):
            c.stop()

    signal.signal(signal.SIGTERM, lambda *_: (shutdown(), sys.exit(143)))

    spool: Spool | None = None
    tail_stop = threading.Event()
    tailer = threading.Thread(target=tail_file_logger, args=(metrics_file, tail_stop), daemon=True)
    tailer.start()
    code = 1
    try:
        port = free_port(host)
        server = Child(
            "agl-server",
            [
                str(bin_dir / "agl-server"),
                f"host={host}",
                f"port={port}",
                "key=${oc.env:HL_AGL_KEY}",
                f"default_proxy.model_name={MODEL_NAME}",
                *hydra_run_args(run_dir, "agl-server"),
            ],
            env,
            str(workdir),
        )
        children.append(server)
        local_url = f"http://127.0.0.1:{port}" if host in ("0.0.0.0", "127.0.0.1") else f"http://{host}:{port}"
        wait_http(f"{local_url}/healthz", server, 90)
        public_host = host
        if host == "0.0.0.0":
            public_host = socket.gethostbyname(socket.gethostname())
        announce("agl-gateway", url=f"http://{public_host}:{port}", template=template)
        spool = Spool(local_url, key, run_dir / "rollouts.jsonl")
        spool.start(host, 0)
        announce("agl-spool", url=f"http://{public_host}:{spool.port}")

        controller = Child(
            "agl-controller",
            [
                str(bin_dir / "agl-controller"),
                "runner_type=local",
                f"agl_server.url={local_url}",
                "agl_server.key=${oc.env:HL_AGL_KEY}",
                f"local_runner.maximum_size={int(job.get('max_parallel_rollouts', 8))}",
                "local_runner.poll_interval=0.5",
                *hydra_run_args(run_dir, "agl-controller"),
            ],
            env,
            str(workdir),
        )
        children.append(controller)

        if template == "agl-cpu":
            policy_url: list[str] = []
            ready = threading.Event()

            def on_policy_line(line: str) -> None:
                m = re.search(r"policy-server: listening on (http://\S+)", line)
                if m and not policy_url:
                    policy_url.append(m.group(1))
                    ready.set()

            policy = Child(
                "policy-server",
                [node, str(lab_js), "policy-server", *job["policy_server_args"], "--model", MODEL_NAME],
                env,
                str(workdir),
                on_line=on_policy_line,
            )
            children.append(policy)
            deadline = time.monotonic() + 90
            while not ready.wait(0.25):
                check_driver()
                if policy.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("policy-server did not start:\n" + "\n".join(policy.tail[-15:]))
            trainer = Child(
                "trainer",
                [
                    node,
                    str(lab_js),
                    # the trainer command and its arguments come from job.json (server/jobs.ts)
                    *job["trainer_command"],
                    "--agl-url",
                    local_url,
                    "--policy-url",
                    policy_url[0],
                    "--model",
                    MODEL_NAME,
                    "--metrics-file",
                    str(metrics_file),
                ],
                env,
                str(workdir),
            )
        elif template == "agl-verl":
            trainer = Child(
                "trainer",
                # on several nodes the trainer's actors call the gateway from other nodes: its announced address
                [sys.executable, "-m", "harness_lab_cluster.verl_run", args.job, "--agl-url",
                 f"http://{public_host}:{port}" if job.get("multi_node") else local_url],
                env,
                str(workdir),
            )
        else:
            say(f"{MARK}error unknown template {template!r}")
            return 2
        children.append(trainer)
        while trainer.proc.poll() is None:
            check_driver()
            for c in (server, controller):
                if c.proc.poll() is not None:
                    raise RuntimeError(f"{c.name} exited with code {c.proc.returncode}:\n" + "\n".join(c.tail[-15:]))
            time.sleep(0.5)
        trainer.join_output()
        code = trainer.proc.returncode
        if code != 0:
            say(f"{MARK}error trainer exited with code {code}")
        if not spool.finish(SPOOL_LINGER_S):
            say(f"{MARK}warning the gateway did not read the whole rollout spool within {SPOOL_LINGER_S:.0f} s")
    except DriverLost as e:
        say(f"{MARK}error {e}")
        code = 1
    except Exception as e:  # any start-up failure ends the job with its reason on one line the gateway reads
        say(f"{MARK}error {e if isinstance(e, RuntimeError) else f'{type(e).__name__}: {e}'}")
        code = 1
    finally:
        tail_stop.set()
        tailer.join(5)
        shutdown()
        if spool is not None:
            spool.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
