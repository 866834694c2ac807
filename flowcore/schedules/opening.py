"""Opening the schedule store the database names: SQLite by default, Postgres by URL."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from flowcore.schedules.postgres import PostgresScheduleStore
from flowcore.schedules.sqlite import SqliteScheduleStore
from flowcore.storage import DatabaseTarget, parse_database_url

__all__ = ["open_schedule_store"]


@asynccontextmanager
async def open_schedule_store(
    database: str | os.PathLike[str] | DatabaseTarget,
) -> AsyncIterator[SqliteScheduleStore | PostgresScheduleStore]:
    """The schedule store on ``database`` (a file path, ``sqlite:///``, or ``postgresql://``).

    Example:
        >>> # async with open_schedule_store(os.environ["FLOWCORE_DATABASE_URL"]) as store:
        >>> #     print(await store.list())
    """
    target = database if isinstance(database, DatabaseTarget) else parse_database_url(database)
    store: SqliteScheduleStore | PostgresScheduleStore = (
        PostgresScheduleStore(target.location)
        if target.kind == "postgres"
        else SqliteScheduleStore(target.location)
    )
    async with store:
        yield store
