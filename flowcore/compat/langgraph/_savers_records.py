"""The records LangGraph's saver operations store in flowcore's checkpoint stores.

Pure helpers for :mod:`~flowcore.compat.langgraph._savers_core` (which describes the
layout) and its batched twin: flowcore thread keys for a ``(thread_id, checkpoint_ns)``,
config and metadata handling as LangGraph's savers do it, and building the record of one
checkpoint or one task's pending writes.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import quote, unquote

from flowcore.checkpoint import (
    Checkpoint,
    PendingWrite,
)
from flowcore.compat.langgraph._savers import WRITES_IDX_MAP, RunnableConfig
from flowcore.compat.langgraph._savers_layout import (
    Shadow,
    lay_out,
    write_groups,
)
from flowcore.errors import (
    InvalidInputError,
)

__all__ = [
    "EXCLUDED_METADATA_KEYS",
    "ListingScope",
    "listing_scope",
    "merged_metadata",
    "writes_target",
]

_PREFIX = "langgraph/"
_PAGE = 100
#: The ``configurable`` and run bookkeeping keys a checkpoint's metadata leaves out.
EXCLUDED_METADATA_KEYS = frozenset(
    {
        "thread_id",
        "checkpoint_id",
        "checkpoint_ns",
        "checkpoint_map",
        "langgraph_step",
        "langgraph_node",
        "langgraph_triggers",
        "langgraph_path",
        "langgraph_checkpoint_ns",
    }
)


# ---------------------------------------------------------------------- config helpers


def _configurable(config: Mapping[str, Any] | None, what: str) -> Mapping[str, Any]:
    conf = (config or {}).get("configurable")
    # An exact dict (as always in practice) skips the slower ABC check.
    if (type(conf) is not dict and not isinstance(conf, Mapping)) or conf.get("thread_id") is None:
        raise InvalidInputError(
            f"{what} needs config['configurable']['thread_id'] to know which thread to use; "
            'pass {"configurable": {"thread_id": "..."}}'
        )
    return conf


# Every put and put_writes names its thread; a run names the same one each superstep.
@functools.lru_cache(maxsize=1024)
def _thread_key(thread_id: str, ns: str) -> str:
    return f"{_thread_prefix(thread_id)}{quote(ns, safe='')}"


def _thread_prefix(thread_id: str) -> str:
    return f"{_PREFIX}{quote(thread_id, safe='')}/"


def _split_key(key: str) -> tuple[str, str]:
    thread, _, ns = key[len(_PREFIX) :].partition("/")
    return unquote(thread), unquote(ns)


class ListingScope(NamedTuple):
    """What a ``list`` call covers: one thread key, or every key under ``prefix``."""

    prefix: str
    key: str | None
    wanted: Any
    before_id: Any


def listing_scope(config: RunnableConfig | None, before: RunnableConfig | None) -> ListingScope:
    """The threads, checkpoint id and ``before`` bound a ``list`` call names.

    No config: every LangGraph thread; a config without ``checkpoint_ns``:
    every namespace of its thread; with one: that namespace only.

    Example:
        >>> listing_scope({"configurable": {"thread_id": "1"}}, None).prefix
        'langgraph/1/'
    """
    before_id = None
    if before is not None:
        before_id = (before.get("configurable") or {}).get("checkpoint_id") or None
    if config is None:
        return ListingScope(_PREFIX, None, None, before_id)
    conf = _configurable(config, "list")
    thread_id = str(conf["thread_id"])
    ns = conf.get("checkpoint_ns")
    wanted = conf.get("checkpoint_id") or None
    if ns is None:
        return ListingScope(_thread_prefix(thread_id), None, wanted, before_id)
    return ListingScope("", _thread_key(thread_id, str(ns)), wanted, before_id)


def writes_target(config: RunnableConfig) -> tuple[str, str, str]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of the checkpoint a put_writes names.

    Example:
        >>> writes_target({"configurable": {"thread_id": "1", "checkpoint_id": "c1"}})
        ('1', '', 'c1')
    """
    conf = _configurable(config, "put_writes")
    cid = conf.get("checkpoint_id")
    if not cid:
        raise InvalidInputError(
            "put_writes needs config['configurable']['checkpoint_id'], the checkpoint "
            "the writes belong to; pass the config put() returned"
        )
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns") or ""), str(cid)


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _clean(value: Any) -> Any:
    return value.replace("\u0000", "") if isinstance(value, str) else value


