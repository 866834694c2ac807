"""Execution history: every run recorded, with its nodes, tokens and errors, and queryable.

Build a :class:`RunRecord` from a finished run with :func:`record_from_result`
and ``save`` it to a :class:`RunHistory`: :class:`SqliteRunHistory` (one WAL
SQLite file, which may be shared with other flowcore stores) or
:class:`InMemoryRunHistory`. ``list`` finds runs by pipeline, user, status and
thread, newest first.

Example:
    >>> # async with SqliteRunHistory("runs.db") as history:
    >>> #     started = time.time()
    >>> #     result = await graph.run(inputs, config={"user_id": "ada"})
    >>> #     await history.save(record_from_result(
    >>> #         result, pipeline_id="digest", pipeline_version=3, user_id="ada",
    >>> #         started_at=started, inputs=inputs, source=pipeline.model_dump(mode="json")))
    >>> #     failed = await history.list(pipeline_id="digest", status="failed")
"""

from flowcore.history.memory import InMemoryRunHistory
from flowcore.history.protocol import (
    RunHistory,
    RunHistoryError,
    RunHistoryStoreError,
    RunNotFoundError,
)
from flowcore.history.records import (
    NodeRecord,
    RunRecord,
    error_text,
    record_from_result,
    storable_record,
)
from flowcore.history.sqlite import HISTORY_SCHEMA_VERSION, SqliteRunHistory

__all__ = [
    "HISTORY_SCHEMA_VERSION",
    "InMemoryRunHistory",
    "NodeRecord",
    "RunHistory",
    "RunHistoryError",
    "RunHistoryStoreError",
    "RunNotFoundError",
    "RunRecord",
    "SqliteRunHistory",
    "error_text",
    "record_from_result",
    "storable_record",
]
