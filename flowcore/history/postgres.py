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
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from flowcore._postgres import migrate, open_pool, redact_url, scrub
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.history.protocol import (
    RunHistoryError,
    RunHistoryStoreError,
    RunNotFoundError,
    check_limit,
    check_lookup,
    check_record,
)
from flowcore.history.records import NodeRecord, RunRecord

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

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

_RUN_COLUMNS = (
    "run_id, pipeline_id, pipeline_version, user_id, thread_id, status, started_at, duration, "
    "input_tokens, output_tokens, inputs, errors, interrupts, source, final_state"
)
_NODE_COLUMNS = (
    "run_id, position, node, status, pass_index, started_at, duration, attempts, "
    "input_tokens, output_tokens, outputs, error, skip_reason"
)
# Byte order on run_id, as SQLite sorts, whatever the database's collation.
_NEWEST_FIRST = 'ORDER BY started_at DESC, run_id COLLATE "C" DESC'
_FILTERS = ("pipeline_id", "user_id", "status", "thread_id")


class PostgresRunHistory:
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

    def __init__(
        self, url: str, *, serializer: Serializer | None = None, max_connections: int = 5
    ) -> None:
        self.url = url
        self.max_connections = max_connections
        self._serde = serializer or JsonSerializer()
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._state: Literal["new", "open", "closed"] = "new"

    def __repr__(self) -> str:
        return f"PostgresRunHistory({redact_url(self.url)!r}, {self._state})"

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Connect, creating or migrating the history tables; a no-op if open.

        Example:
            >>> # history = PostgresRunHistory(url); await history.open()
        """
        if self._state == "open":
            return
        if self._state == "closed":
            raise RunHistoryError(f"{self!r} has been closed; create a new one to reopen")
        pool = await open_pool(
            self.url,
            what="PostgresRunHistory",
            error=RunHistoryStoreError,
            max_size=self.max_connections,
        )
        try:
            async with self._errors("migrate"), pool.connection() as conn:
                await migrate(
                    conn,
                    store="run_history",
                    steps=_MIGRATIONS,
                    error=RunHistoryStoreError,
                    where=redact_url(self.url),
                )
        except BaseException:
            await pool.close()
            raise
        self._pool, self._state = pool, "open"

    async def aclose(self) -> None:
        """Close the pool (waiting for saves in flight); a no-op if closed.

        Example:
            >>> # await history.aclose()
        """
        pool, self._pool, self._state = self._pool, None, "closed"
        if pool is not None:
            await pool.close()

    # ------------------------------------------------------------------ plumbing

    @contextlib.asynccontextmanager
    async def _errors(self, doing: str) -> AsyncIterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            raise RunHistoryStoreError(
                f"{doing} in run history {redact_url(self.url)} failed: {scrub(str(exc), self.url)}"
            ) from None

    @contextlib.asynccontextmanager
    async def _tx(self, doing: str) -> AsyncIterator[AsyncConnection[Any]]:
        if self._pool is None:
            if self._state == "closed":
                raise RunHistoryError(f"{self!r} has been closed")
            raise RunHistoryError(
                f"{self!r} is not open; use 'async with PostgresRunHistory(url) as history:' "
                "or 'await history.open()'"
            )
        async with self._errors(doing), self._pool.connection() as conn, conn.transaction():
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
        where = f"run {record.run_id!r}"
        run_row = (
            record.run_id,
            record.pipeline_id,
            json.dumps(record.pipeline_version),
            record.user_id,
            record.thread_id,
            record.status,
            record.started_at,
            record.duration,
            record.input_tokens,
            record.output_tokens,
            self._dump(dict(record.inputs), f"{where}.inputs"),
            self._dump(list(record.errors), f"{where}.errors"),
            self._dump(list(record.interrupts), f"{where}.interrupts"),
            None if record.source is None else self._dump(dict(record.source), f"{where}.source"),
            None
            if record.final_state is None
            else self._dump(dict(record.final_state), f"{where}.final_state"),
        )
        node_rows = [
            (
                record.run_id,
                position,
                n.node,
                n.status,
                n.pass_index,
                n.started_at,
                n.duration,
                n.attempts,
                n.input_tokens,
                n.output_tokens,
                None
                if n.outputs is None
                else self._dump(dict(n.outputs), f"{where}.nodes[{position}].outputs"),
                n.error,
                n.skip_reason,
            )
            for position, n in enumerate(record.nodes)
        ]
        return run_row, node_rows

    def _record(self, row: Sequence[Any], nodes: Iterable[Sequence[Any]]) -> RunRecord:
        run_id = str(row[0])
        where = f"run {run_id!r}"
        return RunRecord(
            run_id=run_id,
            pipeline_id=row[1],
            pipeline_version=json.loads(row[2]),
            user_id=row[3],
            thread_id=row[4],
            status=row[5],
            started_at=row[6],
            duration=row[7],
            input_tokens=row[8],
            output_tokens=row[9],
            inputs=self._load(row[10], f"the inputs of {where}") or {},
            errors=tuple(self._load(row[11], f"the errors of {where}") or ()),
            interrupts=tuple(self._load(row[12], f"the interrupts of {where}") or ()),
            source=self._load(row[13], f"the source of {where}"),
            final_state=self._load(row[14], f"the final state of {where}"),
            nodes=tuple(
                NodeRecord(
                    node=n[2],
                    status=n[3],
                    pass_index=n[4],
                    started_at=n[5],
                    duration=n[6],
                    attempts=n[7],
                    input_tokens=n[8],
                    output_tokens=n[9],
                    outputs=self._load(n[10], f"the outputs of node {n[2]!r} in {where}"),
                    error=n[11],
                    skip_reason=n[12],
                )
                for n in nodes
            ),
        )

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
                f"INSERT INTO run_history_runs ({_RUN_COLUMNS}) VALUES ({', '.join(['%s'] * 15)})",
                run_row,
            )
            if node_rows:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        f"INSERT INTO run_history_nodes ({_NODE_COLUMNS}) "
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
                f"SELECT {_RUN_COLUMNS} FROM run_history_runs WHERE run_id = %s", (run_id,)
            )
            runs = await cur.fetchall()
            cur = await conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM run_history_nodes WHERE run_id = %s "
                "ORDER BY position",
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
        given = dict(zip(_FILTERS, (pipeline_id, user_id, status, thread_id), strict=True))
        for name, value in given.items():
            check_lookup(name, value, optional=True)
        clauses = [f"{column} = %s" for column, value in given.items() if value is not None]
        params: builtins.list[Any] = [value for value in given.values() if value is not None]
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        params.append(cap)
        async with self._tx("read") as conn:
            cur = await conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM run_history_runs {where}{_NEWEST_FIRST} LIMIT %s",
                params,
            )
            runs = await cur.fetchall()
            ids = [str(row[0]) for row in runs]
            cur = await conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM run_history_nodes WHERE run_id = ANY(%s) "
                "ORDER BY run_id, position",
                (ids,),
            )
            nodes = await cur.fetchall()
        by_run: dict[str, builtins.list[Any]] = {}
        for n in nodes:
            by_run.setdefault(str(n[0]), []).append(n)
        return [self._record(row, by_run.get(str(row[0]), ())) for row in runs]

    async def delete(self, run_id: str) -> bool:
        """Remove the record of ``run_id`` and its node rows; True if there was one.

        Example:
            >>> # await history.delete("r1")
        """
        check_lookup("run_id", run_id)
        async with self._tx("delete") as conn:
            cur = await conn.execute("DELETE FROM run_history_runs WHERE run_id = %s", (run_id,))
            return cur.rowcount > 0
