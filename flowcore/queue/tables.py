"""The queue's own tables on Postgres: one row per queued run, and every event it emitted.

``flowcore_queue_runs`` says where each run is (``queued``, ``running``, or
its final status), which procrastinate job carries it, the thread it runs on,
a stop request (``cancel``, ``interrupt``, ``rollback``) and, once it ended,
its :class:`~flowcore.port.RunOutcome` as JSON. ``flowcore_queue_events``
keeps every AiEvent of a run under ``(run_id, seq)``: a worker appends them
and sends ``NOTIFY flowcore_queue_events, '<run_id>'``; a subscriber wakes on
the notification (or on its poll) and reads the rows after the last ``seq``
it has, so one that comes late, or whose connection dropped, replays them and
misses none. The outcome is written in the same transaction as the ``done``
event, so a reader that sees ``done`` always finds the outcome.

The same module installs procrastinate's own schema when it is missing
(:meth:`QueueTables.open` does both, under an advisory lock, so workers and
submitters starting together never race).

Example:
    >>> # async with QueueTables(url) as tables:
    >>> #     rows = await tables.events_after("r1", -1)
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from flowcore._postgres import redact_url
from flowcore._postgres_store import PostgresStoreBase
from flowcore.queue.errors import QueueStoreError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["EVENTS_CHANNEL", "QueueTables", "RunRow"]

EVENTS_CHANNEL: Final = "flowcore_queue_events"
"""The NOTIFY channel a worker signals a run's new events on; payload: the run id."""

