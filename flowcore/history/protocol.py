"""The run-history port: where finished runs are recorded and how they are found again.

Error tree of this package (all :class:`~flowcore.errors.FlowcoreError`)::

    RunHistoryError                      a history operation failed
    ├── RunNotFoundError (LookupError)   no run with that id
    └── RunHistoryStoreError             the storage is unusable: corrupt, foreign or too new

A value that cannot be stored raises :class:`~flowcore.errors.SerializationError`
(a ``TypeError``) naming where it sits, and nothing is stored.
"""

from __future__ import annotations

import builtins
from typing import Protocol, runtime_checkable

from flowcore._shown import shown
from flowcore.errors import FlowcoreError, InvalidInputError, SerializationError
from flowcore.history.records import RunRecord

__all__ = [
    "RunHistory",
    "RunHistoryError",
    "RunHistoryStoreError",
    "RunNotFoundError",
    "check_limit",
    "check_lookup",
    "check_record",
]


class RunHistoryError(FlowcoreError):
    """Recording or reading the run history failed; what was stored is left as it was.

    Example:
        >>> RunHistoryError("history.db has been closed").code
        'run-history'
    """

    code = "run-history"


class RunNotFoundError(RunHistoryError, LookupError):
    """No run with this id is in the history.

    Example:
        >>> err = RunNotFoundError("r-42")
        >>> (err.run_id, err.code)
        ('r-42', 'run-not-found')
    """

    code = "run-not-found"

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(
            f"no run {shown(run_id)} in the run history; list recorded runs with "
            "'await history.list()' (filter by pipeline_id=, user_id=, status=, thread_id=) "
            "and use one of their run_id values"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.run_id,))


class RunHistoryStoreError(RunHistoryError):
    """The storage behind a run history is unusable: not a database, corrupt, or too new.

    Example:
        >>> RunHistoryStoreError("runs.db is not an SQLite database").code
        'run-history-store'
    """

    code = "run-history-store"


def check_limit(limit: int | None) -> int | None:
    """Validate a ``list`` limit: a positive int, or None for no limit.

    Example:
        >>> check_limit(10)
        10
    """
    if limit is None:
        return None
    # SQLite's integers end at 2**63 - 1; no history holds more runs than that anyway.
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit < 2**63:
        raise InvalidInputError(
            f"limit must be a positive int below 2**63 (or None for every run), got {shown(limit)}"
        )
    return limit


def check_lookup(name: str, value: object, *, optional: bool = False) -> None:
    """Refuse a run id or filter no store can look up: not a string, or not valid Unicode.

    Example:
        >>> check_lookup("run_id", "r1")
        >>> try:
        ...     check_lookup("thread_id", 7, optional=True)
        ... except InvalidInputError as exc:
        ...     str(exc)
        'thread_id must be a string or None, got 7'
    """
    if value is None and optional:
        return
    if not isinstance(value, str):
        kind = "a string or None" if optional else "a string"
        raise InvalidInputError(f"{name} must be {kind}, got {shown(value)}")
    if not _is_text(value):
        raise InvalidInputError(
            f"{name} {shown(value)} holds a lone surrogate, which is not valid Unicode text, so "
            "no run can have it; check where the id came from"
        )


def check_record(record: RunRecord) -> RunRecord:
    """Refuse what is not a storable :class:`RunRecord` (another type, an empty run id).

    Example:
        >>> try:
        ...     check_record("r1")
        ... except InvalidInputError as exc:
        ...     str(exc).split(";")[0]
        'a run history stores RunRecord values, got str'
    """
    if not isinstance(record, RunRecord):
        raise InvalidInputError(
            f"a run history stores RunRecord values, got {type(record).__name__}; "
            "build one with record_from_result()"
        )
    if not isinstance(record.run_id, str) or not record.run_id:
        raise InvalidInputError(
            f"a RunRecord needs a non-empty run_id string, got {shown(record.run_id)}"
        )
    # The filterable fields must compare the same in every store (SQLite would
    # turn a number into text), so their types are checked, not coerced.
    where = f"RunRecord {shown(record.run_id)}"
    for name in ("pipeline_id", "status"):
        if not isinstance(getattr(record, name), str):
            raise InvalidInputError(
                f"{where}: {name} must be a str, got {shown(getattr(record, name))}"
            )
    for name in ("user_id", "thread_id"):
        value = getattr(record, name)
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"{where}: {name} must be a str or None, got {shown(value)}")
    version = record.pipeline_version
    if isinstance(version, bool) or not isinstance(version, int | str):
        raise InvalidInputError(
            f"{where}: pipeline_version must be an int or a str, got {shown(version)}"
        )
    # Text columns are written as UTF-8, which a lone surrogate cannot be.
    texts = [
        (name, getattr(record, name))
        for name in ("run_id", "pipeline_id", "pipeline_version", "user_id", "thread_id", "status")
    ]
    texts += [(f"errors[{i}]", e) for i, e in enumerate(record.errors)]
    for i, node in enumerate(record.nodes):
        texts += [
            (f"nodes[{i}].{name}", getattr(node, name))
            for name in ("node", "status", "error", "skip_reason")
        ]
    for name, text in texts:
        if isinstance(text, str) and not _is_text(text):
            raise SerializationError(
                f"cannot store {where}.{name}: it holds a lone surrogate, which is not valid "
                "Unicode text; storable_record(record) replaces such characters",
                path=f"{where}.{name}",
            )
    return record


def _is_text(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


@runtime_checkable
class RunHistory(Protocol):
    """A store of :class:`~flowcore.history.records.RunRecord`, one per run id.

    Every implementation stores values through flowcore's JSON serializer, so
    what :meth:`get` returns is an equal copy, never the object that was saved,
    and a value one store cannot keep is refused by all of them.

    Example:
        >>> from flowcore.history import InMemoryRunHistory
        >>> isinstance(InMemoryRunHistory(), RunHistory)
        True
    """

    async def save(self, record: RunRecord) -> None:
        """Insert ``record``, or replace the record with the same ``run_id``, atomically.

        Either the whole record (run and nodes) is stored or nothing changes;
        an existing record being replaced stays intact if the save fails.
        """
        ...

    async def get(self, run_id: str) -> RunRecord:
        """The record of ``run_id``; :class:`RunNotFoundError` if there is none."""
        ...

    async def list(
        self,
        *,
        pipeline_id: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        thread_id: str | None = None,
        limit: int | None = 50,
    ) -> builtins.list[RunRecord]:
        """Records matching every filter given, newest first.

        Newest means largest ``started_at``; runs that started at the same
        moment are ordered by ``run_id``, descending. ``limit`` caps the
        count (None: no cap).
        """
        ...

    async def delete(self, run_id: str) -> bool:
        """Remove the record of ``run_id``; True if there was one."""
        ...

    async def aclose(self) -> None:
        """Release what the history holds (connections); saves already started finish first."""
        ...
