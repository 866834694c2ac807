"""Spec: the in-memory, SQLite and Postgres run histories all keep the RunHistory contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowcore.history import InMemoryRunHistory, RunHistory, SqliteRunHistory

from .contract import RunHistoryContract


class TestInMemoryRunHistory(RunHistoryContract):
    async def make_history(self, tmp_path: Path) -> RunHistory:
        return InMemoryRunHistory()


class TestSqliteRunHistory(RunHistoryContract):
    async def make_history(self, tmp_path: Path) -> RunHistory:
        history = SqliteRunHistory(tmp_path / "runs.db")
        await history.open()
        return history


class TestPostgresRunHistory(RunHistoryContract):
    """The same contract on a real Postgres (see ``tests/pg.py``), one schema per test."""

    url = ""

    @pytest.fixture(autouse=True)
    def _schema(self, pg_schema_url: str) -> None:
        self.url = pg_schema_url

    async def make_history(self, tmp_path: Path) -> RunHistory:
        from flowcore.history.postgres import PostgresRunHistory

        history = PostgresRunHistory(self.url)
        await history.open()
        return history
