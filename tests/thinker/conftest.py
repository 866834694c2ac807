"""Fixtures for the Thinker specs: a registry, an executor on a given model, a Thinker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from flowcore.blocks import BlockExecutor, SqliteBlockStore
from flowcore.checkpoint import SqliteCheckpointer
from flowcore.llm import ProviderRegistry
from flowcore.llm.protocol import LLMProvider
from flowcore.sandbox import PythonSandbox
from flowcore.thinker import Thinker

MakeThinker = Callable[[LLMProvider], Thinker]


def executor_for(model: LLMProvider) -> BlockExecutor:
    """An executor on ``model`` whose Python blocks run in the real sandbox jail."""
    return BlockExecutor(
        providers=ProviderRegistry.single(model), sandbox=PythonSandbox(), retry_wait=0.0
    )


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[SqliteBlockStore]:
    """A block registry on a SQLite file, holding the builtin blocks."""
    async with SqliteBlockStore(tmp_path / "thinker.db") as store:
        yield store


@pytest.fixture
async def checkpoints(tmp_path: Path) -> AsyncIterator[SqliteCheckpointer]:
    """A checkpointer on a SQLite file, so threads outlive one Thinker object."""
    async with SqliteCheckpointer(tmp_path / "threads.db") as saver:
        yield saver


@pytest.fixture
def make_thinker(registry: SqliteBlockStore, checkpoints: SqliteCheckpointer) -> MakeThinker:
    """A Thinker on the registry and checkpointer, answering with the given model."""

    def make(model: LLMProvider) -> Thinker:
        return Thinker(registry, executor_for(model), checkpointer=checkpoints)

    return make
