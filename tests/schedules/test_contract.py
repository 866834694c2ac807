"""Spec: the SQLite and Postgres schedule stores both keep the ScheduleStore contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowcore.schedules import SqliteScheduleStore

from .contract import ScheduleStoreContract


class TestSqliteScheduleStore(ScheduleStoreContract):
    async def make_store(self, tmp_path: Path) -> Any:
        store = SqliteScheduleStore(tmp_path / "flowcore.db")
        await store.open()
        return store

    async def make_second_store(self, tmp_path: Path) -> Any:
        return await self.make_store(tmp_path)


class TestPostgresScheduleStore(ScheduleStoreContract):
    """The same contract on a real Postgres (see ``tests/pg.py``), one schema per test."""

    url = ""

    @pytest.fixture(autouse=True)
    def _schema(self, pg_schema_url: str) -> None:
        self.url = pg_schema_url

    async def make_store(self, tmp_path: Path) -> Any:
        from flowcore.schedules import PostgresScheduleStore

        store = PostgresScheduleStore(self.url)
        await store.open()
        return store

    async def make_second_store(self, tmp_path: Path) -> Any:
        return await self.make_store(tmp_path)
