"""The lifecycle every Postgres store shares: open a pool, migrate, wrap errors, close.

Each store (checkpoints, run history, memory, blocks) subclasses
:class:`PostgresStoreBase` and declares, as class attributes, what differs:
its name, its schema kind and migrations, its error type and how its errors
read. The base opens the pool, migrates the store's tables under the
advisory lock (:func:`flowcore._postgres.migrate`), runs the store's own
setup hook on the same connection, and closes the pool on failure or
:meth:`~PostgresStoreBase.aclose`.

psycopg stays an optional extra: it is imported only when a store opens or
an error is translated.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from flowcore._async_context import AsyncOpenClose
from flowcore._postgres import migrate, open_pool, redact_url, scrub

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresStoreBase"]


class PostgresStoreBase(AsyncOpenClose):
    """Pool, schema migration, error wrapping and close for one Postgres store.

    Subclasses set the class attributes and call :meth:`_open`.

    Example:
        >>> class Notes(PostgresStoreBase):
        ...     _what = "Notes"
        ...     _kind = "notes"
        ...     _migrations = (("CREATE TABLE IF NOT EXISTS notes (id TEXT)",),)
        >>> Notes("postgresql://app:pw@db/x").max_connections
        5
    """

    #: The store's class name, as errors and the pool name show it.
    _what: ClassVar[str]
    #: The key of this store's row in ``flowcore_schema_versions``.
    _kind: ClassVar[str]
    #: One tuple of SQL statements per schema version.
    _migrations: ClassVar[tuple[tuple[str, ...], ...]]
    #: Raised when the database fails (connect, migrate, any query).
    _store_error: ClassVar[type[Exception]] = Exception
    #: How a failed database call reads; ``{doing}``, ``{where}`` and ``{detail}`` are filled in.
    _failure: ClassVar[str] = "{doing} in {where} failed: {detail}"
    #: What the migration step is called in errors.
    _migrate_doing: ClassVar[str] = "migrate"
    #: Raised on use after close; None lets a closed store be opened again.
    _closed_error: ClassVar[type[Exception] | None] = None
    #: Raised on use before open, with ``_not_open`` (``{store!r}`` is filled in) as message.
    _not_open_error: ClassVar[type[Exception]] = Exception
    _not_open: ClassVar[str] = "{store!r} is not open"

    def __init__(self, url: str, *, max_connections: int = 5) -> None:
        self.url = url
        self.max_connections = max_connections
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._state: Literal["new", "open", "closed"] = "new"

    async def _enter(self) -> None:
        await self._open()

    async def _open(self) -> None:
        """Open the pool and migrate; a no-op if open."""
        if self._pool is not None:
            return
        if self._state == "closed" and self._closed_error is not None:
            raise self._closed_error(f"{self!r} has been closed; create a new one to reopen")
        pool = await open_pool(
            self.url, what=self._what, error=self._store_error, max_size=self.max_connections
        )
        try:
            async with self._errors(self._migrate_doing), pool.connection() as conn:
                await migrate(
                    conn,
                    store=self._kind,
                    steps=self._migrations,
                    error=self._store_error,
                    where=redact_url(self.url),
                )
                await self._after_migrate(conn)
        except BaseException:
            await pool.close()
            raise
        self._pool, self._state = pool, "open"

    async def _after_migrate(self, conn: AsyncConnection[Any]) -> None:
        """The store's own setup on the migrating connection (seeding, say); none by default."""

    async def aclose(self) -> None:
        """Close the pool (waiting for work in flight); calling it again does nothing.

        Example:
            >>> # await store.aclose()
        """
        pool, self._pool, self._state = self._pool, None, "closed"
        if pool is not None:
            await pool.close()

    def _require_open(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        """The pool, or the store's error saying it is closed or not yet open."""
        if self._pool is None:
            if self._state == "closed" and self._closed_error is not None:
                raise self._closed_error(f"{self!r} has been closed")
            raise self._not_open_error(self._not_open.format(store=self))
        return self._pool

    @contextlib.asynccontextmanager
    async def _errors(self, doing: str) -> AsyncIterator[None]:
        """Turn a psycopg error into the store's error, with the password scrubbed."""
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            raise self._store_error(
                self._failure.format(
                    doing=doing, where=redact_url(self.url), detail=scrub(str(exc), self.url)
                )
            ) from None
