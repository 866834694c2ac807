"""Fixtures shared by the compat saver specs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from flowcore.compat.langgraph import AsyncSqliteSaver, InMemorySaver, SqliteSaver

Saver = InMemorySaver | SqliteSaver | AsyncSqliteSaver


@pytest.fixture(params=["memory", "sqlite", "async-sqlite"])
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Saver]:
    """Each LangGraph-shaped saver, fresh; the SQLite ones on a real file."""
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as sync_saver:
            yield sync_saver
    else:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as async_saver:
            yield async_saver
