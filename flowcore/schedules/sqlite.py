"""``SqliteScheduleStore``: schedules and slot claims in flowcore's SQLite file.

The tables start with ``schedule_`` and the schema version lives in
``schedule_meta``, so the file can be the one every other flowcore store
uses. Every write is one ``BEGIN IMMEDIATE`` transaction, so schedulers in
several processes on one file take turns: a tick's decisions, claims and
cursor moves land together or not at all, and the UNIQUE key of
``schedule_slots`` refuses a second claim of a slot whatever happens.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiosqlite

from flowcore._async_context import AsyncOpenClose
from flowcore._sqlite import (
    MIN_BUSY_TIMEOUT,
    SqliteFile,
    check_busy_timeout,
    close_quietly,
    upgrade,
)
from flowcore.errors import InvalidInputError
from flowcore.schedules.model import (
    Schedule,
    ScheduleExistsError,
    ScheduleNotFoundError,
    ScheduleStoreError,
    SlotClaim,
    check_schedule,
)
from flowcore.schedules.store import (
    SCHEDULE_COLUMNS,
    SLOT_COLUMNS,
    DueSlot,
    check_grace,
    check_now,
    due_at,
    plan_tick,
    schedule_from_row,
    schedule_to_row,
    slot_from_row,
)

__all__ = ["SqliteScheduleStore"]

T = TypeVar("T")

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE schedule_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE schedule_defs (
            schedule_id TEXT PRIMARY KEY,
            user_id TEXT,
            cron TEXT NOT NULL,
            timezone TEXT NOT NULL,
            description TEXT NOT NULL,
            target TEXT NOT NULL,
            target_id TEXT NOT NULL,
            inputs TEXT NOT NULL,
            enabled INTEGER NOT NULL,
            missed TEXT NOT NULL,
            created_at REAL NOT NULL,
            cursor REAL NOT NULL,
            due_at REAL NOT NULL
        )""",
        # The at-most-once guarantee: one row per schedule and slot, ever.
        """CREATE TABLE schedule_slots (
            schedule_id TEXT NOT NULL,
            slot REAL NOT NULL,
            kind TEXT NOT NULL,
            missed INTEGER NOT NULL,
            claimed_by TEXT NOT NULL,
            claimed_at REAL NOT NULL,
            run_id TEXT,
            status TEXT,
            UNIQUE (schedule_id, slot)
        )""",
        "CREATE INDEX schedule_defs_user ON schedule_defs (user_id, schedule_id)",
        # A tick reads only what is due: enabled schedules whose next slot has come.
        "CREATE INDEX schedule_defs_due ON schedule_defs (enabled, due_at)",
    ),
)
_VERSION = len(_MIGRATIONS)
_CLAIM = (
    f"INSERT INTO schedule_slots ({SLOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL) "
    "ON CONFLICT (schedule_id, slot) DO NOTHING RETURNING slot"
)