ACTIVE = ("queued", "running")

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS flowcore_queue_runs (
            run_id TEXT PRIMARY KEY,
            job_id BIGINT,
            thread_id TEXT,
            thread_given BOOLEAN NOT NULL DEFAULT FALSE,
            target TEXT NOT NULL,
            strategy TEXT NOT NULL,
            status TEXT NOT NULL,
            stop_reason TEXT,
            stopped_by TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_seq INTEGER NOT NULL DEFAULT 0,
            outcome JSONB,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS flowcore_queue_runs_thread "
        "ON flowcore_queue_runs (thread_id, created_at)",
        """CREATE TABLE IF NOT EXISTS flowcore_queue_events (
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            event JSONB NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
    ),
)

_RUN_COLUMNS = (
    "run_id, job_id, thread_id, thread_given, target, strategy, status, stop_reason, "
    "stopped_by, attempts, next_seq, outcome"
)


@dataclass(frozen=True, slots=True)
class RunRow:
    """One row of ``flowcore_queue_runs``.

    Example:
        >>> RunRow("r1", 7, "t1", True, "chat", "enqueue", "queued").active
        True
    """

    run_id: str
    job_id: int | None
    thread_id: str | None
    thread_given: bool
    target: str
    strategy: str
    status: str
    stop_reason: str | None = None
    stopped_by: str | None = None
    attempts: int = 0
    next_seq: int = 0
    outcome: Mapping[str, Any] | None = None

    @property
    def active(self) -> bool:
        """Queued or running (not ended)."""
        return self.status in ACTIVE


def _row(values: Sequence[Any]) -> RunRow:
    return RunRow(*values)


class QueueTables(PostgresStoreBase):
    """The runs and events tables (and procrastinate's schema), on a pool of their own.

    Example:
        >>> QueueTables("postgresql://app:pw@db/flowcore")
        QueueTables('postgresql://app:***@db/flowcore')
    """

    _what = "QueueTables"
    _kind = "queue"
    _migrations = _MIGRATIONS
    _store_error = QueueStoreError
    _not_open_error = QueueStoreError
    _not_open = "{store!r} is not open; use 'async with QueueTables(url) as tables:'"

    def __repr__(self) -> str:
        return f"QueueTables({redact_url(self.url)!r})"

    async def _after_migrate(self, conn: AsyncConnection[Any]) -> None:
        # procrastinate's schema is not idempotent SQL: install it once, under a lock.
        from procrastinate.schema import SchemaManager

        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext('flowcore:procrastinate'))")
            cur = await conn.execute("SELECT to_regclass('procrastinate_jobs')")
            row = await cur.fetchone()
            if row is None or row[0] is None:
                await conn.execute(SchemaManager.get_schema())

    # ------------------------------------------------------------------ runs
    async def insert_run(
        self,
        conn: AsyncConnection[Any],
        *,
        run_id: str,
        thread_id: str | None,
        target: str,
        strategy: str,
    ) -> None:
        """Record a new queued run (inside the caller's transaction).

        Example:
            >>> # await tables.insert_run(conn, run_id="r1", thread_id="t1", ...)
        """
        now = time.time()
        await conn.execute(
            "INSERT INTO flowcore_queue_runs (run_id, thread_id, thread_given, target, "
            "strategy, status, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, 'queued', %s, %s)",
            (run_id, thread_id, thread_id is not None, target, strategy, now, now),
        )

    async def active_runs(self, conn: AsyncConnection[Any], thread_id: str) -> list[RunRow]:
        """The thread's queued and running runs, oldest first (caller's transaction).

        Example:
            >>> # busy = await tables.active_runs(conn, "t1")
        """
        cur = await conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM flowcore_queue_runs WHERE thread_id = %s "
            "AND status IN ('queued', 'running') ORDER BY created_at",
            (thread_id,),
        )
        return [_row(r) for r in await cur.fetchall()]

    async def get_run(self, run_id: str) -> RunRow | None:
        """The run's row, or None.

        Example:
            >>> # row = await tables.get_run("r1")
        """
        pool = self._require_open()
        async with self._errors("read a run"), pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM flowcore_queue_runs WHERE run_id = %s", (run_id,)
            )
            row = await cur.fetchone()
        return None if row is None else _row(row)

    async def claim(self, run_id: str, thread_id: str | None) -> RunRow | None:
        """Mark the run ``running`` (again, after a crash) and count the attempt.

        ``thread_id`` is stored when the run had none yet (the worker made
        one). Returns the row as it was before, or None for an unknown run.

        Example:
            >>> # before = await tables.claim("r1", "t1")
        """
        pool = self._require_open()
        async with self._errors("claim a run"), pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM flowcore_queue_runs WHERE run_id = %s FOR UPDATE",
                (run_id,),
            )
            found = await cur.fetchone()
            if found is None:
                return None
            row = _row(found)
            if row.active:
                await conn.execute(
                    "UPDATE flowcore_queue_runs SET status = 'running', attempts = attempts + 1, "
                    "thread_id = COALESCE(thread_id, %s), updated_at = %s WHERE run_id = %s",
                    (thread_id, time.time(), run_id),
                )
            return row

    async def request_stop(self, run_id: str, reason: str, by: str | None = None) -> RunRow | None:
        """Record a stop request (``cancel``, ``interrupt``, ``rollback``) and who made it.

        Returns the run's row (None if unknown). The worker running it reads
        the reason when procrastinate aborts its job; a worker that has not
        started it yet ends it at once.

        Example:
            >>> # await tables.request_stop("r1", "cancel")
        """
        pool = self._require_open()
        async with self._errors("request a stop"), pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "UPDATE flowcore_queue_runs SET stop_reason = COALESCE(stop_reason, %s), "
                "stopped_by = COALESCE(stopped_by, %s), updated_at = %s "
                f"WHERE run_id = %s RETURNING {_RUN_COLUMNS}",
                (reason, by, time.time(), run_id),
            )
            found = await cur.fetchone()
        return None if found is None else _row(found)

    async def stop_reason(self, run_id: str) -> tuple[str | None, str | None]:
        """The run's pending stop request and who made it (None, None: none).

        Example:
            >>> # reason, by = await tables.stop_reason("r1")
        """
        row = await self.get_run(run_id)
        return (None, None) if row is None else (row.stop_reason, row.stopped_by)

    # ---------------------------------------------------------------- events
    async def append(
        self,
        run_id: str,
        events: Sequence[Mapping[str, Any]],
        *,
        outcome: Mapping[str, Any] | None = None,
        only_if_status: Sequence[str] = (),
    ) -> bool:
        """Store events (their ``seq`` set already) and, with ``outcome``, end the run.

        One transaction: the rows, the run's ``next_seq`` (and final status
        and outcome), then ``NOTIFY``. With ``only_if_status`` nothing is
        written unless the run's status is one of them (returns False).

        Example:
            >>> # await tables.append("r1", [event_to_dict(e)])
        """
        pool = self._require_open()
        async with self._errors("append events"), pool.connection() as conn, conn.transaction():
            if only_if_status:
                cur = await conn.execute(
                    "SELECT status FROM flowcore_queue_runs WHERE run_id = %s FOR UPDATE",
                    (run_id,),
                )
                row = await cur.fetchone()
                if row is None or row[0] not in only_if_status:
                    return False
            if events:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        "INSERT INTO flowcore_queue_events (run_id, seq, event) "
                        "VALUES (%s, %s, %s) ON CONFLICT (run_id, seq) DO NOTHING",
                        [(run_id, int(e["seq"]), json.dumps(e)) for e in events],
                    )
            next_seq = max(int(e["seq"]) for e in events) + 1 if events else None
            if outcome is not None:
                await conn.execute(
                    "UPDATE flowcore_queue_runs SET status = %s, outcome = %s, "
                    "next_seq = COALESCE(%s, next_seq), updated_at = %s WHERE run_id = %s",
                    (outcome["status"], json.dumps(outcome), next_seq, time.time(), run_id),
                )
            elif next_seq is not None:
                await conn.execute(
                    "UPDATE flowcore_queue_runs SET next_seq = GREATEST(next_seq, %s) "
                    "WHERE run_id = %s",
                    (next_seq, run_id),
                )
            await conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, run_id))
        return True

    async def events_after(self, run_id: str, seq: int, limit: int = 500) -> list[dict[str, Any]]:
        """The run's stored events with ``seq`` greater than ``seq``, in order.

        Example:
            >>> # first = await tables.events_after("r1", -1)
        """
        pool = self._require_open()
        async with self._errors("read events"), pool.connection() as conn:
            cur = await conn.execute(
                "SELECT event FROM flowcore_queue_events WHERE run_id = %s AND seq > %s "
                "ORDER BY seq LIMIT %s",
                (run_id, seq, limit),
            )
            rows = await cur.fetchall()
        return [r[0] if isinstance(r[0], dict) else json.loads(r[0]) for r in rows]
