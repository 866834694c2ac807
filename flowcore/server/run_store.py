"""The server's record of runs: who started what, on which thread, how it ended, its events.

A row per run is written when the run starts and updated when it ends, so a
restarted server knows which runs were cut short. Each row names the server
process running it (``server_id``); each process beats in
``flowcore_server_instances`` while it lives, so with several processes on
one database a run is taken over only when its process has stopped
(cleanly, or silently for longer than the staleness window). A run's AiEvents are kept
in memory while it runs and written here in one transaction when it ends
(or when the server stops it), so a finished run's event stream can be
replayed later.
"""

from __future__ import annotations

import builtins
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from flowcore.port.events import AiEvent, event_from_dict, event_to_dict
from flowcore.server.schema import ServerDb

__all__ = ["ACTIVE", "RunRow", "RunStore"]

ACTIVE = ("queued", "running", "suspended")
"""Statuses of a run that has not ended (``suspended``: stopped by a server stop, resumes)."""

_COLUMNS = (
    "run_id, user_id, thread_id, target, target_name, input, status, started_at, ended_at, "
    "input_tokens, output_tokens, error, interrupts, output, continues, continued_by, resume, "
    "server_id"
)


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the server records it.

    ``target`` is the request's target document (``{"graph": NAME}``,
    ``{"pipeline": {...}}``, ``{"pipeline_id": ID}`` or ``{"plan": {...}}``);
    ``resume`` the answer a continuation was started with (JSON), if any;
    ``server_id`` the server process that runs it (as read from the database).

    Example:
        >>> RunRow("r1", "ada", None, {"graph": "g"}, "g", {}, "running", 0.0).ended_at is None
        True
    """

    run_id: str
    user_id: str
    thread_id: str | None
    target: Mapping[str, Any]
    target_name: str
    input: Mapping[str, Any] | None
    status: str
    started_at: float
    ended_at: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    interrupts: tuple[Mapping[str, Any], ...] = ()
    output: Mapping[str, Any] | None = None
    continues: str | None = None
    continued_by: str | None = None
    resume: Any = field(default=None)
    server_id: str | None = None


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _row(raw: Sequence[Any]) -> RunRow:
    return RunRow(
        run_id=str(raw[0]),
        user_id=str(raw[1]),
        thread_id=raw[2],
        target=json.loads(raw[3]),
        target_name=str(raw[4]),
        input=None if raw[5] is None else json.loads(raw[5]),
        status=str(raw[6]),
        started_at=float(raw[7]),
        ended_at=raw[8],
        input_tokens=int(raw[9]),
        output_tokens=int(raw[10]),
        error=raw[11],
        interrupts=tuple(json.loads(raw[12])),
        output=None if raw[13] is None else json.loads(raw[13]),
        continues=raw[14],
        continued_by=raw[15],
        resume=None if raw[16] is None else json.loads(raw[16]),
        server_id=raw[17],
    )


class RunStore:
    """Run rows and run events in the server database.

    Example:
        >>> # store = RunStore(db)
        >>> # await store.insert(row); await store.get("r1")
    """

    def __init__(self, db: ServerDb, *, server_id: str | None = None) -> None:
        self.db = db
        self.server_id = server_id or "server-" + uuid.uuid4().hex[:16]

    async def insert(self, row: RunRow) -> None:
        """Record a run that is starting.

        Example:
            >>> # await store.insert(row)
        """
        await self.db.execute(
            f"INSERT INTO flowcore_server_runs ({_COLUMNS}) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.run_id,
                row.user_id,
                row.thread_id,
                _dumps(row.target),
                row.target_name,
                None if row.input is None else _dumps(row.input),
                row.status,
                row.started_at,
                row.ended_at,
                row.input_tokens,
                row.output_tokens,
                row.error,
                _dumps(list(row.interrupts)),
                None if row.output is None else _dumps(row.output),
                row.continues,
                row.continued_by,
                None if row.resume is None else _dumps(row.resume),
                self.server_id,
            ),
        )

    async def update(self, row: RunRow) -> None:
        """Write the changing fields of ``row`` (status, thread, ending, usage, links).

        Example:
            >>> # await store.update(replace(row, status="completed", ended_at=time.time()))
        """
        await self.db.execute(
            "UPDATE flowcore_server_runs SET thread_id = ?, status = ?, ended_at = ?, "
            "input_tokens = ?, output_tokens = ?, error = ?, interrupts = ?, output = ?, "
            "continued_by = ? WHERE run_id = ?",
            (
                row.thread_id,
                row.status,
                row.ended_at,
                row.input_tokens,
                row.output_tokens,
                row.error,
                _dumps(list(row.interrupts)),
                None if row.output is None else _dumps(row.output),
                row.continued_by,
                row.run_id,
            ),
        )

    async def get(self, run_id: str) -> RunRow | None:
        """The run ``run_id``, or None.

        Example:
            >>> # row = await store.get("r1")
        """
        raw = await self.db.fetchone(
            f"SELECT {_COLUMNS} FROM flowcore_server_runs WHERE run_id = ?", (run_id,)
        )
        return None if raw is None else _row(raw)

    async def list(
        self, *, user_id: str | None = None, thread_id: str | None = None, limit: int = 100
    ) -> builtins.list[RunRow]:
        """Runs matching the filters given, newest first.

        Example:
            >>> # mine = await store.list(user_id="ada", limit=20)
        """
        sql = f"SELECT {_COLUMNS} FROM flowcore_server_runs WHERE 1 = 1"
        params: builtins.list[Any] = []
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        sql += " ORDER BY started_at DESC, run_id DESC LIMIT ?"
        params.append(limit)
        return [_row(r) for r in await self.db.fetchall(sql, params)]

    async def thread_owner(self, thread_id: str) -> str | None:
        """The user whose runs use ``thread_id``, or None for a thread the server never saw.

        Example:
            >>> # await store.thread_owner("t1")  -> 'ada'
        """
        raw = await self.db.fetchone(
            "SELECT user_id FROM flowcore_server_runs WHERE thread_id = ? "
            "ORDER BY started_at LIMIT 1",
            (thread_id,),
        )
        return None if raw is None else str(raw[0])

    async def unfinished(self, *, stale_after: float = 30.0) -> builtins.list[RunRow]:
        """Unfinished runs no live server process holds, oldest first.

        A run is orphaned when its process is this one (and the caller has
        no live run for it), stopped cleanly (its beat was removed), or has
        not beaten for ``stale_after`` seconds (killed).

        Example:
            >>> # for row in await store.unfinished(): ...
        """
        marks = ", ".join("?" for _ in ACTIVE)
        rows = await self.db.fetchall(
            f"SELECT {_COLUMNS} FROM flowcore_server_runs r WHERE status IN ({marks}) "
            "AND (r.server_id IS NULL OR r.server_id = ? OR NOT EXISTS ("
            "SELECT 1 FROM flowcore_server_instances i WHERE i.server_id = r.server_id "
            "AND i.beat_at > ?)) ORDER BY started_at, run_id",
            (*ACTIVE, self.server_id, time.time() - stale_after),
        )
        return [_row(r) for r in rows]

    async def claim(self, row: RunRow) -> RunRow | None:
        """Take ``row`` over for this process (status ``running``); None if another took it first.

        One conditional update: of several servers recovering at once, one wins.

        Example:
            >>> # mine = await store.claim(row)  # a row unfinished() returned
        """
        # Still as read: same status, same owner (whoever claimed it first changed the owner).
        changed = await self.db.execute(
            "UPDATE flowcore_server_runs SET status = 'running', server_id = ? "
            "WHERE run_id = ? AND status = ? AND COALESCE(server_id, '') = ?",
            (self.server_id, row.run_id, row.status, row.server_id or ""),
        )
        if changed != 1:
            return None
        return replace(row, status="running", server_id=self.server_id)

    async def beat(self) -> None:
        """Say this process is alive (its runs are not to be taken over).

        Example:
            >>> # await store.beat()  # every few seconds while serving
        """
        await self.db.execute(
            "INSERT INTO flowcore_server_instances (server_id, beat_at) VALUES (?, ?) "
            "ON CONFLICT (server_id) DO UPDATE SET beat_at = excluded.beat_at",
            (self.server_id, time.time()),
        )

    async def request_cancel(self, run_id: str) -> bool:
        """Ask whichever server runs ``run_id`` to cancel it; False if it is not going.

        Example:
            >>> # await store.request_cancel("r1")  # the owner cancels it within a second
        """
        changed = await self.db.execute(
            "UPDATE flowcore_server_runs SET cancel_requested = ? "
            "WHERE run_id = ? AND status IN ('queued', 'running')",
            (time.time(), run_id),
        )
        return changed == 1

    async def cancels_requested(self) -> builtins.list[str]:
        """This server's going runs that someone asked (through any server) to cancel.

        Example:
            >>> # for run_id in await store.cancels_requested(): ...
        """
        rows = await self.db.fetchall(
            "SELECT run_id FROM flowcore_server_runs WHERE server_id = ? "
            "AND cancel_requested IS NOT NULL AND status IN ('queued', 'running')",
            (self.server_id,),
        )
        return [str(r[0]) for r in rows]

    async def alive(self, server_id: str | None, *, stale_after: float = 30.0) -> bool:
        """Whether the server ``server_id`` has beaten within ``stale_after`` seconds.

        Example:
            >>> # await store.alive(row.server_id)
        """
        if server_id is None:
            return False
        row = await self.db.fetchone(
            "SELECT 1 FROM flowcore_server_instances WHERE server_id = ? AND beat_at > ?",
            (server_id, time.time() - stale_after),
        )
        return row is not None

    async def leave(self) -> None:
        """Remove this process's beat (a clean stop): its suspended runs may continue elsewhere.

        Example:
            >>> # await store.leave()
        """
        await self.db.execute(
            "DELETE FROM flowcore_server_instances WHERE server_id = ?", (self.server_id,)
        )

    async def save_events(self, run_id: str, events: Sequence[AiEvent]) -> None:
        """Store ``events`` of ``run_id`` (replacing what was stored under their seq numbers).

        Example:
            >>> # await store.save_events("r1", log)
        """
        if not events:
            return
        await self.db.executemany(
            "INSERT INTO flowcore_server_events (run_id, seq, event) VALUES (?, ?, ?) "
            "ON CONFLICT (run_id, seq) DO UPDATE SET event = excluded.event",
            ((run_id, e.seq, _dumps(event_to_dict(e))) for e in events),
        )

    async def events(self, run_id: str) -> builtins.list[AiEvent]:
        """The stored events of ``run_id``, in order.

        Example:
            >>> # log = await store.events("r1")
        """
        rows = await self.db.fetchall(
            "SELECT event FROM flowcore_server_events WHERE run_id = ? ORDER BY seq", (run_id,)
        )
        return [event_from_dict(json.loads(r[0])) for r in rows]


def ended(row: RunRow, status: str, **changes: Any) -> RunRow:
    """``row`` marked as ended with ``status`` now (helper for the run manager).

    Example:
        >>> ended(RunRow("r", "u", None, {}, "g", None, "running", 0.0), "completed").status
        'completed'
    """
    return replace(row, status=status, ended_at=time.time(), **changes)
