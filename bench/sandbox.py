"""Python-block sandbox: what each layer does with the escape payloads, and what a call costs.

    python bench/sandbox.py            # full: 30 timed calls per isolation
    python bench/sandbox.py --smoke    # quick check that it runs

For every payload of tests/sandbox/payloads.py it reports the outcome with
the policy layer on (refused before running / contained by the jail /
escaped) and with the jail alone (policy off, full builtins: contained /
escaped). "Escaped" means a canary fired: the 0600 secret's token reached
the outputs, the loopback listener saw a connection, a file appeared outside
the temp dir, or a process of the block outlived it. Then it times a trivial
block per available isolation against a bare ``python -I -S -c pass``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import pathlib
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

from flowcore.sandbox import (
    PythonSandbox,
    SandboxError,
    SandboxLimits,
    SandboxViolation,
    available_isolation,
)
from flowcore.sandbox.jail import _works

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIMITS = SandboxLimits(cpu_seconds=1, memory_mb=256, file_size_mb=8, processes=16)
TRIVIAL = "def execute(inputs, context):\n    return {'ok': True}\n"


def load_payloads() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("payloads", ROOT / "tests/sandbox/payloads.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    payloads: dict[str, str] = module.PAYLOADS
    return payloads


class Canaries:
    def __init__(self, workdir: pathlib.Path, port: int, connections: list[bytes]) -> None:
        self.token = f"CANARY-{uuid.uuid4().hex}"
        self.secret = workdir / "secret.txt"
        self.secret.write_text(self.token)
        self.secret.chmod(0o600)
        self.target = workdir / "escaped.txt"
        self.port = port
        self.connections = connections
        os.environ["FLOWCORE_SANDBOX_CANARY"] = self.token

    def inputs(self) -> dict[str, Any]:
        return {
            "secret": str(self.secret),
            "target": str(self.target),
            "port": self.port,
            "env": "FLOWCORE_SANDBOX_CANARY",
            "marker": self.token,
        }

    def escaped(self, outputs: object) -> bool:
        alive = False
        for proc in pathlib.Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if proc.name.isdigit() and self.token.encode() in (proc / "cmdline").read_bytes():
                    alive = True
                    os.kill(int(proc.name), 9)
        return bool(
            self.token in repr(outputs) or self.connections or self.target.exists() or alive
        )


async def outcome(sandbox: PythonSandbox, source: str, canaries: Canaries) -> str:
    canaries.connections.clear()
    outputs: object = None
    how = "contained"
    try:
        outputs = (await sandbox.run(source, canaries.inputs(), {}, timeout=3)).outputs
        how = "contained (ran, nothing got out)"
    except SandboxViolation as exc:
        how = "refused" if exc.layer == "policy" else "contained (jail: violation)"
    except SandboxError as exc:
        how = f"contained ({exc.code}{': ' + exc.kind if hasattr(exc, 'kind') else ''})"
    return "ESCAPED" if canaries.escaped(outputs) else how


async def payload_table() -> list[tuple[str, str, str]]:
    connections: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        canaries = Canaries(pathlib.Path(tmp), port, connections)
        with_policy = PythonSandbox(limits=LIMITS)
        jail_only = PythonSandbox(limits=LIMITS, policy=False)
        for name, source in load_payloads().items():
            rows.append(
                (
                    name,
                    await outcome(with_policy, source, canaries),
                    await outcome(jail_only, source, canaries),
                )
            )
    server.close()
    await server.wait_closed()
    return rows


async def timings(rounds: int) -> list[tuple[str, list[float]]]:
    found: list[tuple[str, list[float]]] = []
    bare = []
    for _ in range(rounds):
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(sys.executable, "-I", "-S", "-c", "pass")
        await proc.wait()
        bare.append((time.perf_counter() - started) * 1000)
    found.append(("bare `python -I -S -c pass` (no sandbox)", bare))
    for isolation in ("bubblewrap", "unshare", "rlimits"):
        if not _works(isolation):
            continue
        sandbox = PythonSandbox(limits=LIMITS, isolation=isolation)
        await sandbox.run(TRIVIAL, {}, {})  # warm up
        samples = []
        for _ in range(rounds):
            result = await sandbox.run(TRIVIAL, {}, {})
            samples.append(result.duration * 1000)
        found.append((f"PythonSandbox, {isolation}", samples))
    return found


async def main() -> None:
    parser = argparse.ArgumentParser(description="flowcore sandbox benchmark")
    parser.add_argument("--smoke", action="store_true", help="few rounds, quick")
    args = parser.parse_args()
    rounds = 3 if args.smoke else 30
    print("# flowcore Python-block sandbox\n")
    print(
        f"Python {sys.version.split()[0]} · strongest isolation here: "
        f"{available_isolation()} · uid {os.geteuid()}\n"
    )
    print("## Escape payloads\n")
    print("| payload | policy layer + jail | jail alone (policy off, full builtins) |")
    print("|---|---|---|")
    rows = await payload_table()
    for name, policy, jail in rows:
        print(f"| {name} | {policy} | {jail} |")
    refused = sum(p == "refused" for _, p, _ in rows)
    escaped_policy = sum(p == "ESCAPED" for _, p, _ in rows)
    escaped_jail = sum(j == "ESCAPED" for _, _, j in rows)
    print(
        f"\n{len(rows)} payloads. Policy layer: {refused} refused, "
        f"{len(rows) - refused - escaped_policy} contained, {escaped_policy} escaped. "
        f"Jail alone: {len(rows) - escaped_jail} contained, {escaped_jail} escaped.\n"
    )
    print("## Per-call spawn overhead (trivial block, wall clock incl. policy check)\n")
    print("| how | rounds | median ms | min ms |")
    print("|---|--:|--:|--:|")
    for label, samples in await timings(rounds):
        print(
            f"| {label} | {len(samples)} | {statistics.median(samples):.1f} | {min(samples):.1f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
