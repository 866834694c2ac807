"""``async with`` for flowcore's stores and savers: enter opens, exit closes.

Every store (SQLite or Postgres) and both async LangGraph savers are used as
``async with Store(...) as store:``; the protocol is the same for all of
them, only what "open" means differs, so each provides ``_enter`` and
``aclose`` and inherits the rest.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AsyncOpenClose"]


class AsyncOpenClose:
    """``async with`` support: ``_enter()`` on entry, ``aclose()`` on exit, errors or not.

    Example:
        >>> import asyncio
        >>> class Door(AsyncOpenClose):
        ...     async def _enter(self) -> None:
        ...         print("open")
        ...     async def aclose(self) -> None:
        ...         print("closed")
        >>> async def demo() -> None:
        ...     async with Door():
        ...         pass
        >>> asyncio.run(demo())
        open
        closed
    """

    async def _enter(self) -> None:
        """Open the resource; subclasses say how."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the resource; subclasses say how."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self._enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
