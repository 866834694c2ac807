"""``InMemorySaver``'s own storage: LangGraph checkpoints kept as serialized parts in dicts.

The SQLite savers map LangGraph checkpoints onto flowcore records (see
:mod:`~flowcore.compat.langgraph._savers_core`), so one file holds both
kinds of thread. An in-memory saver has nothing to share its store with,
so it keeps LangGraph's own shape, as LangGraph's ``InMemorySaver`` does,
with the same layout rules as the record mapping:

* per ``(thread_id, checkpoint_ns)`` (keyed like the record mapping's
  threads, ``langgraph/<thread>/<ns>``), the checkpoints in the order they
  were saved; one saved again under its id keeps its place and its writes;
* per checkpoint, one serialized copy of what it stores (the checkpoint
  without its values, the merged metadata, the whole values of changed
  channels and the tails of lists that grew, laid out by
  :func:`~flowcore.compat.langgraph._savers_layout.lay_out`), plus, as
  plain dicts, its ``blob_at`` (which checkpoint holds each channel's value)
  and its ``channel_versions`` (what the next put compares with), and per
  task, its pending writes, serialized.

Values are serialized before anything is stored (by default
:class:`~flowcore.checkpoint.copying.CopyCodec`: exact copies of builtin-only
values, flowcore's JSON for the rest), so a value SQLite would refuse is
refused here with a :class:`~flowcore.errors.SerializationError` and
nothing is saved. A LangGraph serde (``dumps_typed``/``loads_typed``) may
stand in for the serializer (:class:`SerdeCodec`): each stored part is then
the ``(type, data)`` pair it returns, kept as it returned it. The map of
spaces may be any mutable mapping (``InMemorySaver(factory=...)``).
Every method finishes without waiting: the coroutines exist for
:class:`~flowcore.compat.langgraph._savers_shell.SaverShell`, and the hot path
(:meth:`MemoryCore.save`, :meth:`MemoryCore.save_writes`) is plain calls.
"""

from __future__ import annotations

import builtins
import heapq
from collections.abc import AsyncIterator, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Protocol

from flowcore.checkpoint import DEFAULT_LEASE_TTL, ThreadLease
from flowcore.checkpoint.copying import CopyCodec
from flowcore.checkpoint.lease import LeaseTable
from flowcore.compat.langgraph._local_classes import dumps_with_local_fields
from flowcore.compat.langgraph._savers import CheckpointTuple, RunnableConfig
from flowcore.compat.langgraph._savers_layout import (
    MAX_CHAIN,
    ShadowCache,
    lay_out,
    ordered_writes,
    rebuilt_list,
    unending_chain,
)
from flowcore.compat.langgraph._savers_records import (
    _config,
    _configurable,
    _first_writes,
    _merged_writes,
    _split_key,
    _thread_key,
    _thread_prefix,
    listing_scope,
    merged_metadata,
    writes_target,
)
from flowcore.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    InvalidInputError,
    SerializationError,
)

__all__ = ["Codec", "MemoryCore", "SerdeCodec", "TypedView"]

_PREFIX = "langgraph/"
_MISSING: Any = object()


class Codec(Protocol):
    """How :class:`MemoryCore` stores values: a flowcore ``Serializer`` or a :class:`SerdeCodec`.

    What :meth:`dumps` returns is kept as it is and handed back to :meth:`loads`;
    it need not be bytes.
    """

    def dumps(self, value: Any, *, path: str = "") -> Any:
        """Encode ``value``; ``path`` names it in error messages."""
        ...

    def loads(self, data: Any) -> Any:
        """Decode what :meth:`dumps` produced."""
        ...


class SerdeCodec:
    """A LangGraph serde (``dumps_typed``/``loads_typed``) as the core's codec.

    A value the serde cannot encode raises
    :class:`~flowcore.errors.SerializationError` (a ``TypeError``), as with
    flowcore's serializers, and nothing is stored.

    Example:
        >>> class Pairs:
        ...     def dumps_typed(self, obj): return ("repr", repr(obj).encode())
        ...     def loads_typed(self, data): return eval(data[1])
        >>> codec = SerdeCodec(Pairs())
        >>> codec.dumps({"x": 1})
        ('repr', b"{'x': 1}")
        >>> codec.loads(codec.dumps({"x": 1}))
        {'x': 1}
    """

    __slots__ = ("serde",)

    def __init__(self, serde: Any) -> None:
        self.serde = serde

    def dumps(self, value: Any, *, path: str = "") -> Any:
        """``serde.dumps_typed(value)``; its failure as a ``SerializationError`` naming ``path``."""
        try:
            return self.serde.dumps_typed(value)
        except SerializationError:
            raise
        except Exception as exc:
            where = f" ({path})" if path else ""
            raise _serde_failure(type(exc))(
                f"the saver's serde {type(self.serde).__name__} cannot store this value{where}: "
                f"{exc}",
                path=path,
            ) from exc

    def loads(self, data: Any) -> Any:
        """``serde.loads_typed(data)``."""
        return self.serde.loads_typed(data)


