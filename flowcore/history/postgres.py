"""``PostgresRunHistory``: every run recorded in Postgres, on psycopg 3 with a pool.

The twin of :class:`~flowcore.history.sqlite.SqliteRunHistory`: the same
tables (``run_history_runs``, ``run_history_nodes``), each save one
transaction (the run row and all its node rows, or nothing), each read one
``REPEATABLE READ`` transaction, so a record is never seen half-replaced.
Values are serialized before any connection is taken, so an unstorable value
fails without touching the database. ``pipeline_version`` is kept as JSON
text, so ``2`` stays an int and ``"2"`` a str.

Install the extra first: ``pip install 'flowcore[postgres]'``.
"""

from __future__ import annotations

import builtins
import contextlib
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from flowcore._postgres import redact_url
from flowcore._postgres_store import PostgresStoreBase
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.history.protocol import (
    RunHistoryError,
    RunHistoryStoreError,
    RunNotFoundError,
    check_limit,
    check_lookup,
    check_record,
)
from flowcore.history.records import RunRecord
from flowcore.history.rows import (
    NODE_COLUMNS,
    RUN_COLUMNS,
    check_filters,
    group_records,
    record_from_rows,
    record_to_rows,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresRunHistory"]

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS run_history_runs (
            run_id TEXT PRIMARY KEY,
            pipeline_id TEXT NOT NULL,
            pipeline_version TEXT NOT NULL,
            user_id TEXT,
            thread_id TEXT,
            status TEXT NOT NULL,
            started_at DOUBLE PRECISION NOT NULL,
            duration DOUBLE PRECISION NOT NULL,
            input_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            inputs BYTEA NOT NULL,
            errors BYTEA NOT NULL,
            interrupts BYTEA NOT NULL,
            source BYTEA,
            final_state BYTEA
        )""",
        """CREATE TABLE IF NOT EXISTS run_history_nodes (
            run_id TEXT NOT NULL REFERENCES run_history_runs (run_id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            node TEXT NOT NULL,
            status TEXT NOT NULL,
            pass_index INTEGER NOT NULL,
            started_at DOUBLE PRECISION NOT NULL,
            duration DOUBLE PRECISION NOT NULL,
            attempts INTEGER NOT NULL,
            input_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            outputs BYTEA,
            error TEXT,
            skip_reason TEXT,
            PRIMARY KEY (run_id, position)
        )""",
        "CREATE INDEX IF NOT EXISTS run_history_runs_newest "
        'ON run_history_runs (started_at, run_id COLLATE "C")',
        "CREATE INDEX IF NOT EXISTS run_history_runs_pipeline "
        "ON run_history_runs (pipeline_id, started_at)",
        "CREATE INDEX IF NOT EXISTS run_history_runs_user "
        "ON run_history_runs (user_id, started_at)",
        "CREATE INDEX IF NOT EXISTS run_history_runs_thread "
        "ON run_history_runs (thread_id, started_at)",
    ),
)

# Byte order on run_id, as SQLite sorts, whatever the database's collation.
_NEWEST_FIRST = 'ORDER BY started_at DESC, run_id COLLATE "C" DESC'


class PostgresRunHistory(PostgresStoreBase):
    """A :class:`~flowcore.history.protocol.RunHistory` in a Postgres database.

    Open it with ``async with`` or :meth:`open`; close it with :meth:`aclose`.
    Errors name the URL with its password hidden.

    Args:
        url: ``postgresql://user:password@host:port/database``.
        serializer: How values become bytes; :class:`JsonSerializer` by default.
        max_connections: The pool's size.

    Example:
        >>> # async with PostgresRunHistory(os.environ["FLOWCORE_DATABASE_URL"]) as history:
        >>> #     runs = await history.list(user_id="ada")
    """

    _what = "PostgresRunHistory"
    _kind = "run_history"
    _migrations = _MIGRATIONS
    _store_error = RunHistoryStoreError
    _failure = "{doing} in run history {where} failed: {detail}"
    _closed_error = RunHistoryError
    _not_open_error = RunHistoryError
    _not_open = (
        "{store!r} is not open; use 'async with PostgresRunHistory(url) as history:' "
        "or 'await history.open()'"
    )

    def __init__(
        self, url: str, *, serializer: Serializer | None = None, max_connections: int = 5
    ) -> None:
        super().__init__(url, max_connections=max_connections)
        self._serde = serializer or JsonSerializer()

    def __repr__(self) -> str:
        return f"PostgresRunHistory({redact_url(self.url)!r}, {self._state})"

    async def open(self) -> None:
        """Connect, creating or migrating the history tables; a no-op if open.

        Example:
            >>> # history = PostgresRunHistory(url); await history.open()
        """
        await self._open()

    # ------------------------------------------------------------------ plumbing

    @contextlib.asynccontextmanager
    async def _tx(self, doing: str) -> AsyncIterator[AsyncConnection[Any]]:
        pool = self._require_open()
        async with self._errors(doing), pool.connection() as conn, conn.transaction():
            if doing == "read":  # every query of the read sees the same commit
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield conn

    def _dump(self, value: Any, path: str) -> bytes:
        return self._serde.dumps(value, path=path)

    def _load(self, data: bytes | None, what: str) -> Any:
        if data is None:
            return None
        try:
            return self._serde.loads(bytes(data))
        except Exception as exc:  # the stored bytes are bad
            raise RunHistoryStoreError(f"cannot decode {what}: {exc}") from exc

    def _rows(self, record: RunRecord) -> tuple[tuple[Any, ...], builtins.list[tuple[Any, ...]]]:
        return record_to_rows(record, self._dump, version=json.dumps)

    def _record(self, row: Sequence[Any], nodes: Iterable[Sequence[Any]]) -> RunRecord:
        return record_from_rows(row, nodes, self._load, version=json.loads)

    # ------------------------------------------------------------------ the protocol

    async def save(self, record: RunRecord) -> None:
        """Insert or replace the record of ``record.run_id`` in one transaction.

        Example:
            >>> # await history.save(record_from_result(result, ...))
        """
        check_record(record)
        run_row, node_rows = self._rows(record)
        async with self._tx("save") as conn:
            await conn.execute("DELETE FROM run_history_runs WHERE run_id = %s", (record.run_id,))
            await conn.execute(
                f"INSERT INTO run_history_runs ({RUN_COLUMNS}) VALUES ({', '.join(['%s'] * 15)})",
                run_row,
            )
            if node_rows:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        f"INSERT INTO run_history_nodes ({NODE_COLUMNS}) "
                        f"VALUES ({', '.join(['%s'] * 13)})",
                        node_rows,
                    )

    async def get(self, run_id: str) -> RunRecord:
        """The record of ``run_id`` (see :meth:`RunHistory.get`).

        Example:
            >>> # record = await history.get("r1")
        """
        check_lookup("run_id", run_id)
        async with self._tx("read") as conn:
            cur = await conn.execute(
                f"SELECT {RUN_COLUMNS} FROM run_history_runs WHERE run_id = %s", (run_id,)
            )
            runs = await cur.fetchall()
            cur = await conn.execute(
                f"SELECT {NODE_COLUMNS} FROM run_history_nodes WHERE run_id = %s ORDER BY position",
                (run_id,),
            )
            nodes = await cur.fetchall()
        if not runs:
            raise RunNotFoundError(run_id)
        return self._record(runs[0], nodes)

    async def list(
        self,
        *,
        pipeline_id: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        thread_id: str | None = None,
        limit: int | None = 50,
    ) -> builtins.list[RunRecord]:
        """Records matching every filter given, newest first (see :meth:`RunHistory.list`).

        Example:
            >>> # failed = await history.list(pipeline_id="digest", status="failed", limit=10)
        """
        cap = check_limit(limit)
        given = check_filters(pipeline_id, user_id, status, thread_id)
        clauses = [f"{column} = %s" for column in given]
        params: builtins.list[Any] = list(given.values())
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        params.append(cap)
        async with self._tx("read") as conn:
            cur = await conn.execute(
                f"SELECT {RUN_COLUMNS} FROM run_history_runs {where}{_NEWEST_FIRST} LIMIT %s",
                params,
            )
            runs = await cur.fetchall()
            ids = [str(row[0]) for row in runs]
            cur = await conn.execute(
                f"SELECT {NODE_COLUMNS} FROM run_history_nodes WHERE run_id = ANY(%s) "
                "ORDER BY run_id, position",
                (ids,),
            )
            nodes = await cur.fetchall()
        return group_records(runs, nodes, self._record)

    async def delete(self, run_id: str) -> bool:
        """Remove the record of ``run_id`` and its node rows; True if there was one.

        Example:
            >>> # await history.delete("r1")
        """
        check_lookup("run_id", run_id)
        async with self._tx("delete") as conn:
            cur = await conn.execute("DELETE FROM run_history_runs WHERE run_id = %s", (run_id,))
            return cur.rowcount > 0
