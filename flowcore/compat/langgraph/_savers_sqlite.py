"""``AsyncSqliteSaver``: LangGraph's async SQLite saver, on flowcore's SQLite store.

It keeps LangGraph threads in a :class:`~flowcore.checkpoint.SqliteCheckpointer`
file (WAL, one queued writer, versioned schema), mapped as
:mod:`flowcore.compat.langgraph._savers_core` describes, so one database
file holds flowcore's threads and LangGraph's. It runs on the caller's event
loop; ``SqliteSaver`` (in ``_savers_sync``) runs one on a private loop for
sync code.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal, Self, TypeVar

import aiosqlite

from flowcore.checkpoint import DEFAULT_LEASE_TTL, Serializer, SqliteCheckpointer
from flowcore.compat.langgraph._savers_encoding import reusing
from flowcore.compat.langgraph._savers_loop import LoopSaver, drain, next_or_end

__all__ = ["AsyncSqliteSaver", "Target", "drain", "next_or_end", "sqlite3_file"]

T = TypeVar("T")
Target = str | os.PathLike[str] | sqlite3.Connection | aiosqlite.Connection
"""Where a saver keeps its threads: a file path, or a connection to the file."""

_MEMORY = ("", ":memory:")


def sqlite3_file(conn: sqlite3.Connection) -> str:
    """The file a ``sqlite3`` connection has open ("" for an in-memory database)."""
    rows = conn.execute("PRAGMA database_list").fetchall()
    return next((str(row[2] or "") for row in rows if row[1] == "main"), "")


async def _aiosqlite_file(conn: aiosqlite.Connection) -> str:
    rows = await conn.execute_fetchall("PRAGMA database_list")
    return next((str(row[2] or "") for row in rows if row[1] == "main"), "")


class AsyncSqliteSaver(LoopSaver[SqliteCheckpointer]):
    """LangGraph's ``AsyncSqliteSaver``: threads in an SQLite file, for async code.

    Open it with ``async with AsyncSqliteSaver.from_conn_string(path) as saver``
    (or ``async with AsyncSqliteSaver(path)``); it opens a
    :class:`~flowcore.checkpoint.SqliteCheckpointer` on the file, so the
    file may also hold flowcore's own threads, blocks and run history. A
    file of LangGraph's own ``SqliteSaver`` is refused (its tables differ).
    ``":memory:"`` gives a database in a temporary file, removed on close.
    Given an ``aiosqlite`` connection, the saver uses only its file name and
    opens its own connections.

    The sync methods (``get_tuple``, ``put`` ...) work from other threads
    while the saver's event loop runs, as LangGraph's do; from the loop's own
    thread they raise :class:`asyncio.InvalidStateError`.

    Args:
        conn: The database file, ``":memory:"``, or a connection to the file.
        serializer: How values become bytes; JSON with tagged types by default,
            which encodes each chat message once however many records hold it.
        synchronous: ``"NORMAL"`` (default) or ``"FULL"`` (survives power loss).
        lease_ttl: Seconds a thread's lease lasts without renewal (default
            30): how long a run whose process died keeps its thread.

    Example:
        >>> # async with AsyncSqliteSaver.from_conn_string("threads.db") as saver:
        >>> #     app = builder.compile(checkpointer=saver)
        >>> #     await app.ainvoke(inputs, {"configurable": {"thread_id": "1"}})
    """

    _saver_name = "AsyncSqliteSaver"
    _sync_hint = ", or use SqliteSaver"

    def __init__(
        self,
        conn: Target,
        *,
        serializer: Serializer | None = None,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> None:
        self._target = conn
        self._synchronous: Literal["NORMAL", "FULL"] = synchronous
        self._tmp: str | None = None
        self._init_loop(serializer, lease_ttl)

    def __repr__(self) -> str:
        return f"AsyncSqliteSaver({self._store!r})"

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, serializer: Serializer | None = None
    ) -> AsyncIterator[Self]:
        """Open a saver on ``conn_string`` (a file path or ``":memory:"``); close it after.

        Example:
            >>> # async with AsyncSqliteSaver.from_conn_string("threads.db") as saver: ...
        """
        async with cls(conn_string, serializer=serializer) as saver:
            yield saver

    async def setup(self) -> None:
        """Open the database (created and migrated as needed); later calls do nothing.

        The async methods call it on first use, so a saver made without
        ``async with`` still works; close it with :meth:`aclose`.

        Example:
            >>> # await AsyncSqliteSaver("threads.db").setup()
        """
        await self._ready()

    async def _open_store(self) -> SqliteCheckpointer:
        return await SqliteCheckpointer.open(
            await self._path(),
            # Each message encoded once, though a write and checkpoints hold it.
            serializer=reusing(self._serializer),
            synchronous=self._synchronous,
            lease_ttl=self._lease_ttl,
        )

    async def _path(self) -> str:
        target = self._target
        if isinstance(target, sqlite3.Connection):
            path = sqlite3_file(target)
        elif isinstance(target, aiosqlite.Connection):
            path = await _aiosqlite_file(target)
        else:
            path = os.fspath(target)
        if path in _MEMORY:
            self._tmp = await asyncio.to_thread(tempfile.mkdtemp, prefix="flowcore-langgraph-")
            path = str(Path(self._tmp) / "checkpoints.db")
        return path

    async def aclose(self) -> None:
        """Finish queued writes and close the database; calling it again does nothing.

        Example:
            >>> # await saver.aclose()
        """
        self._closed = True
        store, self._store, self._core = self._store, None, None
        try:
            if store is not None:
                await store.aclose()
        finally:
            tmp, self._tmp = self._tmp, None
            if tmp is not None:
                await asyncio.to_thread(shutil.rmtree, tmp, True)