_SERDE_FAILURES: dict[type[BaseException], type[SerializationError]] = {}


def _serde_failure(kind: type[BaseException]) -> type[SerializationError]:
    """A ``SerializationError`` that is also the serde's own built-in error type.

    Code written for LangGraph catches what its serde raised (``ValueError``,
    ``TypeError``...), flowcore code catches ``SerializationError``: the error
    a run raises answers to both. A type that cannot be mixed in gets the plain one.
    """
    found = _SERDE_FAILURES.get(kind)
    if found is None:
        found = SerializationError
        if kind.__module__ == "builtins" and not issubclass(SerializationError, kind):
            try:
                found = type(f"Serde{kind.__name__}", (SerializationError, kind), {})
            except TypeError:  # an incompatible layout (e.g. OSError's fields)
                found = SerializationError
        _SERDE_FAILURES[kind] = found
    return found


class TypedView:
    """A flowcore ``Serializer`` seen through LangGraph's serde protocol (``saver.serde``).

    ``dumps_typed`` gives ``("flowcore", bytes)``; ``loads_typed`` takes only that tag.

    Example:
        >>> from flowcore.checkpoint import JsonSerializer
        >>> view = TypedView(JsonSerializer())
        >>> view.loads_typed(view.dumps_typed({"pair": (1, 2)}))
        {'pair': (1, 2)}
    """

    __slots__ = ("serializer",)

    TAG = "flowcore"

    def __init__(self, serializer: Codec) -> None:
        self.serializer = serializer

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """``(TAG, the serializer's bytes)``."""
        return self.TAG, self.serializer.dumps(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode a pair :meth:`dumps_typed` made."""
        tag, blob = data
        if tag != self.TAG:
            raise SerializationError(
                f"cannot read a value tagged {tag!r}: this serde reads only {self.TAG!r}"
            )
        return self.serializer.loads(blob)


class _Saved:
    """One stored checkpoint: its serialized parts, and what later puts and reads need."""

    __slots__ = ("blob_at", "data", "parent", "versions", "writes")

    def __init__(
        self, data: Any, parent: str | None, versions: dict[str, Any], blob_at: dict[str, str]
    ) -> None:
        # {"checkpoint": without values, "metadata", "channels": whole values, "tails"}
        self.data = data
        self.parent = parent  # LangGraph's parent id, stored or not
        self.versions = versions
        self.blob_at = blob_at
        # Per task id: its write entries ({"idx", "channel", "path", "value"}), serialized.
        self.writes: dict[str, Any] = {}


_Space = dict[str, _Saved]  # one (thread, namespace): checkpoint id -> saved, oldest first


class MemoryCore:
    """LangGraph's saver operations on plain dicts, for :class:`InMemorySaver`.

    Example:
        >>> core = MemoryCore()
        >>> config = {"configurable": {"thread_id": "1", "checkpoint_ns": ""}}
        >>> cp = {"v": 4, "id": "c1", "ts": "2026-01-01T00:00:00+00:00",
        ...       "channel_values": {"x": 1}, "channel_versions": {"x": 1},
        ...       "versions_seen": {}}
        >>> core.save(config, cp, {"step": -1}, {"x": 1})["configurable"]["checkpoint_id"]
        'c1'
    """

    def __init__(
        self,
        serializer: Codec | None = None,
        *,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        spaces: MutableMapping[str, _Space] | None = None,
    ) -> None:
        self.codec: Codec = CopyCodec() if serializer is None else serializer
        # Any mutable mapping (a user's factory may build one that persists itself).
        self.spaces: MutableMapping[str, _Space] = {} if spaces is None else spaces
        # What was stored of each list channel, per thread: lets a put store what a list
        # gained since its parent (see _savers_layout).
        self.shadows = ShadowCache()
        self.leases = LeaseTable(ttl=lease_ttl)

    # ------------------------------------------------------------------ leases

    async def acquire_lease(self, thread_id: str, holder: str) -> ThreadLease | None:
        """Take or renew a thread's lease in this process (see ``SaverCore``)."""
        return self.leases.take(thread_id, holder)

    async def release_lease(self, thread_id: str, holder: str) -> None:
        """Give a thread's lease back if ``holder`` has it."""
        self.leases.drop(thread_id, holder)

    # ------------------------------------------------------------------ writing

    def save(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of the checkpoint ``config`` names; its config."""
        conf = _configurable(config, "put")
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        key = _thread_key(thread_id, ns)
        cid = str(checkpoint["id"])
        parent_id = conf.get("checkpoint_id") or None
        parent_id = None if parent_id is None else str(parent_id)
        space = self.spaces.get(key)
        parent = None
        if space is not None and parent_id is not None and parent_id != cid:
            parent = space.get(parent_id)
        kept = self.shadows
        whole, tail, blob_at, shadows = lay_out(
            cid,
            checkpoint,
            new_versions,
            _NO_VERSIONS if parent is None else parent.versions,
            _NO_BLOBS if parent is None else parent.blob_at,
            kept.get(key) if kept.by_thread else _NO_SHADOWS,
        )
        rest = dict(checkpoint)
        rest.pop("channel_values", None)
        parts: dict[str, Any] = {
            "checkpoint": rest,
            "metadata": merged_metadata(config, metadata),
            "channels": whole,
        }
        if tail:
            parts["tails"] = tail
        # Serialized before anything changes: a value that cannot be stored stores nothing.
        try:
            data = self.codec.dumps(parts, path="checkpoint")
        except SerializationError as refused:
            data = dumps_with_local_fields(self.codec, parts, "checkpoint", refused)
        saved = _Saved(
            data,
            parent_id,
            dict(checkpoint.get("channel_versions") or _NO_VERSIONS),
            blob_at,
        )
        if space is None:
            space = self.spaces[key] = {}
        else:
            old = space.get(cid)
            if old is not None:
                saved.writes = old.writes  # LangGraph overwrites the checkpoint, not its writes
        space[cid] = saved
        if shadows or kept.by_thread:  # a thread without lists, in a saver without any: no call
            kept.remember(key, shadows)
        # The thread id as given (LangGraph's saver does not make a UUID or an int a string):
        # a caller that keys its own records by it finds them again under the returned config.
        return _config(conf["thread_id"], ns, cid)

    def save_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the checkpoint ``config`` names."""
        thread_id, ns, cid = writes_target(config)
        space = self.spaces.get(_thread_key(thread_id, ns))
        saved = None if space is None else space.get(cid)
        if saved is None:
            raise CheckpointNotFoundError(
                f"checkpoint {cid!r} is not in thread {thread_id!r} (namespace {ns!r}), so "
                "writes cannot be saved against it; pass the config put() returned",
                thread_id=thread_id,
                checkpoint_id=cid,
            )
        stored = saved.writes.get(task_id)
        if stored is None:
            entries = _first_writes(writes, task_path)
        else:
            merged = {int(e["idx"]): e for e in self.codec.loads(stored)}
            if not _merged_writes(merged, writes, task_path):
                return
            entries = [merged[i] for i in sorted(merged)]
        if entries:
            where = f"writes of task {task_id!r}"
            try:
                saved.writes[task_id] = self.codec.dumps(entries, path=where)
            except SerializationError as refused:
                saved.writes[task_id] = dumps_with_local_fields(self.codec, entries, where, refused)

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """:meth:`save`, as a coroutine."""
        return self.save(config, checkpoint, metadata, new_versions)

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`save_writes`, as a coroutine."""
        self.save_writes(config, writes, task_id, task_path)

    # ------------------------------------------------------------------ reading

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace."""
        conf = _configurable(config, "get_tuple")
        key = _thread_key(str(conf["thread_id"]), str(conf.get("checkpoint_ns") or ""))
        wanted = conf.get("checkpoint_id") or None
        space = self.spaces.get(key)
        if not space:
            return None
        if wanted is not None:
            return self._tuple(key, str(wanted), {}, given=config) if str(wanted) in space else None
        cid = next(reversed(space))
        # The thread id as given, as in what put returned.
        return self._tuple(key, cid, {}, given=_config(conf["thread_id"], _split_key(key)[1], cid))

    async def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints matching ``config``, ``filter`` and ``before``, newest first."""
        scope = listing_scope(config, before)
        keys = [scope.key] if scope.key else self._keys(scope.prefix)
        wanted, before_id = scope.wanted, scope.before_id
        left = limit
        if left is not None and left <= 0:
            return
        cache: dict[tuple[str, str], dict[str, Any]] = {}
        streams = [self._scan(key, wanted, before_id) for key in keys]
        # Each stream is newest first; merged by descending checkpoint id.
        for key, cid in heapq.merge(*streams, key=lambda item: item[1], reverse=True):
            if cid not in self.spaces.get(key, _NO_SPACE):
                continue  # deleted since the listing started
            if filter:
                stored = self._parts(key, cid, cache)["metadata"]
                if not all(stored.get(k) == v for k, v in filter.items()):
                    continue
            yield self._tuple(key, cid, cache)
            if left is not None:
                left -= 1
                if left <= 0:
                    return

    def _keys(self, prefix: str) -> builtins.list[str]:
        return sorted(k for k, space in self.spaces.items() if space and k.startswith(prefix))

    def _scan(self, key: str, wanted: Any, before_id: Any) -> Iterator[tuple[str, str]]:
        """``(key, id)`` of one space's checkpoints that a listing names, newest first."""
        space = self.spaces.get(key) or {}
        if wanted is not None:
            if str(wanted) in space and (before_id is None or str(wanted) < str(before_id)):
                yield key, str(wanted)
            return
        # A copy: between two items of a listing, the caller may save to this space.
        ids = list(space)
        if before_id is not None and str(before_id) in space:
            # Only what was saved before it, as a scan that starts there.
            del ids[ids.index(str(before_id)) :]
        ids.reverse()
        for cid in ids:
            if before_id is None or cid < str(before_id):
                yield key, cid

    def _parts(
        self, key: str, cid: str, cache: dict[tuple[str, str], dict[str, Any]]
    ) -> dict[str, Any]:
        """The decoded parts of a stored checkpoint, decoded once per operation."""
        parts = cache.get((key, cid))
        if parts is None:
            parts = cache[key, cid] = self.codec.loads(self.spaces[key][cid].data)
        return parts

    def _tuple(
        self,
        key: str,
        cid: str,
        cache: dict[tuple[str, str], dict[str, Any]],
        *,
        given: RunnableConfig | None = None,
    ) -> CheckpointTuple:
        thread_id, ns = _split_key(key)
        saved = self.spaces[key][cid]
        parts = self._parts(key, cid, cache)
        checkpoint = dict(parts["checkpoint"])
        checkpoint["channel_values"] = self._values(key, saved, cache)
        return CheckpointTuple(
            config=given if given is not None else _config(thread_id, ns, cid),
            checkpoint=checkpoint,
            metadata=dict(parts["metadata"]),
            parent_config=None if saved.parent is None else _config(thread_id, ns, saved.parent),
            pending_writes=self._pending_writes(saved),
        )

    def _values(
        self, key: str, saved: _Saved, cache: dict[tuple[str, str], dict[str, Any]]
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for channel, holder in saved.blob_at.items():
            value = self._value_at(key, channel, holder, cache)
            if value is not _MISSING:
                values[channel] = value
        return values

    def _value_at(
        self,
        key: str,
        channel: str,
        holder: str,
        cache: dict[tuple[str, str], dict[str, Any]],
    ) -> Any:
        """The value of ``channel`` held at ``holder``: whole, or rebuilt from its tails.

        ``_MISSING`` when a checkpoint it needs is gone.
        """
        space = self.spaces[key]
        pieces: builtins.list[Sequence[Any]] = []
        at = holder
        while True:
            if at not in space:
                return _MISSING
            parts = self._parts(key, at, cache)
            whole = parts["channels"]
            if channel in whole:
                break
            piece = parts.get("tails", _NO_TAILS).get(channel)
            if piece is None:
                return _MISSING
            pieces.append(piece["items"])
            base = str(piece["base"])
            if len(pieces) > MAX_CHAIN or base == at:
                raise unending_chain(key, channel, holder)
            at = base
        return rebuilt_list(key, channel, holder, whole[channel], pieces)

    def _pending_writes(self, saved: _Saved) -> builtins.list[tuple[str, str, Any]]:
        """The checkpoint's writes, ordered by task path, task id and write index."""
        return ordered_writes(
            (task_id, self.codec.loads(data)) for task_id, data in saved.writes.items()
        )

    # ------------------------------------------------------------------ maintenance

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and write of a thread, in every namespace."""
        self.shadows.clear()
        for key in self._keys(_thread_prefix(str(thread_id))):
            del self.spaces[key]

    async def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to a new thread, keeping the ids."""
        self.shadows.clear()
        if self._keys(_thread_prefix(str(target_thread_id))):
            raise CheckpointError(
                f"cannot copy thread {source_thread_id!r} to {target_thread_id!r}: the target "
                "thread already has checkpoints; delete it first or pick a new thread id"
            )
        for key in self._keys(_thread_prefix(str(source_thread_id))):
            target = _thread_key(str(target_thread_id), _split_key(key)[1])
            copied: _Space = {}
            for cid, saved in self.spaces[key].items():
                twin = _Saved(saved.data, saved.parent, dict(saved.versions), dict(saved.blob_at))
                twin.writes = dict(saved.writes)
                copied[cid] = twin
            self.spaces[target] = copied

    async def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the latest checkpoint per namespace (``keep_latest``) or none (``delete``)."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(
                f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'"
            )
        self.shadows.clear()
        for thread_id in thread_ids:
            if strategy == "delete":
                await self.delete_thread(thread_id)
                continue
            for key in self._keys(_thread_prefix(str(thread_id))):
                space = self.spaces[key]
                latest = next(reversed(space))
                self._remove(key, set(space) - {latest})

    async def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints (and their writes) whose metadata names one of ``run_ids``."""
        self.shadows.clear()
        runs = {str(r) for r in run_ids}
        if not runs:
            return
        for key in self._keys(_PREFIX):
            cache: dict[tuple[str, str], dict[str, Any]] = {}
            doomed = {
                cid
                for cid in self.spaces[key]
                if str(self._parts(key, cid, cache)["metadata"].get("run_id")) in runs
            }
            if doomed:
                self._remove(key, doomed, cache)

    def _remove(
        self,
        key: str,
        leaving: set[str],
        cache: dict[tuple[str, str], dict[str, Any]] | None = None,
    ) -> None:
        """Delete the ``leaving`` checkpoints of a space, first moving into the kept ones,
        whole, every value they read from a leaving one (directly or as a tail's base)."""
        if not leaving:
            return
        space = self.spaces[key]
        cache = {} if cache is None else cache
        # Everything is read and encoded before anything changes.
        fixed: dict[str, _Saved] = {}
        for cid, saved in space.items():
            if cid in leaving:
                continue
            moved = {
                channel: self._value_at(key, channel, holder, cache)
                for channel, holder in saved.blob_at.items()
                if self._reads_from(key, cid, channel, holder, leaving, cache)
            }
            if not moved:
                continue
            parts = dict(self._parts(key, cid, cache))
            whole = dict(parts["channels"])
            tails = dict(parts.get("tails", _NO_TAILS))
            blob_at = dict(saved.blob_at)
            for channel, value in moved.items():
                tails.pop(channel, None)
                blob_at[channel] = cid
                if value is not _MISSING:
                    whole[channel] = value
            parts["channels"] = whole
            parts.pop("tails", None)
            if tails:
                parts["tails"] = tails
            twin = _Saved(
                self.codec.dumps(parts, path="checkpoint"), saved.parent, saved.versions, blob_at
            )
            twin.writes = saved.writes
            fixed[cid] = twin
        for cid in leaving:
            space.pop(cid, None)
        space.update(fixed)
        if not space:
            del self.spaces[key]

    def _reads_from(
        self,
        key: str,
        cid: str,
        channel: str,
        holder: str,
        leaving: set[str],
        cache: dict[tuple[str, str], dict[str, Any]],
    ) -> bool:
        """Whether checkpoint ``cid`` reads ``channel`` from a ``leaving`` one directly."""
        if holder != cid:
            return holder in leaving
        piece = self._parts(key, cid, cache).get("tails", _NO_TAILS).get(channel)
        return piece is not None and str(piece["base"]) in leaving


_NO_VERSIONS: dict[str, Any] = {}
_NO_BLOBS: dict[str, str] = {}
_NO_SHADOWS: dict[str, Any] = {}
_NO_TAILS: dict[str, Any] = {}
_NO_SPACE: _Space = {}
