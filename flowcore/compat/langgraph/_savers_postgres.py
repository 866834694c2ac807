"""``AsyncPostgresSaver``: LangGraph's async Postgres saver, on flowcore's Postgres store.

It keeps LangGraph threads in a :class:`~flowcore.checkpoint.postgres.PostgresCheckpointer`,
mapped as :mod:`flowcore.compat.langgraph._savers_core` describes, so one
database holds flowcore's threads and LangGraph's. It runs on the caller's
event loop, like :class:`~flowcore.compat.langgraph._savers_sqlite.AsyncSqliteSaver`,
whose sync-from-another-thread bridge it shares. Needs ``flowcore[postgres]``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Self, TypeVar

from flowcore._postgres import redact_url
from flowcore.checkpoint import DEFAULT_LEASE_TTL, Serializer
from flowcore.checkpoint.postgres import PostgresCheckpointer
from flowcore.compat.langgraph._savers_encoding import reusing
from flowcore.compat.langgraph._savers_loop import LoopSaver

__all__ = ["AsyncPostgresSaver"]

T = TypeVar("T")


class AsyncPostgresSaver(LoopSaver[PostgresCheckpointer]):
    """LangGraph's ``AsyncPostgresSaver``: threads in Postgres, for async code.

    Open it with ``async with AsyncPostgresSaver.from_conn_string(url) as saver``
    (or ``async with AsyncPostgresSaver(url)``); the tables are created on
    open (``setup()`` is accepted and does the same). The sync methods work
    from other threads while the saver's event loop runs, as LangGraph's do.

    Args:
        conn_string: ``postgresql://user:password@host:port/database``.
        serializer: How values become bytes; JSON with tagged types by default.
        lease_ttl: Seconds a thread's lease lasts without renewal (default 30).

    Example:
        >>> # async with AsyncPostgresSaver.from_conn_string(url) as saver:
        >>> #     app = builder.compile(checkpointer=saver)
    """

    _saver_name = "AsyncPostgresSaver"

    def __init__(
        self,
        conn_string: str,
        *,
        serializer: Serializer | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> None:
        self._url = conn_string
        self._init_loop(serializer, lease_ttl)

    def __repr__(self) -> str:
        return f"AsyncPostgresSaver({redact_url(self._url)!r})"

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, serializer: Serializer | None = None
    ) -> AsyncIterator[Self]:
        """Open a saver on a ``postgresql://`` URL; close it after.

        Example:
            >>> # async with AsyncPostgresSaver.from_conn_string(url) as saver: ...
        """
        async with cls(conn_string, serializer=serializer) as saver:
            yield saver

    async def setup(self) -> None:
        """Connect and create or migrate the tables; later calls do nothing.

        Example:
            >>> # await AsyncPostgresSaver(url).setup()
        """
        await self._ready()

    async def _open_store(self) -> PostgresCheckpointer:
        return await PostgresCheckpointer.open(
            self._url, serializer=reusing(self._serializer), lease_ttl=self._lease_ttl
        )

    async def aclose(self) -> None:
        """Close the pool; calling it again does nothing.

        Example:
            >>> # await saver.aclose()
        """
        self._closed = True
        store, self._store, self._core = self._store, None, None
        if store is not None:
            await store.aclose()
