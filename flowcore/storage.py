"""Choosing where flowcore keeps everything: one SQLite file (default) or Postgres.

``FLOWCORE_DATABASE_URL`` names the database: a file path or ``sqlite:///path``
(``sqlite:////abs/path`` for an absolute one, as SQLAlchemy reads it) for
SQLite, ``postgresql://user:password@host:port/db`` for Postgres (needs
``pip install 'flowcore[postgres]'``). :func:`open_backends` opens the four
durable stores on it (checkpoints, blocks, long-term memory, run history),
each the SQLite or Postgres twin that passes the same contract suite.

Example:
    >>> parse_database_url("sqlite:////var/flowcore.db")
    DatabaseTarget(kind='sqlite', location='/var/flowcore.db')
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from flowcore._postgres import is_postgres_url, redact_url
from flowcore.blocks.postgres_store import PostgresBlockStore
from flowcore.blocks.store import SqliteBlockStore
from flowcore.checkpoint.postgres import PostgresCheckpointer
from flowcore.checkpoint.serde import Serializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer
from flowcore.errors import InvalidInputError
from flowcore.history.postgres import PostgresRunHistory
from flowcore.history.sqlite import SqliteRunHistory
from flowcore.memory.postgres import PostgresStore
from flowcore.memory.sqlite import SqliteStore

__all__ = [
    "DATABASE_URL_VARIABLE",
    "Backends",
    "DatabaseTarget",
    "database_url_from_env",
    "open_backends",
    "parse_database_url",
]

DATABASE_URL_VARIABLE = "FLOWCORE_DATABASE_URL"
"""The environment variable that names flowcore's database."""


@dataclass(frozen=True, slots=True)
class DatabaseTarget:
    """Which backend, and where: a file path (SQLite) or a URL (Postgres).

    Example:
        >>> parse_database_url("postgresql://app:pw@db/flowcore").display
        'postgresql://app:***@db/flowcore'
    """

    kind: Literal["sqlite", "postgres"]
    location: str

    @property
    def display(self) -> str:
        """The location fit to print or log (a URL's password hidden)."""
        return redact_url(self.location) if self.kind == "postgres" else self.location


def parse_database_url(value: str | os.PathLike[str]) -> DatabaseTarget:
    """What a ``FLOWCORE_DATABASE_URL`` value (or a plain path) names.

    Raises :class:`~flowcore.errors.InvalidInputError` for another scheme
    (``mysql://`` ...) or an empty value, naming the forms accepted.

    Example:
        >>> parse_database_url("runs.db")
        DatabaseTarget(kind='sqlite', location='runs.db')
    """
    text = os.fspath(value).strip()
    if is_postgres_url(text):
        return DatabaseTarget("postgres", text)
    if text.startswith("sqlite:///"):
        # As SQLAlchemy reads it: sqlite:///rel.db is relative, sqlite:////abs.db absolute.
        return DatabaseTarget("sqlite", text.removeprefix("sqlite:///"))
    if not text or "://" in text:
        raise InvalidInputError(
            f"{DATABASE_URL_VARIABLE}={redact_url(text)!r} is not a database flowcore knows; "
            "give a file path or sqlite:////path/to/flowcore.db for SQLite, or "
            "postgresql://user:password@host:5432/dbname for Postgres"
        )
    return DatabaseTarget("sqlite", text)


def database_url_from_env(env: Mapping[str, str] | None = None) -> DatabaseTarget | None:
    """The target ``FLOWCORE_DATABASE_URL`` names, or None when it is unset or empty.

    Example:
        >>> database_url_from_env({"FLOWCORE_DATABASE_URL": "postgresql://db/x"}).kind
        'postgres'
    """
    value = (os.environ if env is None else env).get(DATABASE_URL_VARIABLE, "")
    return parse_database_url(value) if value.strip() else None


@dataclass(frozen=True, slots=True)
class Backends:
    """The four durable stores, open on one database.

    Example:
        >>> # async with open_backends("postgresql://app@db/flowcore") as b:
        >>> #     await b.history.list(limit=5)
    """

    target: DatabaseTarget
    checkpoints: SqliteCheckpointer | PostgresCheckpointer
    blocks: SqliteBlockStore | PostgresBlockStore
    memory: SqliteStore | PostgresStore
    history: SqliteRunHistory | PostgresRunHistory


@asynccontextmanager
async def open_backends(
    database: str | os.PathLike[str] | DatabaseTarget, *, serializer: Serializer | None = None
) -> AsyncIterator[Backends]:
    """Open every durable store on ``database``; close them all on exit.

    ``serializer`` (e.g. one that redacts secrets) is used by the
    checkpoints and the run history.

    Example:
        >>> # async with open_backends(os.environ.get("FLOWCORE_DATABASE_URL", "f.db")) as b:
        >>> #     runner = PipelineRunner(checkpointer=b.checkpoints, history=b.history, ...)
    """
    target = database if isinstance(database, DatabaseTarget) else parse_database_url(database)
    async with AsyncExitStack() as stack:
        checkpoints: SqliteCheckpointer | PostgresCheckpointer
        blocks: SqliteBlockStore | PostgresBlockStore
        memory: SqliteStore | PostgresStore
        history: SqliteRunHistory | PostgresRunHistory
        if target.kind == "postgres":
            url = target.location
            checkpoints = await stack.enter_async_context(
                PostgresCheckpointer(url, serializer=serializer)
            )
            blocks = await stack.enter_async_context(PostgresBlockStore(url))
            memory = await stack.enter_async_context(PostgresStore(url))
            history = await stack.enter_async_context(
                PostgresRunHistory(url, serializer=serializer)
            )
        else:
            path = Path(target.location)
            # The checkpointer is the strictest about foreign files, so it opens first.
            checkpoints = await stack.enter_async_context(
                SqliteCheckpointer(path, serializer=serializer)
            )
            blocks = await stack.enter_async_context(SqliteBlockStore(path))
            memory = await stack.enter_async_context(SqliteStore(path))
            history = await stack.enter_async_context(SqliteRunHistory(path, serializer=serializer))
        yield Backends(target, checkpoints, blocks, memory, history)
