"""A real ``flowcore serve`` process for the specs that need one (shutdown, the API contract)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
GUARD = 60.0  # only reached when a spec fails


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Served:
    """One ``flowcore serve`` process and everything it printed and answered.

    ``db`` None: no ``--db``, so the database comes from the environment
    (``FLOWCORE_DATABASE_URL``).
    """

    def __init__(
        self,
        db: Path | None,
        env: dict[str, str],
        log: Path,
        started: list[Served],
        *extra: str,
    ) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flowcore",
                "serve",
                *(("--db", str(db)) if db is not None else ()),
                "--port",
                str(self.port),
                "--graphs",
                "tests.server.slow_graphs:build",
                *extra,
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        started.append(self)
        deadline = time.monotonic() + GUARD
        while True:
            assert self.proc.poll() is None, log.read_text()
            try:
                if httpx.get(self.base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.1)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=GUARD)
        self.log.close()
        return code

    def kill(self) -> None:
        """Only for a failed spec: end the process (by its own handle) and close its log."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=GUARD)
        self.log.close()


def cli(env: dict[str, str], *args: str) -> str:
    """Run ``python -m flowcore ARGS`` and return what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "flowcore", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=True,
    )
    return done.stdout


def new_key(env: dict[str, str], db: Path | None, user: str) -> str:
    """A fresh API key for ``user`` from ``flowcore keys create`` (``db`` None: the env's)."""
    where = ("--db", str(db)) if db is not None else ()
    created = json.loads(cli(env, "keys", "create", "--user", user, *where, "--json"))
    key: str = created["key"]
    return key