class SqliteScheduleStore(AsyncOpenClose):
    """A :class:`~flowcore.schedules.store.ScheduleStore` in one SQLite file.

    Args:
        path: The database file (created if missing; may hold other flowcore stores).
        busy_timeout: Seconds to wait for another process's write lock (at least 5).

    Example:
        >>> import asyncio, tempfile, os
        >>> from flowcore.schedules.model import new_schedule
        >>> async def demo(path):
        ...     async with SqliteScheduleStore(path) as store:
        ...         await store.add(new_schedule({"id": "p", "name": "P", "nodes": []},
        ...                                      cron="@daily", schedule_id="d", now=0.0))
        ...         return [s.schedule_id for s in await store.list()]
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     asyncio.run(demo(os.path.join(tmp, "f.db")))
        ['d']
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = MIN_BUSY_TIMEOUT
    ) -> None:
        if os.fspath(path) in ("", ":memory:"):
            raise InvalidInputError(
                "SqliteScheduleStore needs a file path: schedulers in other processes must "
                "see the same schedules"
            )
        self.path = Path(path)
        self.busy_timeout = check_busy_timeout(busy_timeout)
        self._file = SqliteFile(
            self.path, self.busy_timeout, ScheduleStoreError, "SqliteScheduleStore", "schedules "
        )
        self._conn: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        self._state: Literal["new", "open", "closed"] = "new"
        self._pending: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        return f"SqliteScheduleStore({str(self.path)!r}, {self._state})"

    async def _enter(self) -> None:
        await self.open()

    async def open(self) -> None:
        """Open the file, creating or migrating the schedule tables; a no-op if open.

        Example:
            >>> # store = SqliteScheduleStore("flowcore.db"); await store.open()
        """
        async with self._lock:
            if self._state == "open":
                return
            if self._state == "closed":
                raise ScheduleStoreError(f"{self!r} has been closed; create a new store")
            writer, reader = await self._file.open(
                synchronous="NORMAL",
                current=_VERSION,
                schema_version=self._schema_version,
                migrate=self._migrate,
            )
            # One connection does it all: reads are rare (CLI listings), writes are one per tick.
            await close_quietly(reader)
            self._conn, self._state = writer, "open"

    async def aclose(self) -> None:
        """Close the connection; a no-op if closed.

        Example:
            >>> # await store.aclose()
        """
        pending = list(self._pending)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        async with self._lock:
            conn, self._conn, self._state = self._conn, None, "closed"
            await close_quietly(conn)

    async def _schema_version(self, conn: aiosqlite.Connection) -> int:
        try:
            rows = await conn.execute_fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schedule_meta'"
            )
        except sqlite3.Error as exc:
            raise self._file.open_error(exc) from exc
        if not list(rows):
            return 0
        return await self._file.schema_version(
            conn, "schedule_meta", current=_VERSION, kind="schedule"
        )

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        body = upgrade(_MIGRATIONS, meta_table="schedule_meta", schema_version=self._schema_version)
        await self._file.transaction(conn, body, failed=self._failed)

    def _failed(self, exc: sqlite3.Error) -> ScheduleStoreError:
        return ScheduleStoreError(f"write to schedules in {self.path} failed: {exc}")

    async def _write(self, run: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        self._require_open()

        async def locked() -> T:
            async with self._lock:
                conn = self._require_open()
                return await self._file.transaction(conn, run, failed=self._failed)

        task = asyncio.get_running_loop().create_task(locked())
        self._pending.add(task)
        task.add_done_callback(_settled(self._pending))
        # Shielded: a cancelled caller stops waiting, the transaction still ends whole
        # (aclose waits for it), so the connection never holds half a transaction.
        return await asyncio.shield(task)

    async def _read(self, sql: str, params: tuple[Any, ...] = ()) -> builtins.list[Any]:
        async with self._lock:
            conn = self._require_open()
            try:
                return list(await conn.execute_fetchall(sql, params))
            except sqlite3.Error as exc:
                raise ScheduleStoreError(
                    f"read from schedules in {self.path} failed: {exc}"
                ) from exc

    def _require_open(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise ScheduleStoreError(
                f"{self!r} is not open; use 'async with SqliteScheduleStore(path) as store:'"
            )
        return self._conn

    # ------------------------------------------------------------------ schedules

    async def add(self, schedule: Schedule) -> Schedule:
        """Store a new schedule (see :meth:`ScheduleStore.add`).

        Example:
            >>> # await store.add(new_schedule(plan, user_id="ada"))
        """
        row = (*schedule_to_row(check_schedule(schedule)), due_at(schedule, schedule.cursor))

        async def insert(conn: aiosqlite.Connection) -> bool:
            rows = await conn.execute_fetchall(
                f"INSERT INTO schedule_defs ({SCHEDULE_COLUMNS}, due_at) VALUES "
                f"({', '.join('?' * 13)}) ON CONFLICT (schedule_id) DO NOTHING "
                "RETURNING schedule_id",
                row,
            )
            return bool(list(rows))

        if not await self._write(insert):
            raise ScheduleExistsError(schedule.schedule_id)
        return schedule

    async def get(self, schedule_id: str) -> Schedule:
        """The schedule (see :meth:`ScheduleStore.get`).

        Example:
            >>> # schedule = await store.get("lunch-tuesday")
        """
        rows = await self._read(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs WHERE schedule_id = ?", (schedule_id,)
        )
        if not rows:
            raise ScheduleNotFoundError(schedule_id)
        return schedule_from_row(rows[0])

    async def list(
        self, *, user_id: str | None = None, enabled: bool | None = None
    ) -> builtins.list[Schedule]:
        """Schedules matching the filters, by id (see :meth:`ScheduleStore.list`).

        Example:
            >>> # mine = await store.list(user_id="ada")
        """
        clauses, params = _filters(user_id, enabled)
        rows = await self._read(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs {clauses} ORDER BY schedule_id",
            params,
        )
        return [schedule_from_row(r) for r in rows]

    async def remove(self, schedule_id: str) -> bool:
        """Delete the schedule and its claims (see :meth:`ScheduleStore.remove`).

        Example:
            >>> # await store.remove("lunch-tuesday")
        """

        async def delete(conn: aiosqlite.Connection) -> bool:
            await conn.execute_fetchall(
                "DELETE FROM schedule_slots WHERE schedule_id = ?", (schedule_id,)
            )
            rows = await conn.execute_fetchall(
                "DELETE FROM schedule_defs WHERE schedule_id = ? RETURNING schedule_id",
                (schedule_id,),
            )
            return bool(list(rows))

        return await self._write(delete)

    async def set_enabled(self, schedule_id: str, enabled: bool, *, now: float) -> Schedule:
        """Enable or disable (see :meth:`ScheduleStore.set_enabled`).

        Example:
            >>> # await store.set_enabled("lunch-tuesday", False, now=time.time())
        """

        async def update(conn: aiosqlite.Connection) -> bool:
            rows = await conn.execute_fetchall(
                f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs WHERE schedule_id = ?",
                (schedule_id,),
            )
            if not rows:
                return False
            found = schedule_from_row(next(iter(rows)))
            if not enabled:
                await conn.execute_fetchall(
                    "UPDATE schedule_defs SET enabled = 0 WHERE schedule_id = ?", (schedule_id,)
                )
            elif not found.enabled:
                # The time it was off is not "missed": start from now.
                cursor = max(found.cursor, float(now))
                await conn.execute_fetchall(
                    "UPDATE schedule_defs SET enabled = 1, cursor = ?, due_at = ? "
                    "WHERE schedule_id = ?",
                    (cursor, due_at(found, cursor), schedule_id),
                )
            return True

        if not await self._write(update):
            raise ScheduleNotFoundError(schedule_id)
        return await self.get(schedule_id)

    # ------------------------------------------------------------------ slots

    async def claim_slot(
        self,
        schedule_id: str,
        slot: float,
        *,
        kind: str = "on_time",
        missed: int = 0,
        claimed_by: str,
        claimed_at: float,
    ) -> bool:
        """Claim one slot (see :meth:`ScheduleStore.claim_slot`).

        Example:
            >>> # won = await store.claim_slot("d", 1711845000.0, claimed_by="s1", claimed_at=t)
        """
        params = (schedule_id, float(slot), kind, int(missed), claimed_by, float(claimed_at))

        async def claim(conn: aiosqlite.Connection) -> bool:
            return bool(list(await conn.execute_fetchall(_CLAIM, params)))

        return await self._write(claim)

    async def claim_due(
        self, now: datetime, *, grace: float, claimed_by: str
    ) -> builtins.list[DueSlot]:
        """One tick in one transaction (see :meth:`ScheduleStore.claim_due`).

        Example:
            >>> # for due in await store.claim_due(datetime.now(UTC), grace=60, claimed_by="s1"):
            >>> #     await sink.fire(due)
        """
        check_now(now)
        grace = check_grace(grace)

        async def tick(conn: aiosqlite.Connection) -> builtins.list[DueSlot]:
            rows = await conn.execute_fetchall(
                f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs WHERE enabled = 1 "
                "AND due_at <= ? ORDER BY schedule_id",
                (now.timestamp(),),
            )
            won: builtins.list[DueSlot] = []
            for row in rows:
                schedule = schedule_from_row(row)
                plan = plan_tick(schedule, now, grace=grace, claimed_by=claimed_by)
                claim = plan.claim
                if claim is not None:
                    got = await conn.execute_fetchall(
                        _CLAIM,
                        (
                            claim.schedule_id,
                            claim.slot,
                            claim.kind,
                            claim.missed,
                            claim.claimed_by,
                            claim.claimed_at,
                        ),
                    )
                    if list(got):
                        won.append(DueSlot(schedule, claim))
                await conn.execute_fetchall(
                    "UPDATE schedule_defs SET cursor = ?, due_at = ? WHERE schedule_id = ?",
                    (plan.cursor, plan.due_at, schedule.schedule_id),
                )
            return won

        return await self._write(tick)

    async def finish_slot(self, schedule_id: str, slot: float, *, run_id: str, status: str) -> None:
        """Record the run of a claimed slot (see :meth:`ScheduleStore.finish_slot`).

        Example:
            >>> # await store.finish_slot("d", slot, run_id=result.run_id, status=result.status)
        """

        async def update(conn: aiosqlite.Connection) -> None:
            await conn.execute_fetchall(
                "UPDATE schedule_slots SET run_id = ?, status = ? WHERE schedule_id = ? "
                "AND slot = ?",
                (run_id, status, schedule_id, float(slot)),
            )

        await self._write(update)

    async def slots(
        self, schedule_id: str | None = None, *, limit: int | None = None
    ) -> builtins.list[SlotClaim]:
        """Claimed slots, oldest first (see :meth:`ScheduleStore.slots`).

        Example:
            >>> # fired = await store.slots("lunch-tuesday")
        """
        where = "WHERE schedule_id = ? " if schedule_id is not None else ""
        params: tuple[Any, ...] = (schedule_id,) if schedule_id is not None else ()
        rows = await self._read(
            f"SELECT {SLOT_COLUMNS} FROM schedule_slots {where}ORDER BY slot, schedule_id LIMIT ?",
            (*params, -1 if limit is None else int(limit)),
        )
        return [slot_from_row(r) for r in rows]


def _settled(pending: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        pending.discard(task)
        if not task.cancelled():
            task.exception()  # its caller may have been cancelled: the outcome is seen here

    return done


def _filters(user_id: str | None, enabled: bool | None) -> tuple[str, tuple[Any, ...]]:
    clauses: builtins.list[str] = []
    params: builtins.list[Any] = []
    if user_id is not None:
        clauses.append("user_id = ?")
        params.append(user_id)
    if enabled is not None:
        clauses.append("enabled = ?")
        params.append(1 if enabled else 0)
    return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), tuple(params)
