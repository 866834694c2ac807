"""Fixtures shared across the test suite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from flowcore.blocks import SqliteBlockStore


@pytest.fixture
async def block_store(tmp_path: Path) -> AsyncIterator[SqliteBlockStore]:
    """A block registry on a real SQLite file, seeded with the builtin blocks."""
    async with SqliteBlockStore(tmp_path / "blocks.db") as store:
        yield store
