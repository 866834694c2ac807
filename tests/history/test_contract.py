"""Spec: the in-memory and the SQLite run history both keep the RunHistory contract."""

from __future__ import annotations

from pathlib import Path

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
