"""Canaries for the escape payloads.

A 0600 secret file, a loopback listener, target paths outside the sandbox
(one in the host's /tmp), a token in this process's environment, a host
process of uid 65534 that must survive, and a disk budget. ``outcome``
classifies one payload run per layer; the adversarial suite records each
outcome and ``pytest_terminal_summary`` prints them as a table.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

import pytest

from flowcore.sandbox import PythonSandbox, SandboxError, SandboxLimits, SandboxViolation

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
NOBODY = 65534
LIMITS = SandboxLimits(
    cpu_seconds=1, memory_mb=256, file_size_mb=8, processes=16, output_bytes=1_000_000
)


@dataclass
class Canaries:
    token: str
    secret: pathlib.Path
    target: pathlib.Path
    repo_target: pathlib.Path
    port: int
    env: str
    connections: list[bytes] = field(default_factory=list)
    host_tmp: pathlib.Path = pathlib.Path("/nonexistent")
    canary_pid: int = 0
    disk_mb: int = 0

    def inputs(self) -> dict[str, object]:
        return {
            "secret": str(self.secret),
            "target": str(self.target),
            "host_tmp": str(self.host_tmp),
            "port": self.port,
            "env": self.env,
            "marker": self.token,
            "canary_pid": self.canary_pid,
            "host_pid": os.getpid(),
            "disk_mb": self.disk_mb,
        }

    def canary_alive(self) -> bool:
        try:
            state = pathlib.Path(f"/proc/{self.canary_pid}/stat").read_text()
        except OSError:
            return False
        return state.rsplit(")", 1)[1].split()[0] not in ("Z", "X")

    def processes_with_marker(self) -> list[int]:
        found = []
        for proc in pathlib.Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    if self.token.encode() in (proc / "cmdline").read_bytes():
                        found.append(int(proc.name))
                except OSError:
                    continue
        return found

    def harm(self, outputs: object) -> list[str]:
        """Every sign that a payload got out, given what it returned."""
        seen = []
        if self.token in repr(outputs):
            seen.append("a canary token reached the outputs")
        if self.connections:
            seen.append(f"the listener saw {len(self.connections)} connection(s)")
        if self.target.exists() or self.repo_target.exists() or self.host_tmp.exists():
            seen.append("a file appeared outside the temp dir")
        if self.processes_with_marker():
            seen.append("a process of the block outlived it")
        if self.canary_pid and not self.canary_alive():
            seen.append("the host canary process was killed")
        written = outputs.get("written_bytes", 0) if isinstance(outputs, dict) else 0
        if self.disk_mb and isinstance(written, int) and written > self.disk_mb * 2**20:
            seen.append(f"{written} bytes written, over the {self.disk_mb} MB budget")
        return seen


@contextlib.asynccontextmanager
async def planted(
    workdir: pathlib.Path, setenv: Callable[[str, str], None]
) -> AsyncIterator[Canaries]:
    """Plant every canary (files under ``workdir``), and remove them all afterwards."""
    token = f"CANARY-{uuid.uuid4().hex}"
    secret = workdir / "secret.txt"
    secret.write_text(token)
    secret.chmod(0o600)
    env = "FLOWCORE_SANDBOX_CANARY"
    setenv(env, token)
    connections: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    # The uid the jail drops to: a weak jail could signal it (issue 16).
    canary = await asyncio.create_subprocess_exec(
        f"flowcore-canary-{uuid.uuid4().hex}", "600", executable="/bin/sleep", user=NOBODY
    )
    found = Canaries(
        token,
        secret,
        workdir / "escaped.txt",
        REPO_ROOT / f"escaped-{token}",
        port,
        env,
        connections,
        host_tmp=pathlib.Path("/tmp") / f"flowcore-escape-{token}",
        canary_pid=canary.pid,
        disk_mb=LIMITS.tmp_mb,
    )
    try:
        yield found
    finally:
        server.close()
        await server.wait_closed()
        if canary.returncode is None:
            canary.kill()
        await canary.wait()
        found.host_tmp.unlink(missing_ok=True)
        for pid in found.processes_with_marker():  # never leave one behind, even on failure
            os.kill(pid, 9)
        found.repo_target.unlink(missing_ok=True)


@pytest.fixture
async def canaries(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Canaries]:
    async with planted(tmp_path, monkeypatch.setenv) as found:
        yield found


@pytest.fixture
def jail_only() -> PythonSandbox:
    """The jail with the policy layer off and full builtins: simulates a policy bypass."""
    return PythonSandbox(limits=LIMITS, policy=False)


@pytest.fixture
def sandbox() -> PythonSandbox:
    return PythonSandbox(limits=LIMITS)


Outcome = Literal["refused", "contained", "escaped"]
OUTCOMES: dict[str, dict[str, str]] = {}
"""Payload -> layer -> outcome, filled by the adversarial suite for the summary table."""


async def outcome(
    sandbox: PythonSandbox, source: str, canaries: Canaries
) -> tuple[Outcome, list[str]]:
    """Run one payload; refused (by the policy, before it ran), contained or escaped, and why."""
    outputs: object = None
    try:
        outputs = (await sandbox.run(source, canaries.inputs(), {}, timeout=5)).outputs
    except SandboxViolation as exc:
        if exc.layer == "policy" and not canaries.harm(None):
            return "refused", list(exc.problems)
    except SandboxError:
        pass  # it ran and failed or hit a limit: the canaries say whether it did harm first
    harm = canaries.harm(outputs)
    return ("escaped" if harm else "contained"), harm


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not OUTCOMES:
        return
    layers = ("policy alone", "jail alone")
    width = max(len(name) for name in OUTCOMES)
    terminalreporter.section("adversarial payloads: outcome per layer")
    terminalreporter.line(f"| {'payload':<{width}} | {' | '.join(layers)} |")
    terminalreporter.line(f"|{'-' * (width + 2)}|{'|'.join('-' * (len(x) + 2) for x in layers)}|")
    for name in sorted(OUTCOMES):
        row = [OUTCOMES[name].get(layer, "-").ljust(len(layer)) for layer in layers]
        terminalreporter.line(f"| {name:<{width}} | {' | '.join(row)} |")
    for layer in layers:
        counts = [x.get(layer) for x in OUTCOMES.values()]
        summary = ", ".join(f"{counts.count(k)} {k}" for k in ("refused", "contained", "escaped"))
        terminalreporter.line(f"{layer}: {summary}")
