"""Where spending and a thread's budgets are kept between runs: in memory or in SQLite.

A :class:`BudgetStore` keeps, per ``(scope, key)``, what was spent, and per
thread the budgets its last run was given, so a paused thread resumed
without budgets keeps them, and one resumed with new budgets (a raised
limit) keeps what it had already spent.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, runtime_checkable

import aiosqlite

from flowcore._sqlite import MIN_BUSY_TIMEOUT, close_quietly, connect
from flowcore.budgets.limits import Budgets, Scope, Spend
from flowcore.errors import FlowcoreError

__all__ = ["BudgetStore", "BudgetStoreError", "InMemoryBudgetStore", "SqliteBudgetStore"]


class BudgetStoreError(FlowcoreError, OSError):
    """The budget store's file could not be opened, read or written.

    Example:
        >>> BudgetStoreError("cannot open b.db: disk I/O error").code
        'budget-store'
    """

    code = "budget-store"


@runtime_checkable
class BudgetStore(Protocol):
    """Spending per ``(scope, key)`` and budgets per thread.

    Example:
        >>> isinstance(InMemoryBudgetStore(), BudgetStore)
        True
    """

    async def spent(self, scope: Scope, key: str) -> Spend:
        """What ``key`` has spent in ``scope`` so far (zero when nothing is recorded)."""
        ...

    async def add(self, keys: Sequence[tuple[Scope, str]], spend: Spend) -> None:
        """Add ``spend`` to each of ``keys``, all or none."""
        ...

    async def thread_budgets(self, thread_id: str) -> Budgets | None:
        """The budgets the thread's latest run was given, None when it was given none."""
        ...

    async def set_thread_budgets(self, thread_id: str, budgets: Budgets) -> None:
        """Remember ``budgets`` for the thread's later runs."""
        ...


class InMemoryBudgetStore:
    """A :class:`BudgetStore` in a dict: spending lasts as long as the object.

    Example:
        >>> import asyncio
        >>> store = InMemoryBudgetStore()
        >>> asyncio.run(store.add([("user", "ada")], Spend(3, 2)))
        >>> asyncio.run(store.spent("user", "ada")).total_tokens
        5
    """

    def __init__(self) -> None:
        self._spent: dict[tuple[str, str], Spend] = {}
        self._budgets: dict[str, Budgets] = {}

    async def spent(self, scope: Scope, key: str) -> Spend:
        """See :meth:`BudgetStore.spent`."""
        return self._spent.get((scope, key), Spend())

    async def add(self, keys: Sequence[tuple[Scope, str]], spend: Spend) -> None:
        """See :meth:`BudgetStore.add`."""
        for key in keys:
            self._spent[key] = self._spent.get(key, Spend()) + spend

    async def thread_budgets(self, thread_id: str) -> Budgets | None:
        """See :meth:`BudgetStore.thread_budgets`."""
        return self._budgets.get(thread_id)

    async def set_thread_budgets(self, thread_id: str, budgets: Budgets) -> None:
        """See :meth:`BudgetStore.set_thread_budgets`."""
        self._budgets[thread_id] = budgets


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS flowcore_budget_spend ("
    " scope TEXT NOT NULL, key TEXT NOT NULL,"
    " input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,"
    " PRIMARY KEY (scope, key))",
    "CREATE TABLE IF NOT EXISTS flowcore_thread_budgets ("
    " thread_id TEXT PRIMARY KEY, budgets TEXT NOT NULL)",
)


class SqliteBudgetStore:
    """A :class:`BudgetStore` in a SQLite file (it may share the file of the other stores).

    Use it as ``async with SqliteBudgetStore("app.db") as store``.

    Example:
        >>> # async with SqliteBudgetStore("app.db") as budgets:
        >>> #     guard = BudgetGuard(budgets)
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = MIN_BUSY_TIMEOUT) -> None:
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._conn: aiosqlite.Connection | None = None

    async def __aenter__(self) -> SqliteBudgetStore:
        try:
            self._conn = await connect(self.path, busy_timeout=self._busy_timeout)
            for statement in _SCHEMA:
                await self._conn.execute_fetchall(statement)
        except sqlite3.Error as exc:
            await close_quietly(self._conn)
            self._conn = None
            raise BudgetStoreError(f"cannot open budget store {self.path}: {exc}") from None
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await close_quietly(self._conn)
        self._conn = None

    def _open(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise BudgetStoreError(
                f"budget store {self.path} is not open; use 'async with SqliteBudgetStore(...)'"
            )
        return self._conn

    async def spent(self, scope: Scope, key: str) -> Spend:
        """See :meth:`BudgetStore.spent`."""
        rows = await self._read(
            "SELECT input_tokens, output_tokens, cost_usd FROM flowcore_budget_spend"
            " WHERE scope = ? AND key = ?",
            (scope, key),
        )
        if not rows:
            return Spend()
        row = rows[0]
        return Spend(int(row[0]), int(row[1]), float(row[2]))

    async def add(self, keys: Sequence[tuple[Scope, str]], spend: Spend) -> None:
        """See :meth:`BudgetStore.add`."""
        conn = self._open()
        try:
            await conn.execute_fetchall("BEGIN IMMEDIATE")
            try:
                for scope, key in keys:
                    await conn.execute_fetchall(
                        "INSERT INTO flowcore_budget_spend VALUES (?, ?, ?, ?, ?)"
                        " ON CONFLICT (scope, key) DO UPDATE SET"
                        " input_tokens = input_tokens + excluded.input_tokens,"
                        " output_tokens = output_tokens + excluded.output_tokens,"
                        " cost_usd = cost_usd + excluded.cost_usd",
                        (scope, key, spend.input_tokens, spend.output_tokens, spend.cost_usd),
                    )
            except BaseException:
                await conn.execute_fetchall("ROLLBACK")
                raise
            await conn.execute_fetchall("COMMIT")
        except sqlite3.Error as exc:
            raise BudgetStoreError(f"cannot record spending in {self.path}: {exc}") from None

    async def thread_budgets(self, thread_id: str) -> Budgets | None:
        """See :meth:`BudgetStore.thread_budgets`."""
        rows = await self._read(
            "SELECT budgets FROM flowcore_thread_budgets WHERE thread_id = ?", (thread_id,)
        )
        return Budgets.model_validate(json.loads(rows[0][0])) if rows else None

    async def set_thread_budgets(self, thread_id: str, budgets: Budgets) -> None:
        """See :meth:`BudgetStore.set_thread_budgets`."""
        try:
            await self._open().execute_fetchall(
                "INSERT OR REPLACE INTO flowcore_thread_budgets VALUES (?, ?)",
                (thread_id, budgets.model_dump_json()),
            )
        except sqlite3.Error as exc:
            raise BudgetStoreError(f"cannot save budgets in {self.path}: {exc}") from None

    async def _read(self, sql: str, args: tuple[object, ...]) -> list[sqlite3.Row]:
        try:
            return list(await self._open().execute_fetchall(sql, args))
        except sqlite3.Error as exc:
            raise BudgetStoreError(f"cannot read budget store {self.path}: {exc}") from None
