"""What the ``interrupt`` and ``rollback`` strategies do to the stopped run's thread.

* :func:`cut_thread` (``interrupt``): the stopped run keeps every checkpoint
  it saved, but its unfinished remainder is dropped: the thread's latest
  checkpoint is rewritten without a "next nodes" cursor, so the thread reads
  as ended there and the next run's input applies on top of that state (as a
  LangGraph thread continues after an interrupted run).
* :func:`drop_run_checkpoints` (``rollback``): every checkpoint the stopped
  run wrote is deleted (they are the newest of the thread, so nothing older
  loses its parent); the thread is back where it was before that run.

Both work on any checkpointer with ``history`` and ``rewrite`` (the Postgres
and SQLite ones).

Example:
    >>> # await drop_run_checkpoints(checkpoints, "t1", "run-7")
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["cut_thread", "drop_run_checkpoints"]


async def cut_thread(checkpointer: Any, thread_id: str, run_id: str) -> bool:
    """Make the thread's latest checkpoint (if ``run_id`` wrote it) an end; True if changed.

    Example:
        >>> # await cut_thread(checkpoints, "t1", "run-7")
    """
    latest = await checkpointer.get(thread_id)
    if latest is None or latest.cursor is None or latest.metadata.get("run_id") != run_id:
        return False
    metadata = {**latest.metadata, "status": "cancelled", "stopped": "interrupt"}
    ended = dataclasses.replace(latest, cursor=None, metadata=metadata)
    await checkpointer.rewrite(thread_id, replace=[ended])
    return True


async def drop_run_checkpoints(checkpointer: Any, thread_id: str, run_id: str) -> int:
    """Delete the checkpoints ``run_id`` wrote on the thread; returns how many.

    Example:
        >>> # await drop_run_checkpoints(checkpoints, "t1", "run-7")
    """
    doomed = [
        cp.checkpoint_id
        for cp in await checkpointer.history(thread_id)
        if cp.metadata.get("run_id") == run_id
    ]
    if doomed:
        await checkpointer.rewrite(thread_id, delete=doomed)
    return len(doomed)
