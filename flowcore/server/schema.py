"""The server's tables, written once for both databases, and the protocol both twins serve.

The stores (:class:`~flowcore.server.keys.ApiKeys`,
:class:`~flowcore.server.run_store.RunStore`,
:class:`~flowcore.server.pipeline_store.PipelineStore`,
:class:`~flowcore.server.clarify_store.ClarifyStore`) speak one portable SQL
dialect: ``?`` placeholders, ``INSERT ... ON CONFLICT (...) DO UPDATE``
(SQLite 3.24+ and Postgres both read it), no vendor functions. They run
unchanged on :class:`~flowcore.server.db.ServerDatabase` (SQLite) and on
:class:`~flowcore.server.postgres_db.PostgresServerDatabase`, which differ
only in how a statement reaches the database. Only column types differ
between the two, so the tables are one template filled per database.

Example:
    >>> server_schema("postgres")[0].split("(")[0].strip()
    'CREATE TABLE IF NOT EXISTS flowcore_api_keys'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Protocol

__all__ = ["LATER_COLUMNS", "FetchOne", "ServerDb", "server_schema"]

# {key}: a text primary key, ordered by bytes on both (SQLite's default; "C" on Postgres).
_TEMPLATE = (
    """CREATE TABLE IF NOT EXISTS flowcore_api_keys (
        key_id {key} PRIMARY KEY,
        user_id TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_at {real} NOT NULL,
        revoked_at {real})""",
    """CREATE TABLE IF NOT EXISTS flowcore_server_runs (
        run_id {key} PRIMARY KEY,
        user_id TEXT NOT NULL,
        thread_id TEXT,
        target TEXT NOT NULL,
        target_name TEXT NOT NULL,
        input TEXT,
        status TEXT NOT NULL,
        started_at {real} NOT NULL,
        ended_at {real},
        input_tokens {int} NOT NULL DEFAULT 0,
        output_tokens {int} NOT NULL DEFAULT 0,
        error TEXT,
        interrupts TEXT NOT NULL DEFAULT '[]',
        output TEXT,
        continues TEXT,
        continued_by TEXT,
        resume TEXT,
        server_id TEXT,
        cancel_requested {real})""",
    "CREATE INDEX IF NOT EXISTS flowcore_server_runs_user ON flowcore_server_runs "
    "(user_id, started_at)",
    "CREATE INDEX IF NOT EXISTS flowcore_server_runs_thread ON flowcore_server_runs (thread_id)",
    """CREATE TABLE IF NOT EXISTS flowcore_server_events (
        run_id {key} NOT NULL,
        seq {int} NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE IF NOT EXISTS flowcore_server_pipelines (
        pipeline_id {key} PRIMARY KEY,
        definition TEXT NOT NULL,
        saved_at {real} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS flowcore_server_clarify (
        thread_id {key} PRIMARY KEY,
        user_id TEXT NOT NULL,
        messages TEXT NOT NULL,
        ready {int} NOT NULL DEFAULT 0,
        question TEXT,
        updated_at {real} NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS flowcore_server_clarify_age ON flowcore_server_clarify "
    "(updated_at)",
    """CREATE TABLE IF NOT EXISTS flowcore_server_instances (
        server_id {key} PRIMARY KEY,
        beat_at {real} NOT NULL)""",
)

_TYPES = {
    "sqlite": {"key": "TEXT", "real": "REAL", "int": "INTEGER"},
    # REAL is 4 bytes on Postgres: a time.time() in it would lose its seconds.
    "postgres": {"key": 'TEXT COLLATE "C"', "real": "DOUBLE PRECISION", "int": "BIGINT"},
}

LATER_COLUMNS = (
    ("flowcore_server_runs", "server_id", "TEXT"),
    ("flowcore_server_runs", "cancel_requested", "REAL"),
)
"""Columns added after a table was first released: an older SQLite file gets them on open."""


def server_schema(dialect: Literal["sqlite", "postgres"]) -> tuple[str, ...]:
    """The statements that create the server's tables on ``dialect``.

    Example:
        >>> "DOUBLE PRECISION" in server_schema("postgres")[0]
        True
    """
    return tuple(statement.format(**_TYPES[dialect]) for statement in _TEMPLATE)


class ServerDb(Protocol):
    """What the server's stores need of a database; both twins provide it.

    Statements use ``?`` placeholders. ``execute`` returns the rows changed;
    ``executemany`` runs in one transaction (all rows or none).

    Example:
        >>> # async def count(db: ServerDb) -> int:
        >>> #     return len(await db.fetchall("SELECT run_id FROM flowcore_server_runs"))
    """

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> int: ...

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]: ...

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None: ...

    async def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None: ...

    async def aclose(self) -> None: ...


class FetchOne:
    """``fetchone`` from ``fetchall``, for both twins.

    Example:
        >>> # class MyDb(FetchOne): async def fetchall(self, sql, params=()): ...
    """

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query; each twin says how."""
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of one query, or None.

        Example:
            >>> # row = await db.fetchone("SELECT 1")
        """
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None