def merged_metadata(config: Mapping[str, Any], metadata: Mapping[str, Any]) -> dict[str, Any]:
    """LangGraph's stored metadata: ``metadata`` plus the config's plain user keys.

    Keys of ``config["metadata"]`` and ``config["configurable"]`` that are
    not already there, not LangGraph's own and not ``__private``, are added
    when their value is a str, int, float or bool. NUL characters are dropped
    from strings.

    Example:
        >>> merged_metadata({"configurable": {"thread_id": "1", "user": "ann"}}, {"step": 0})
        {'step': 0, 'user': 'ann'}
    """
    merged = dict(metadata)
    for key, value in merged.items():
        if isinstance(value, str) and "\u0000" in value:
            merged[key] = _clean(value)
    extra, conf = config.get("metadata"), config.get("configurable")
    if extra is None and type(conf) is dict and conf.keys() <= EXCLUDED_METADATA_KEYS:
        return merged  # a run's own puts: nothing to add (what the loop below finds too)
    for source in (extra, conf):
        # None (no "metadata", as usual) and a dict of LangGraph's own keys only (the config
        # a put returned) add nothing; exact dicts skip the slower ABC check.
        if source is None:
            continue
        if type(source) is dict:
            if source.keys() <= EXCLUDED_METADATA_KEYS:
                continue
        elif not isinstance(source, Mapping):
            continue
        for key, value in source.items():
            if key in EXCLUDED_METADATA_KEYS or key in merged or key.startswith("__"):
                continue
            if isinstance(value, str | int | float | bool):
                merged[key] = _clean(value)
    return merged


def _created_at(checkpoint: Mapping[str, Any]) -> float:
    ts = checkpoint.get("ts", _MISSING)
    if ts is _MISSING:
        return time.time()
    try:
        return dt.datetime.fromisoformat(ts if type(ts) is str else str(ts)).timestamp()
    except ValueError:
        return time.time()


_MISSING: Any = object()


def _round_trips(versions: Mapping[Any, Any]) -> bool:
    """Whether these versions read back from any store exactly as they are."""
    # One plain loop: no generator or set per put.
    for channel, version in versions.items():
        if type(channel) is not str:
            return False
        kind = type(version)
        if kind is not int and kind is not str:
            return False
    return True


def _record(
    key: str,
    config: RunnableConfig,
    checkpoint: Mapping[str, Any],
    metadata: Mapping[str, Any],
    new_versions: Mapping[str, Any],
    parent_id: str | None,
    stored_parent: str | None,
    parent_versions: Mapping[str, Any],
    parent_blobs: Mapping[str, str],
    shadows: Mapping[str, Shadow],
) -> tuple[Checkpoint, dict[str, str], dict[str, Shadow]]:
    """The flowcore record of a LangGraph checkpoint, its ``blob_at``, and its list shadows.

    ``shadows`` are what this core knows of the lists stored for the parent;
    one counts only while its holder is where the parent's ``blob_at`` points.
    """
    cid = str(checkpoint["id"])
    whole, tail, blob_at, after = lay_out(
        cid, checkpoint, new_versions, parent_versions, parent_blobs, shadows
    )
    step = metadata.get("step")
    record = Checkpoint(
        key,
        cid,
        stored_parent,
        step if isinstance(step, int) and not isinstance(step, bool) else 0,
        _created_at(checkpoint),
        write_groups(whole, tail),
        cursor={"checkpoint": _without_values(checkpoint), "parent": parent_id, "blob_at": blob_at},
        metadata=merged_metadata(config, metadata),
    )
    return record, blob_at, after


def _without_values(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The LangGraph checkpoint without ``channel_values``, as the cursor keeps it."""
    rest = dict(checkpoint)
    rest.pop("channel_values", None)
    return rest


def _merged_writes(
    entries: dict[int, dict[str, Any]], writes: Sequence[tuple[str, Any]], task_path: str
) -> bool:
    """Add a task's new ``writes`` to its stored ``entries``; whether any changed."""
    changed = False
    for position, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, position)
        if idx >= 0 and idx in entries:
            continue  # a regular write is saved once: the first one stays
        entries[idx] = {"idx": idx, "channel": channel, "path": task_path, "value": value}
        changed = True
    return changed


def _first_writes(writes: Sequence[tuple[str, Any]], task_path: str) -> list[dict[str, Any]]:
    """The entries of a task with no stored writes: what ``_merged_writes`` makes, in order."""
    entries: list[dict[str, Any]] = []
    for position, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, position)
        if idx < 0:
            # A special write sorts first and replaces an earlier one: merge as usual.
            merged: dict[int, dict[str, Any]] = {}
            _merged_writes(merged, writes, task_path)
            return [merged[i] for i in sorted(merged)]
        # Regular writes: idx is the position, so they come in order, each once.
        entries.append({"idx": idx, "channel": channel, "path": task_path, "value": value})
    return entries


def _stored_entries(saved: Iterable[PendingWrite], task_id: str) -> dict[int, dict[str, Any]]:
    entries: dict[int, dict[str, Any]] = {}
    for w in saved:
        if w.node == task_id:
            entries = {int(e["idx"]): dict(e) for e in w.payload.get("writes", ())}
    return entries
