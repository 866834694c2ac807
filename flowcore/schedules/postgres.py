"""``PostgresScheduleStore``: schedules and slot claims in Postgres (psycopg 3, pooled).

The twin of :class:`~flowcore.schedules.sqlite.SqliteScheduleStore`, with the
same tables and the same contract suite. A tick (:meth:`claim_due`) is one
transaction that locks the enabled schedules ``FOR UPDATE`` (always in id
order, so two ticks never deadlock): a schedule is decided by one scheduler at
a time, and the next one sees the cursor it moved. A tick only decides and
inserts claims (the runs happen after it commits), so the wait is short.
``SKIP LOCKED`` is not used on purpose: a scheduler that skipped a locked
schedule would decide it later from its own clock and could count a slot the
holder was about to fire as missed.
The UNIQUE ``(schedule_id, slot)`` key of ``schedule_slots`` is the last
word: a slot's claim row is inserted ``ON CONFLICT DO NOTHING``.

Install the extra first: ``pip install 'flowcore[postgres]'``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flowcore._postgres import redact_url
from flowcore._postgres_store import PostgresStoreBase
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

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresScheduleStore"]

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS schedule_defs (
            schedule_id TEXT PRIMARY KEY,
            user_id TEXT,
            cron TEXT NOT NULL,
            timezone TEXT NOT NULL,
            description TEXT NOT NULL,
            target TEXT NOT NULL,
            target_id TEXT NOT NULL,
            inputs TEXT NOT NULL,
            enabled BOOLEAN NOT NULL,
            missed TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            cursor DOUBLE PRECISION NOT NULL,
            due_at DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS schedule_slots (
            schedule_id TEXT NOT NULL,
            slot DOUBLE PRECISION NOT NULL,
            kind TEXT NOT NULL,
            missed INTEGER NOT NULL,
            claimed_by TEXT NOT NULL,
            claimed_at DOUBLE PRECISION NOT NULL,
            run_id TEXT,
            status TEXT,
            UNIQUE (schedule_id, slot)
        )""",
        "CREATE INDEX IF NOT EXISTS schedule_defs_user ON schedule_defs (user_id, schedule_id)",
        # A tick reads only what is due: enabled schedules whose next slot has come.
        "CREATE INDEX IF NOT EXISTS schedule_defs_due ON schedule_defs (enabled, due_at)",
    ),
)
_CLAIM = (
    f"INSERT INTO schedule_slots ({SLOT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, NULL, NULL) "
    "ON CONFLICT (schedule_id, slot) DO NOTHING RETURNING slot"
)
# Byte order on ids, as SQLite sorts, whatever the database's collation.
_BY_ID = 'ORDER BY schedule_id COLLATE "C"'


