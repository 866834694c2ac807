"""Canaries for the escape payloads: a secret file, a listener, a target path, an env token."""

from __future__ import annotations

import asyncio
import os
import pathlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from flowcore.sandbox import PythonSandbox, SandboxLimits

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
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

    def inputs(self) -> dict[str, object]:
        return {
            "secret": str(self.secret),
            "target": str(self.target),
            "port": self.port,
            "env": self.env,
            "marker": self.token,
        }

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
        if self.target.exists() or self.repo_target.exists():
            seen.append("a file appeared outside the temp dir")
        if self.processes_with_marker():
            seen.append("a process of the block outlived it")
        return seen


@pytest.fixture
async def canaries(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Canaries]:
    token = f"CANARY-{uuid.uuid4().hex}"
    secret = tmp_path / "secret.txt"
    secret.write_text(token)
    secret.chmod(0o600)
    env = "FLOWCORE_SANDBOX_CANARY"
    monkeypatch.setenv(env, token)
    connections: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    found = Canaries(
        token,
        secret,
        tmp_path / "escaped.txt",
        REPO_ROOT / f"escaped-{token}",
        port,
        env,
        connections,
    )
    try:
        yield found
    finally:
        server.close()
        await server.wait_closed()
        for pid in found.processes_with_marker():  # never leave one behind, even on failure
            os.kill(pid, 9)
        found.repo_target.unlink(missing_ok=True)


@pytest.fixture
def jail_only() -> PythonSandbox:
    """The jail with the policy layer off and full builtins: simulates a policy bypass."""
    return PythonSandbox(limits=LIMITS, policy=False)


@pytest.fixture
def sandbox() -> PythonSandbox:
    return PythonSandbox(limits=LIMITS)
