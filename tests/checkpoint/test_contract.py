"""Spec: every shipped checkpointer passes the checkpointer contract (see ``contract.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowcore.checkpoint import Checkpointer, InMemoryCheckpointer
from flowcore.checkpoint.sqlite import SqliteCheckpointer

from .contract import CheckpointerContract


class TestInMemoryCheckpointer(CheckpointerContract):
    async def make_checkpointer(self, tmp_path: Path) -> Checkpointer:
        return InMemoryCheckpointer()

    async def make_checkpointer_with_lease_ttl(
        self, tmp_path: Path, lease_ttl: float
    ) -> Checkpointer:
        return InMemoryCheckpointer(lease_ttl=lease_ttl)


class TestSqliteCheckpointer(CheckpointerContract):
    async def make_checkpointer(self, tmp_path: Path) -> Checkpointer:
        return await SqliteCheckpointer.open(tmp_path / "checkpoints.db")

    async def make_checkpointer_with_lease_ttl(
        self, tmp_path: Path, lease_ttl: float
    ) -> Checkpointer:
        return await SqliteCheckpointer.open(tmp_path / "leases.db", lease_ttl=lease_ttl)


class TestPostgresCheckpointer(CheckpointerContract):
    """The same contract on a real Postgres (see ``tests/pg.py``), one schema per test."""

    url = ""

    @pytest.fixture(autouse=True)
    def _schema(self, pg_schema_url: str) -> None:
        self.url = pg_schema_url

    async def make_checkpointer(self, tmp_path: Path) -> Checkpointer:
        from flowcore.checkpoint.postgres import PostgresCheckpointer

        return await PostgresCheckpointer.open(self.url)

    async def make_checkpointer_with_lease_ttl(
        self, tmp_path: Path, lease_ttl: float
    ) -> Checkpointer:
        from flowcore.checkpoint.postgres import PostgresCheckpointer

        return await PostgresCheckpointer.open(self.url, lease_ttl=lease_ttl)