class PostgresScheduleStore(PostgresStoreBase):
    """A :class:`~flowcore.schedules.store.ScheduleStore` in a Postgres database.

    Args:
        url: ``postgresql://user:password@host:port/database``.
        max_connections: The pool's size.

    Example:
        >>> # async with PostgresScheduleStore(os.environ["FLOWCORE_DATABASE_URL"]) as store:
        >>> #     await store.list(user_id="ada")
    """

    _what = "PostgresScheduleStore"
    _kind = "schedules"
    _migrations = _MIGRATIONS
    _store_error = ScheduleStoreError
    _failure = "{doing} in schedules {where} failed: {detail}"
    _closed_error = ScheduleStoreError
    _not_open_error = ScheduleStoreError
    _not_open = "{store!r} is not open; use 'async with PostgresScheduleStore(url) as store:'"

    def __repr__(self) -> str:
        return f"PostgresScheduleStore({redact_url(self.url)!r}, {self._state})"

    async def open(self) -> None:
        """Connect, creating or migrating the schedule tables; a no-op if open.

        Example:
            >>> # store = PostgresScheduleStore(url); await store.open()
        """
        await self._open()

    async def _rows(self, doing: str, sql: str, params: Sequence[Any] = ()) -> builtins.list[Any]:
        pool = self._require_open()
        async with self._errors(doing), pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall()) if cur.description else []

    # ------------------------------------------------------------------ schedules

    async def add(self, schedule: Schedule) -> Schedule:
        """Store a new schedule (see :meth:`ScheduleStore.add`).

        Example:
            >>> # await store.add(new_schedule(plan, user_id="ada"))
        """
        row = (*schedule_to_row(check_schedule(schedule)), due_at(schedule, schedule.cursor))
        got = await self._rows(
            "add",
            f"INSERT INTO schedule_defs ({SCHEDULE_COLUMNS}, due_at) "
            f"VALUES ({', '.join(['%s'] * 13)}) "
            "ON CONFLICT (schedule_id) DO NOTHING RETURNING schedule_id",
            row,
        )
        if not got:
            raise ScheduleExistsError(schedule.schedule_id)
        return schedule

    async def get(self, schedule_id: str) -> Schedule:
        """The schedule (see :meth:`ScheduleStore.get`).

        Example:
            >>> # schedule = await store.get("lunch-tuesday")
        """
        rows = await self._rows(
            "get",
            f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs WHERE schedule_id = %s",
            (schedule_id,),
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
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        if user_id is not None:
            clauses.append("user_id = %s")
            params.append(user_id)
        if enabled is not None:
            clauses.append("enabled = %s")
            params.append(bool(enabled))
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        rows = await self._rows(
            "list", f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs {where}{_BY_ID}", params
        )
        return [schedule_from_row(r) for r in rows]

    async def remove(self, schedule_id: str) -> bool:
        """Delete the schedule and its claims (see :meth:`ScheduleStore.remove`).

        Example:
            >>> # await store.remove("lunch-tuesday")
        """
        pool = self._require_open()
        async with self._errors("remove"), pool.connection() as conn, conn.transaction():
            await conn.execute("DELETE FROM schedule_slots WHERE schedule_id = %s", (schedule_id,))
            cur = await conn.execute(
                "DELETE FROM schedule_defs WHERE schedule_id = %s RETURNING schedule_id",
                (schedule_id,),
            )
            return bool(await cur.fetchall())

    async def set_enabled(self, schedule_id: str, enabled: bool, *, now: float) -> Schedule:
        """Enable or disable (see :meth:`ScheduleStore.set_enabled`).

        Example:
            >>> # await store.set_enabled("lunch-tuesday", False, now=time.time())
        """
        pool = self._require_open()
        async with self._errors("enable"), pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs WHERE schedule_id = %s FOR UPDATE",
                (schedule_id,),
            )
            row = await cur.fetchone()
            if row is None:
                raise ScheduleNotFoundError(schedule_id)
            found = schedule_from_row(row)
            if not enabled:
                await conn.execute(
                    "UPDATE schedule_defs SET enabled = FALSE WHERE schedule_id = %s",
                    (schedule_id,),
                )
            elif not found.enabled:
                # The time it was off is not "missed": start from now.
                cursor = max(found.cursor, float(now))
                await conn.execute(
                    "UPDATE schedule_defs SET enabled = TRUE, cursor = %s, due_at = %s "
                    "WHERE schedule_id = %s",
                    (cursor, due_at(found, cursor), schedule_id),
                )
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
        got = await self._rows(
            "claim",
            _CLAIM,
            (schedule_id, float(slot), kind, int(missed), claimed_by, float(claimed_at)),
        )
        return bool(got)

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
        pool = self._require_open()
        async with self._errors("tick"), pool.connection() as conn, conn.transaction():
            return await self._tick(conn, now, grace, claimed_by)

    async def _tick(
        self, conn: AsyncConnection[Any], now: datetime, grace: float, claimed_by: str
    ) -> builtins.list[DueSlot]:
        cur = await conn.execute(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedule_defs WHERE enabled AND due_at <= %s "
            f"{_BY_ID} FOR UPDATE",
            (now.timestamp(),),
        )
        won: builtins.list[DueSlot] = []
        for row in await cur.fetchall():
            schedule = schedule_from_row(row)
            plan = plan_tick(schedule, now, grace=grace, claimed_by=claimed_by)
            claim = plan.claim
            if claim is not None:
                got = await conn.execute(
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
                if await got.fetchall():
                    won.append(DueSlot(schedule, claim))
            await conn.execute(
                "UPDATE schedule_defs SET cursor = %s, due_at = %s WHERE schedule_id = %s",
                (plan.cursor, plan.due_at, schedule.schedule_id),
            )
        return won

    async def finish_slot(self, schedule_id: str, slot: float, *, run_id: str, status: str) -> None:
        """Record the run of a claimed slot (see :meth:`ScheduleStore.finish_slot`).

        Example:
            >>> # await store.finish_slot("d", slot, run_id=result.run_id, status=result.status)
        """
        await self._rows(
            "finish",
            "UPDATE schedule_slots SET run_id = %s, status = %s WHERE schedule_id = %s "
            "AND slot = %s",
            (run_id, status, schedule_id, float(slot)),
        )

    async def get_slot(self, schedule_id: str, slot: float) -> SlotClaim | None:
        """The claim of one slot, or None if no scheduler claimed it.

        Example:
            >>> # claim = await store.get_slot("lunch", 1711845000.0)
        """
        rows = await self._rows(
            "get slot",
            f"SELECT {SLOT_COLUMNS} FROM schedule_slots WHERE schedule_id = %s AND slot = %s",
            (schedule_id, float(slot)),
        )
        return slot_from_row(rows[0]) if rows else None

    async def slots(
        self, schedule_id: str | None = None, *, limit: int | None = None
    ) -> builtins.list[SlotClaim]:
        """Claimed slots, oldest first (see :meth:`ScheduleStore.slots`).

        Example:
            >>> # fired = await store.slots("lunch-tuesday")
        """
        where = "WHERE schedule_id = %s " if schedule_id is not None else ""
        params: builtins.list[Any] = [schedule_id] if schedule_id is not None else []
        params.append(limit)
        rows = await self._rows(
            "slots",
            f"SELECT {SLOT_COLUMNS} FROM schedule_slots {where}"
            'ORDER BY slot, schedule_id COLLATE "C" LIMIT %s',
            params,
        )
        return [slot_from_row(r) for r in rows]
