"""What a starting server does with runs the previous process left unfinished."""

from __future__ import annotations

import time

from flowcore.server.run_store import RunRow
from tests.server.conftest import Server


async def _leave(server: Server, row: RunRow) -> None:
    await server.manager.store.insert(row)


async def test_a_run_left_before_its_first_checkpoint_starts_again_under_its_own_id(
    server: Server,
) -> None:
    row = RunRow(
        run_id="left-1",
        user_id="ada",
        thread_id="thread-left",
        target={"graph": "approval"},
        target_name="approval",
        input={"draft": "ship it"},
        status="running",
        started_at=time.time(),
    )
    await _leave(server, row)
    assert await server.manager.recover() == ["left-1"]
    detail = await server.finished(server.ada, "left-1")
    # Stopped before its first checkpoint: it starts again with its own input.
    assert detail["status"] == "interrupted"
    assert detail["thread_id"] == "thread-left"
    assert detail["interrupts"][0]["value"]["draft"] == "Dear team, ship it"


async def test_a_run_that_cannot_continue_is_marked_failed_with_the_reason(
    server: Server,
) -> None:
    gone = RunRow(
        run_id="left-2",
        user_id="ada",
        thread_id="thread-gone",
        target={"graph": "no-longer-registered"},
        target_name="no-longer-registered",
        input={},
        status="suspended",
        started_at=time.time(),
    )
    threadless = RunRow(
        run_id="left-3",
        user_id="ada",
        thread_id=None,
        target={"graph": "echo"},
        target_name="echo",
        input={},
        status="running",
        started_at=time.time(),
    )
    await _leave(server, gone)
    await _leave(server, threadless)
    assert await server.manager.recover() == []
    failed = (await server.ada.get("/api/runs/left-2")).json()
    assert failed["status"] == "failed"
    assert "cannot resume" in failed["error"]
    assert "no-longer-registered" in failed["error"]
    no_thread = (await server.ada.get("/api/runs/left-3")).json()
    assert no_thread["status"] == "failed"
    assert "no thread" in no_thread["error"]
