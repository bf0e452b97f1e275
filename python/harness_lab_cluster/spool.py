# The job's rollout spool: every rollout Agent Lightning's gateway (`agl-server`) finishes is copied, with its
# full event list, into an append-only JSONL file on the job's node (flushed and fsync'd per batch) the moment it
# is listed as terminal, well before the trainer deletes consumed rollouts (~1 s after they finish). The Harness
# Lab gateway reads the spool instead of agl-server, by cursor, over the same three read routes agl-server has:
#
#   GET /api/rollouts/terminal?after=N&limit=M   {items: [{rollout_id, state, data_id, is_train}], next_after, total_terminal}
#   GET /api/rollouts/{rid}                      {rollout, attempts}           (404: the spool could not read it in time)
#   GET /api/rollouts/{rid}/events               [event, …]
#   GET /healthz                                 {"status": "ok"}             (no key)
#
# so a gateway that was away, slow or busy catches up completely whenever it comes back, and its reads never
# compete with the copy (which talks to agl-server on loopback). Same key as agl-server (Bearer). The spool
# tracks the highest cursor a reader has asked from (everything below it is stored on the reader's side), which
# lets the launcher keep the spool up after training until the gateway has read all of it (bounded).
from __future__ import annotations

import hmac
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Entry:
    __slots__ = ("rollout_id", "state", "data_id", "is_train", "offset", "length", "missed")

    def __init__(self, item: dict, offset: int, length: int, missed: bool) -> None:
        self.rollout_id = str(item["rollout_id"])
        self.state = str(item.get("state", ""))
        self.data_id = str(item.get("data_id", ""))
        self.is_train = bool(item.get("is_train", True))
        self.offset = offset
        self.length = length
        self.missed = missed


class Spool:
    """Copies agl-server's terminal rollouts into `path` and serves them by cursor."""

    def __init__(self, agl_url: str, key: str, path: Path, poll_s: float = 0.1) -> None:
        self.agl_url = agl_url.rstrip("/")
        self.key = key
        self.path = path
        self.poll_s = poll_s
        self.entries: list[_Entry] = []
        self.by_id: dict[str, _Entry] = {}
        self.cursor = 0  # agl-server's terminal cursor
        self.read_upto = 0  # the highest `after` a reader asked from
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.error: str | None = None
        self._file = path.open("ab")
        self._thread = threading.Thread(target=self._copy_loop, daemon=True)
        self.server: ThreadingHTTPServer | None = None

    # -- copying from agl-server -------------------------------------------------------------------------
    def _get(self, path: str):
        req = urllib.request.Request(self.agl_url + path, headers={"Authorization": f"Bearer {self.key}"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def copy_once(self) -> int:
        """One pass: every rollout listed as terminal since the cursor; returns how many were spooled."""
        n = 0
        while True:
            page = self._get(f"/api/rollouts/terminal?after={self.cursor}&limit=100")
            items = page.get("items", []) if isinstance(page, dict) else []
            lines: list[tuple[dict, bytes, bool]] = []
            for it in items:
                rid = urllib.parse.quote(str(it["rollout_id"]), safe="")
                header = self._get(f"/api/rollouts/{rid}")
                events = self._get(f"/api/rollouts/{rid}/events") if header is not None else None
                missed = header is None or events is None
                doc = {"item": it} if missed else {"item": it, "rollout": header, "events": events}
                lines.append((it, (json.dumps(doc, separators=(",", ":")) + "\n").encode(), missed))
            if lines:
                with self.lock:
                    offset = self._file.tell()
                    for it, data, missed in lines:
                        self._file.write(data)
                        e = _Entry(it, offset, len(data), missed)
                        offset += len(data)
                        self.entries.append(e)
                        self.by_id[e.rollout_id] = e
                    self._file.flush()
                    os.fsync(self._file.fileno())
                n += len(lines)
            self.cursor = int(page.get("next_after", self.cursor)) if isinstance(page, dict) else self.cursor
            if len(items) < 100:
                return n

    def _copy_loop(self) -> None:
        failures = 0
        while not self.stop_event.is_set():
            try:
                self.copy_once()
                failures = 0
                self.error = None
            except (urllib.error.URLError, OSError, ValueError) as e:
                failures += 1
                self.error = f"{type(e).__name__}: {e}"
            self.stop_event.wait(self.poll_s if failures == 0 else min(2.0, self.poll_s * 2**failures))

    # -- serving ---------------------------------------------------------------------------------------------
    def _doc(self, e: _Entry) -> dict:
        with self.path.open("rb") as f:
            f.seek(e.offset)
            return json.loads(f.read(e.length))

    def start(self, host: str, port: int) -> str:
        spool = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:  # the gateway polls often; no access log
                return

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body, separators=(",", ":")).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                u = urllib.parse.urlsplit(self.path)
                if u.path == "/healthz":
                    return self._send(200, {"status": "ok"})
                given = self.headers.get("authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {spool.key}".encode()):
                    return self._send(401, {"detail": "missing or wrong key"})
                parts = [urllib.parse.unquote(p) for p in u.path.split("/") if p]
                if parts == ["api", "rollouts", "terminal"]:
                    q = urllib.parse.parse_qs(u.query)
                    try:
                        after = max(0, int(q.get("after", ["0"])[0]))
                        limit = min(1000, max(1, int(q.get("limit", ["100"])[0])))
                    except ValueError:
                        return self._send(400, {"detail": "after and limit must be integers"})
                    with spool.lock:
                        spool.read_upto = max(spool.read_upto, min(after, len(spool.entries)))
                        page = spool.entries[after : after + limit]
                        total = len(spool.entries)
                    items = [
                        {"rollout_id": e.rollout_id, "state": e.state, "data_id": e.data_id, "is_train": e.is_train}
                        for e in page
                    ]
                    return self._send(200, {"items": items, "next_after": after + len(page), "total_terminal": total})
                if len(parts) in (3, 4) and parts[:2] == ["api", "rollouts"]:
                    with spool.lock:
                        e = spool.by_id.get(parts[2])
                    if e is None or e.missed:
                        return self._send(404, {"detail": f"rollout {parts[2]} is not in the spool"})
                    doc = spool._doc(e)
                    if len(parts) == 3:
                        return self._send(200, doc["rollout"])
                    if parts[3] == "events":
                        return self._send(200, doc["events"])
                return self._send(404, {"detail": f"no route GET {u.path}"})

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self._thread.start()
        return f"{self.server.server_address[0]}:{self.server.server_address[1]}"

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def caught_up(self) -> bool:
        with self.lock:
            return self.read_upto >= len(self.entries)

    def finish(self, linger_s: float) -> bool:
        """Stops copying after a last pass, then waits (at most `linger_s`) for a reader to have read everything."""
        self.stop_event.set()
        self._thread.join(15)
        try:
            self.copy_once()
        except (urllib.error.URLError, OSError, ValueError):
            pass  # agl-server is gone: the spool has what it copied
        deadline = time.monotonic() + linger_s
        while not self.caught_up() and time.monotonic() < deadline:
            time.sleep(0.2)
        return self.caught_up()

    def close(self) -> None:
        self.stop_event.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        with self.lock:
            self._file.close()
