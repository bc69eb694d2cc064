"""Shared fixtures of the SDK's tests: the package on the path, a progress endpoint that answers
as scripted and records what it got, and a runner for worker scripts as subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "sdk" / "python"))
TINY = Path(__file__).resolve().parent / "data" / "tiny_train.py"
# The interpreter running the tests (ctest runs them with Debian's /usr/bin/python3, the one
# with torch), so that scripts the tests start import the same torch.
PYTHON = sys.executable


@dataclass
class Answer:
    status: int = 200
    body: dict | str = field(default_factory=lambda: {"action": "continue"})
    headers: dict = field(default_factory=dict)


def until(end_epoch: int) -> Callable[[dict], Answer]:
    """Answers as the controller does for a phase that ends at `end_epoch`."""
    return lambda report: Answer(body={
        "action": "checkpointAndExit" if report["epoch"] >= end_epoch else "continue"})


class ProgressEndpoint:
    """A local HTTP server in the controller's place: `answer(report)` decides each answer."""

    def __init__(self, answer: Callable[[dict], Answer]) -> None:
        self.answer = answer
        self.requests: list[dict] = []  # {"path", "authorization", "body"}
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw.decode()
                request = {"path": self.path, "authorization": self.headers.get("Authorization"),
                           "body": body}
                with endpoint._lock:
                    endpoint.requests.append(request)
                reply = endpoint.answer(body)
                data = (json.dumps(reply.body) if isinstance(reply.body, dict) else reply.body).encode()
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/namespaces/ml/jobs/j/progress"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()

    def reports(self) -> list[dict]:
        with self._lock:
            return [r["body"] for r in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint_factory():
    made: list[ProgressEndpoint] = []

    def make(answer: Callable[[dict], Answer] = lambda report: Answer()) -> ProgressEndpoint:
        made.append(ProgressEndpoint(answer))
        return made[-1]

    yield make
    for e in made:
        e.close()


def operator_env(tmp_path: Path, url: str, **overrides: str) -> dict[str, str]:
    """The contract's environment for one worker of phase 0 (the job 'j' in namespace 'ml')."""
    env = {"DEPL_JOB": "j", "DEPL_NAMESPACE": "ml", "DEPL_PHASE": "0", "DEPL_MODEL": "small",
           "DEPL_EPOCHS": "3", "DEPL_START_EPOCH": "0", "DEPL_DATASETS": "a,b",
           "DEPL_CHECKPOINT_DIR": str(tmp_path / "checkpoints"), "DEPL_PROGRESS_URL": url,
           "DEPL_PROGRESS_TOKEN": "secret-token"}
    env.update(overrides)
    return {k: v for k, v in env.items() if v is not None}


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def port_for_a_listener() -> int:
    """A port for a process the test starts to listen on, free now and in [10000, 20000), below
    the kernel's ephemeral range: port-0 listeners and outgoing connections of other tests running
    beside this one never take it, as they could a port taken from the ephemeral range and closed
    again; nor do the controller's rendezvous ports (20000 and up) in the dev cluster's tests."""
    end = min(20000, _ephemeral_low())
    first = 10000 if end > 11000 else 1025
    span = max(end - first, 1)
    start = os.getpid() % span  # spreads tests that run side by side over the range
    for i in range(span):
        port = first + (start + i) % span
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in [{first}, {end})")


@pytest.fixture
def refused_port():
    """A port on which connections are refused for the whole test: it is bound (so nothing else
    can listen there) but not listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]


def run_script(script: Path, args: list[str], env: dict[str, str] | None = None,
               timeout: float = 120) -> Finished:
    """Runs a worker script with Debian's python3; `env` replaces the DEPL_* and rank variables."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("DEPL_") and k not in ("WORLD_SIZE", "RANK", "MASTER_ADDR",
                                                       "MASTER_PORT", "LOCAL_RANK")}
    base.update(env or {})
    done = subprocess.run([PYTHON, str(script), *args], env=base, capture_output=True, text=True,
                          timeout=timeout)
    return Finished(done.returncode, done.stdout, done.stderr)
