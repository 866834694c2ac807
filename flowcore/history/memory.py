"""``InMemoryRunHistory``: run records kept in this process, for tests and short-lived apps.

Records are stored serialized, exactly as the SQLite history stores them, so
a value that could not be saved there fails here too, and what a caller gets
back is never the object it saved.
"""

from __future__ import annotations

import builtins
from types import TracebackType
from typing import Self

from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.history.protocol import RunNotFoundError, check_limit, check_lookup, check_record
from flowcore.history.records import RunRecord

__all__ = ["InMemoryRunHistory"]


class InMemoryRunHistory:
    """A :class:`~flowcore.history.protocol.RunHistory` held in a dict.

    Example:
        >>> import asyncio
        >>> from flowcore.history import RunRecord
        >>> history = InMemoryRunHistory()
        >>> rec = RunRecord("r1", "digest", 1, "ada", None, "completed", 1.0, 0.5, {}, (), (),
        ...                 (), 0, 0)
        >>> asyncio.run(history.save(rec))
        >>> asyncio.run(history.get("r1")).pipeline_id
        'digest'
    """

    def __init__(self, serializer: Serializer | None = None) -> None:
        self._serde = serializer or JsonSerializer()
        self._runs: dict[str, tuple[RunRecord, bytes]] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Nothing to open; here so both histories are used the same way.

        Example:
            >>> # await InMemoryRunHistory().open()
        """

    async def aclose(self) -> None:
        """Nothing to close; the records stay until the object is dropped.

        Example:
            >>> # await history.aclose()
        """

    def _load(self, data: bytes) -> RunRecord:
        return RunRecord.from_data(self._serde.loads(data))

    async def save(self, record: RunRecord) -> None:
        """Insert or replace the record of ``record.run_id`` (see :meth:`RunHistory.save`).

        Example:
            >>> # await history.save(record_from_result(result, ...))
        """
        check_record(record)
        # Serializing first: an unstorable value fails before anything changes.
        data = self._serde.dumps(record.to_data(), path=f"run {record.run_id!r}")
        # Index by the stored copy, so filters see exactly what get() returns.
        self._runs[record.run_id] = (self._load(data), data)

    async def get(self, run_id: str) -> RunRecord:
        """The record of ``run_id`` (see :meth:`RunHistory.get`).

        Example:
            >>> # record = await history.get("r1")
        """
        check_lookup("run_id", run_id)
        found = self._runs.get(run_id)
        if found is None:
            raise RunNotFoundError(run_id)
        return self._load(found[1])

    async def list(
        self,
        *,
        pipeline_id: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        thread_id: str | None = None,
        limit: int | None = 50,
    ) -> builtins.list[RunRecord]:
        """Records matching every filter given, newest first (see :meth:`RunHistory.list`).

        Example:
            >>> # failed = await history.list(pipeline_id="digest", status="failed")
        """
        cap = check_limit(limit)
        for name, value in (
            ("pipeline_id", pipeline_id),
            ("user_id", user_id),
            ("status", status),
            ("thread_id", thread_id),
        ):
            check_lookup(name, value, optional=True)
        wanted = {
            "pipeline_id": pipeline_id,
            "user_id": user_id,
            "status": status,
            "thread_id": thread_id,
        }
        matches = [
            (rec, data)
            for rec, data in self._runs.values()
            if all(value is None or getattr(rec, key) == value for key, value in wanted.items())
        ]
        matches.sort(key=lambda item: (item[0].started_at, item[0].run_id), reverse=True)
        if cap is not None:
            matches = matches[:cap]
        return [self._load(data) for _, data in matches]

    async def delete(self, run_id: str) -> bool:
        """Remove the record of ``run_id``; True if there was one.

        Example:
            >>> # await history.delete("r1")
        """
        check_lookup("run_id", run_id)
        return self._runs.pop(run_id, None) is not None
