"""Checkpoints as plain data: the one layout every store serializes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowcore.checkpoint.protocol import Checkpoint, StoreItem, WriteAt

__all__ = ["checkpoint_from_record", "checkpoint_to_record", "item_to_record"]


def checkpoint_to_record(cp: Checkpoint) -> dict[str, object]:
    """A checkpoint as plain data, ready for a serializer."""
    return {
        "thread_id": cp.thread_id,
        "checkpoint_id": cp.checkpoint_id,
        "parent_id": cp.parent_id,
        "step": cp.step,
        "created_at": cp.created_at,
        "writes": [[[node, _plain(update)] for node, update in group] for group in cp.writes],
        "snapshot": None if cp.snapshot is None else _plain(cp.snapshot),
        "cursor": None if cp.cursor is None else _plain(cp.cursor),
        "metadata": _plain(cp.metadata),
    }


def item_to_record(item: StoreItem) -> tuple[dict[str, Any], str]:
    """What a store encodes of a checkpoint or a node's write, and the path errors name it by.

    Example:
        >>> from flowcore.checkpoint import PendingWrite
        >>> item_to_record(WriteAt("t", "c1", PendingWrite("search", {"hits": 3})))
        ({'hits': 3}, "write of node 'search'")
    """
    if isinstance(item, WriteAt):
        write = item.write
        return dict(write.payload), f"write of node {write.node!r}"
    return checkpoint_to_record(item), "checkpoint"


def _plain(mapping: Mapping[str, Any]) -> dict[str, Any]:
    # The serializer only reads the record, so a dict needs no copy; other mappings
    # (read-only views, custom types) become dicts.
    return mapping if type(mapping) is dict else dict(mapping)


def checkpoint_from_record(rec: dict[str, object]) -> Checkpoint:
    """The inverse of :func:`checkpoint_to_record`."""
    writes = rec["writes"]
    assert isinstance(writes, list)
    return Checkpoint(
        thread_id=str(rec["thread_id"]),
        checkpoint_id=str(rec["checkpoint_id"]),
        parent_id=None if rec["parent_id"] is None else str(rec["parent_id"]),
        step=int(rec["step"]),  # type: ignore[call-overload]
        created_at=float(rec["created_at"]),  # type: ignore[arg-type]
        writes=tuple(tuple((str(n), u) for n, u in group) for group in writes),
        snapshot=rec["snapshot"],  # type: ignore[arg-type]
        cursor=rec["cursor"],  # type: ignore[arg-type]
        metadata=rec["metadata"],  # type: ignore[arg-type]
    )
