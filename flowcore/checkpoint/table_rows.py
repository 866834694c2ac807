"""Checkpoint store rows, shared by the SQLite and Postgres checkpointers.

Both keep the same ``checkpoints`` and writes columns; a row is a dict of
named parameters, so each database's SQL binds it as it likes. The one
difference, how ``is_snapshot`` is stored (SQLite an int, Postgres a
boolean), is passed in. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from flowcore.checkpoint.protocol import Checkpoint, PendingWrite, StoreItem, WriteAt
from flowcore.errors import CheckpointError, CheckpointNotFoundError

__all__ = ["check_replacement", "item_row", "writes_from_rows"]


def item_row(item: StoreItem, blob: bytes, *, flag: Callable[[bool], Any] = int) -> dict[str, Any]:
    """The named parameters that store ``item`` (a checkpoint or a write) as ``blob``.

    Example:
        >>> item_row(WriteAt("t", "c1", PendingWrite("n", 1)), b"{}")["node"]
        'n'
    """
    if isinstance(item, WriteAt):
        return {
            "thread_id": item.thread_id,
            "checkpoint_id": item.checkpoint_id,
            "node": item.write.node,
            "payload": blob,
        }
    return {
        "thread_id": item.thread_id,
        "checkpoint_id": item.checkpoint_id,
        "parent_id": item.parent_id,
        "step": item.step,
        "created_at": item.created_at,
        "is_snapshot": flag(item.snapshot is not None),
        "record": blob,
    }


def writes_from_rows(
    rows: Iterable[Sequence[Any]], decode: Callable[[bytes, str], Any]
) -> tuple[PendingWrite, ...]:
    """Pending writes from ``(node, payload)`` rows, in their order.

    Example:
        >>> writes_from_rows([("n", b"1")], lambda data, what: int(data))
        (PendingWrite(node='n', payload=1),)
    """
    return tuple(
        PendingWrite(str(node), decode(payload, f"the write of node {node!r}"))
        for node, payload in rows
    )


def check_replacement(
    thread_id: str,
    checkpoint: Checkpoint,
    doomed: Collection[str],
    missing: Callable[[str, str], CheckpointNotFoundError],
) -> None:
    """Refuse a ``rewrite`` replacement of another thread, or of a checkpoint being deleted.

    ``missing(thread_id, checkpoint_id)`` makes the store's not-found error.

    Example:
        >>> # check_replacement("t", cp, {"c1"}, _not_replaceable)
    """
    if checkpoint.thread_id != thread_id:
        raise CheckpointError(
            f"a replacement for thread {thread_id!r} names thread {checkpoint.thread_id!r}; "
            "rewrite one thread at a time"
        )
    if checkpoint.checkpoint_id in doomed:
        raise missing(thread_id, checkpoint.checkpoint_id)
