"""Spec: a worker-subprocess executor passes the same conformance kit.

``SubprocessExecutor`` runs every request in a fresh Python process that
rebuilds the target by its registered kit name and streams AiEvents back as
JSON lines; it shares no code with ``InProcExecutor`` beyond the event data
model. Passing the kit shows that the port can really be swapped. The
last tests pin what only a process boundary has: cancelling before the worker
reported in, a worker that dies, an unknown name, and closing the executor.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowcore.port import AiEvent, Caller, RunRequest
from flowcore.testing import ExecutorConformance, KitTargets, named_targets

from .subprocess_executor import SubprocessExecutor, SubprocessRunHandle


class TestSubprocessExecutor(ExecutorConformance):
    # Every run starts a Python process first, which a busy machine can slow to seconds.
    run_timeout = 60.0
    first_event_timeout = 30.0

    @pytest.fixture
    async def executor(self, tmp_path: Path) -> AsyncIterator[SubprocessExecutor]:
        executor = SubprocessExecutor(checkpoint_path=tmp_path / "worker-threads.sqlite")
        yield executor
        await executor.aclose()

    @pytest.fixture
    def kit_targets(self) -> KitTargets:
        return named_targets()


# ---------------------------------------------- what only a subprocess has


# Seconds a worker process may take to start, run and stop: only reached when a spec
# fails, while a busy machine can take several seconds just to import flowcore.
GUARD = 60.0


def _request(target: str, run_input: dict[str, Any] | None = None) -> RunRequest:
    return RunRequest(target, run_input, Caller("req-sub", "trace-sub"))


async def _drain(handle: SubprocessRunHandle) -> list[AiEvent]:
    async with asyncio.timeout(GUARD):
        return [event async for event in handle]


async def test_cancel_before_the_worker_reported_in_still_ends_the_run_once(
    tmp_path: Path,
) -> None:
    executor = SubprocessExecutor(checkpoint_path=tmp_path / "threads.sqlite")
    handle = executor.run(_request("kit.slow", {"gate": str(tmp_path / "never")}))
    handle.cancel()

    events = await _drain(handle)

    # The worker may have written a line or two before the signal landed.
    types = [e.type for e in events]
    assert types[0] == "run_start"
    assert types[-1] == "done"
    assert set(types) <= {"run_start", "node_start", "done"}
    assert types.count("done") == 1
    assert events[-1].status == "cancelled"  # type: ignore[union-attr]
    assert {(e.graph_name, e.graph_version) for e in events} == {("kit.slow", "kit-1")}
    assert (await handle.final).status == "cancelled"
    await executor.aclose()


async def test_a_worker_that_dies_mid_run_ends_it_failed_with_its_exit_code(
    tmp_path: Path,
) -> None:
    executor = SubprocessExecutor(checkpoint_path=tmp_path / "threads.sqlite")
    handle = executor.run(_request("kit.slow", {"gate": str(tmp_path / "never")}))
    events: list[AiEvent] = []
    async with asyncio.timeout(GUARD):
        async for event in handle:
            events.append(event)
            if event.type == "node_start":
                assert handle.pid is not None
                os.kill(handle.pid, signal.SIGKILL)

    assert [e.type for e in events][-2:] == ["error", "done"]
    assert events[-1].status == "failed"  # type: ignore[union-attr]
    assert f"code {-signal.SIGKILL}" in events[-2].message  # type: ignore[union-attr]
    assert [e.seq for e in events] == list(range(len(events)))
    outcome = await handle.final
    assert outcome.status == "failed"
    assert outcome.error
    await executor.aclose()


async def test_an_unknown_target_fails_the_run_naming_the_known_ones(tmp_path: Path) -> None:
    executor = SubprocessExecutor(checkpoint_path=tmp_path / "threads.sqlite")
    handle = executor.run(_request("kit.nope"))

    events = await _drain(handle)

    assert [e.type for e in events] == ["run_start", "error", "done"]
    assert "kit.simple" in events[1].message  # type: ignore[union-attr]
    assert (await handle.final).status == "failed"
    await executor.aclose()


async def test_aclose_stops_every_worker_still_running(tmp_path: Path) -> None:
    executor = SubprocessExecutor(checkpoint_path=tmp_path / "threads.sqlite")
    handles = [
        executor.run(_request("kit.slow", {"gate": str(tmp_path / "never")})) for _ in range(2)
    ]
    async with asyncio.timeout(GUARD):
        await executor.aclose()

    for handle in handles:
        assert (await handle.final).status == "cancelled"
        assert handle.pid is not None
        with pytest.raises(ProcessLookupError):
            os.kill(handle.pid, 0)  # waited for: the process no longer exists
