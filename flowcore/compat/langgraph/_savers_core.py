"""How LangGraph's saver operations map onto flowcore's checkpoint stores.

A LangGraph saver keeps checkpoints per ``(thread_id, checkpoint_ns)`` and,
against each checkpoint, the pending writes of its tasks. Here each such
pair is one flowcore thread (``langgraph/<thread>/<ns>``, both parts
percent-encoded) in any :class:`~flowcore.checkpoint.MaintainableCheckpointer`,
so one flowcore database holds flowcore's own threads and LangGraph's side by
side. A LangGraph checkpoint becomes one flowcore
:class:`~flowcore.checkpoint.Checkpoint`:

* ``checkpoint_id`` and ``parent_id``: LangGraph's ids (``parent_id`` only
  while that parent is stored; LangGraph's own parent id stays in the cursor).
* ``writes``: one group holding what changed since the parent, in up to two
  entries. ``("channels", {channel: value})``: the whole values of changed
  channels (``new_versions``). ``("tails", {channel: {"base", "links",
  "items"}})``: for a list that extends the list stored for it at the
  parent (same leading items), only the appended ``items``, ``base`` the
  checkpoint holding the rest, and ``links`` the number of tails since the
  last whole copy. The list is stored whole again once its tails outnumber
  the items of that copy, or after ``MAX_TAILS`` (200) tails, so a list
  that grows by a message per step takes linear space, not quadratic, and
  reading it replays at most about one list's worth of tails.
* ``cursor``: the LangGraph checkpoint without its values (``v``, ``id``,
  ``ts``, ``channel_versions``, ``versions_seen``, ...), the parent id, and
  ``blob_at``: for each channel with a value, the checkpoint whose record
  holds it (whole, or its newest tail). A channel whose version did not
  change points where its parent pointed, so a long thread stores each
  value once, not once per step.
* ``metadata``: LangGraph's metadata, merged with the config as LangGraph does.

A value is stored as a tail only when the core knows, without reading the
store, that the parent's list is a prefix of the new one: per thread (the 64
used last, holding at most 50,000 item copies beside the thread saved last)
it keeps a shadow of each list it stored (see
:mod:`~flowcore.compat.langgraph._savers_layout`): which checkpoint holds it,
and a frozen copy of each item, so an item changed in place since is seen
too. Anything else stores the list whole: a list changed in place,
reordered, shortened, with an item replaced or removed; the first put of a
core (a reopened file) or after maintenance; a parent whose ``blob_at`` no
longer names the checkpoint the shadow describes (another writer). Records
written before tails existed (``"channels"`` only) read as before; a file
holding tails needs this version of flowcore to read them.

The pending writes of one task are one flowcore
:class:`~flowcore.checkpoint.PendingWrite` named by the task id, so the writes
of one ``put_writes`` call are saved in one transaction.

Where this differs from LangGraph's savers, and why:

* Values go through flowcore's serializer (JSON with tagged types), not
  LangGraph's msgpack/pickle serde: what cannot be stored raises
  :class:`~flowcore.errors.SerializationError` and nothing is saved.
* "Newest first" is the order checkpoints were saved in, which is descending
  checkpoint id for LangGraph's time-ordered ids; ``before`` compares ids.
* ``put_writes`` against a checkpoint that is not stored raises
  :class:`~flowcore.errors.CheckpointNotFoundError` (LangGraph keeps writes
  nobody can read); ``copy_thread`` refuses a target that has checkpoints.
* ``delete_thread``, ``copy_thread`` and ``prune`` take one transaction per
  namespace; ``delete_for_runs`` reads every LangGraph thread. ``prune`` and
  ``delete_for_runs`` first store whole, in the kept checkpoints, the values
  they read from deleted ones (directly or as the base of a tail), so no
  value is lost.
"""

from __future__ import annotations

import datetime as dt
import functools
import heapq
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import replace as dc_replace
from typing import Any, NamedTuple
from urllib.parse import quote, unquote

from flowcore.checkpoint import (
    BatchCheckpointer,
    Checkpoint,
    LeasingCheckpointer,
    MaintainableCheckpointer,
    PendingWrite,
    StoreItem,
    ThreadLease,
    WriteAt,
)
from flowcore.compat.langgraph._savers import WRITES_IDX_MAP, CheckpointTuple, RunnableConfig
from flowcore.compat.langgraph._savers_layout import (
    MAX_CHAIN,
    Shadow,
    ShadowCache,
    channel_versions,
    full_values,
    holders,
    lay_out,
    ordered_writes,
    rebuilt_list,
    tails,
    unending_chain,
    write_groups,
)
from flowcore.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    InvalidInputError,
    ThreadBusyError,
)
from flowcore.runtime.durability import Durability, DurabilityWriter

__all__ = [
    "ListingScope",
    "SaveBatch",
    "SaverCore",
    "listing_scope",
    "merged_metadata",
    "writes_target",
]

_PREFIX = "langgraph/"
_PAGE = 100
_EXCLUDED_METADATA_KEYS = frozenset(
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
    if extra is None and type(conf) is dict and conf.keys() <= _EXCLUDED_METADATA_KEYS:
        return merged  # a run's own puts: nothing to add (what the loop below finds too)
    for source in (extra, conf):
        # None (no "metadata", as usual) and a dict of LangGraph's own keys only (the config
        # a put returned) add nothing; exact dicts skip the slower ABC check.
        if source is None:
            continue
        if type(source) is dict:
            if source.keys() <= _EXCLUDED_METADATA_KEYS:
                continue
        elif not isinstance(source, Mapping):
            continue
        for key, value in source.items():
            if key in _EXCLUDED_METADATA_KEYS or key in merged or key.startswith("__"):
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


# ---------------------------------------------------------------------- the core


class SaverCore:
    """LangGraph's saver operations on a flowcore store, as coroutines.

    The SQLite shells (``AsyncSqliteSaver``, ``SqliteSaver``) decide how
    these coroutines are run; every rule of the mapping lives here.
    (``InMemorySaver`` keeps LangGraph's shape in dicts instead, with the
    same layout: see ``_savers_memory_core``.)

    Example:
        >>> from flowcore.checkpoint import InMemoryCheckpointer
        >>> core = SaverCore(InMemoryCheckpointer())
        >>> # await core.put({"configurable": {"thread_id": "1"}}, checkpoint, {}, {})
    """

    def __init__(self, store: MaintainableCheckpointer) -> None:
        self.store = store
        # Per thread, what was stored of each list channel (see _savers_layout): lets a
        # put store only what a list gained since its parent, without reading it back.
        self.shadows = ShadowCache()
        # Bumped by maintenance: what a batch remembers of the store may be stale.
        self.generation = 0
        self.batches: set[SaveBatch] = set()

    # ------------------------------------------------------------------ leases

    async def acquire_lease(self, thread_id: str, holder: str) -> ThreadLease | None:
        """Take or renew a LangGraph thread's lease in the store (None: it does not lease).

        The lease is kept under the thread's root-namespace key, so flowcore's
        own threads in the same file never collide with it.
        """
        if not isinstance(self.store, LeasingCheckpointer):
            return None
        try:
            return await self.store.acquire_lease(_thread_key(thread_id, ""), holder)
        except ThreadBusyError as exc:
            raise ThreadBusyError(
                thread_id=thread_id, holder=exc.holder, expires_at=exc.expires_at
            ) from None

    async def release_lease(self, thread_id: str, holder: str) -> None:
        """Give a LangGraph thread's lease back if ``holder`` has it."""
        if isinstance(self.store, LeasingCheckpointer):
            await self.store.release_lease(_thread_key(thread_id, ""), holder)

    # ------------------------------------------------------------------ reading

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace."""
        await self._settle()
        conf = _configurable(config, "get_tuple")
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        wanted = conf.get("checkpoint_id") or None
        key = _thread_key(thread_id, ns)
        cp = await self.store.get(key, None if wanted is None else str(wanted))
        if cp is None:
            return None
        return await self._tuple(key, cp, {}, given=config if wanted else None)

    async def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints matching ``config``, ``filter`` and ``before``, newest first."""
        await self._settle()
        scope = listing_scope(config, before)
        keys = [scope.key] if scope.key else await self.store.threads(scope.prefix)
        wanted, before_id = scope.wanted, scope.before_id
        left = limit
        if left is not None and left <= 0:
            return
        cache: dict[tuple[str, str], Checkpoint | None] = {}
        streams = [self._scan(key, wanted, before_id, cache) for key in keys]
        async for key, cp in _newest_first(streams):
            if filter and not all(cp.metadata.get(k) == v for k, v in filter.items()):
                continue
            yield await self._tuple(key, cp, cache)
            if left is not None:
                left -= 1
                if left <= 0:
                    return

    async def _scan(
        self,
        key: str,
        wanted: Any,
        before_id: Any,
        cache: dict[tuple[str, str], Checkpoint | None],
    ) -> AsyncIterator[tuple[str, Checkpoint]]:
        """One flowcore thread's checkpoints, newest first, page by page."""
        if wanted is not None:
            cp = await self.store.get(key, str(wanted))
            if cp is not None and (before_id is None or cp.checkpoint_id < str(before_id)):
                yield key, cp
            return
        cursor: str | None = None
        if before_id is not None and await self.store.get(key, str(before_id)) is not None:
            cursor = str(before_id)  # start the scan there instead of at the newest
        while True:
            page = await self.store.history(key, limit=_PAGE, before=cursor)
            for cp in page:
                cache[key, cp.checkpoint_id] = cp
                if before_id is None or cp.checkpoint_id < str(before_id):
                    yield key, cp
            if len(page) < _PAGE:
                return
            cursor = page[-1].checkpoint_id

    async def _values(
        self, key: str, cp: Checkpoint, cache: dict[tuple[str, str], Checkpoint | None]
    ) -> dict[str, Any]:
        """The channel values of ``cp``, read from the records its ``blob_at`` points to."""
        values: dict[str, Any] = {}
        for channel, holder in holders(cp).items():
            value = await self._value_at(key, channel, holder, cp, cache)
            if value is not _MISSING:
                values[channel] = value
        return values

    async def _value_at(
        self,
        key: str,
        channel: str,
        holder: str,
        cp: Checkpoint,
        cache: dict[tuple[str, str], Checkpoint | None],
    ) -> Any:
        """The value of ``channel`` held at ``holder``: whole, or rebuilt from its tails.

        ``_MISSING`` when a record it needs is gone (as a value nobody stored).
        """
        record = cp if holder == cp.checkpoint_id else await self._read(key, holder, cache)
        pieces: list[Sequence[Any]] = []
        while record is not None:
            whole = full_values(record)
            if channel in whole:
                break
            piece = tails(record).get(channel)
            if piece is None:
                return _MISSING
            pieces.append(piece["items"])
            base = str(piece["base"])
            if len(pieces) > MAX_CHAIN or base == record.checkpoint_id:
                raise unending_chain(key, channel, holder)
            links = piece.get("links")
            ahead = int(links) if isinstance(links, int) else 1
            record = await self._read(key, base, cache, after=record.checkpoint_id, ahead=ahead)
        else:
            return _MISSING
        return rebuilt_list(key, channel, holder, whole[channel], pieces)

    async def _read(
        self,
        key: str,
        checkpoint_id: str,
        cache: dict[tuple[str, str], Checkpoint | None],
        *,
        after: str | None = None,
        ahead: int = 1,
    ) -> Checkpoint | None:
        """A record, from ``cache`` or the store (kept in ``cache``).

        Following ``ahead`` tails back from the checkpoint ``after``, whose
        records are usually the ones saved just before it, reads them as one
        page instead of one by one.
        """
        if (key, checkpoint_id) not in cache:
            if after is not None and ahead > 1:
                try:
                    page = await self.store.history(key, limit=ahead, before=after)
                except CheckpointNotFoundError:
                    page = []
                for cp in page:
                    cache.setdefault((key, cp.checkpoint_id), cp)
            if (key, checkpoint_id) not in cache:
                cache[key, checkpoint_id] = await self.store.get(key, checkpoint_id)
        return cache[key, checkpoint_id]

    async def _tuple(
        self,
        key: str,
        cp: Checkpoint,
        cache: dict[tuple[str, str], Checkpoint | None],
        *,
        given: RunnableConfig | None = None,
    ) -> CheckpointTuple:
        thread_id, ns = _split_key(key)
        cursor = cp.cursor or {}
        checkpoint = dict(cursor.get("checkpoint", {}))
        checkpoint["channel_values"] = await self._values(key, cp, cache)
        parent = cursor.get("parent")
        writes = await self.store.get_writes(key, cp.checkpoint_id)
        return CheckpointTuple(
            config=given if given is not None else _config(thread_id, ns, cp.checkpoint_id),
            checkpoint=checkpoint,
            metadata=dict(cp.metadata),
            parent_config=None if parent is None else _config(thread_id, ns, str(parent)),
            pending_writes=ordered_writes((w.node, w.payload.get("writes", ())) for w in writes),
        )

    # ------------------------------------------------------------------ writing

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of the checkpoint ``config`` names."""
        if self.batches:
            await self._settle(writing=True)
        conf = _configurable(config, "put")
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        key = _thread_key(thread_id, ns)
        cid = str(checkpoint["id"])
        parent_id = conf.get("checkpoint_id") or None
        parent_id = None if parent_id is None else str(parent_id)
        stored_parent: str | None = None
        parent_versions: Mapping[str, Any] = {}
        parent_blobs: Mapping[str, str] = {}
        if parent_id is not None and parent_id != cid:
            parent = await self.store.get(key, parent_id)
            if parent is not None:
                stored_parent = parent.checkpoint_id
                parent_versions, parent_blobs = channel_versions(parent), holders(parent)
        record, _, shadows = _record(
            key,
            config,
            checkpoint,
            metadata,
            new_versions,
            parent_id,
            stored_parent,
            parent_versions,
            parent_blobs,
            self.shadows.get(key),
        )
        await self._store_checkpoint(record)
        self.shadows.remember(key, shadows)
        return _config(thread_id, ns, cid)

    def _forget(self) -> None:
        """Maintenance changes stored checkpoints: read them from the store again."""
        self.generation += 1
        self.shadows.clear()

    async def _settle(self, *, writing: bool = False) -> None:
        """Let the batches of running runs reach the store before this operation.

        Every operation starts here, so it reads what those runs saved so far
        and comes after it in the store. No batch: nothing is awaited.
        """
        if self.batches:
            for batch in list(self.batches):
                await batch.flush()
            if writing:
                # A write beside a batch may touch what the batch remembers.
                self.generation += 1

    async def _store_checkpoint(self, record: Checkpoint) -> bool:
        """Store ``record``; False when it replaced a checkpoint (whose writes stay)."""
        try:
            await self.store.put(record)
        except CheckpointError as exc:
            return await self._put_failed(record, exc)
        return True

    async def _put_failed(self, record: Checkpoint, exc: CheckpointError) -> bool:
        """After the store refused ``record`` with ``exc``: store it another way, or raise.

        Called while ``exc`` is being handled, so what this raises chains to it.
        """
        if isinstance(exc, CheckpointNotFoundError):
            # The parent went away between our read and the write: keep the record.
            return await self._store_checkpoint(dc_replace(record, parent_id=None))
        existing = await self.store.get(record.thread_id, record.checkpoint_id)
        if existing is None or type(exc) is not CheckpointError:
            raise exc
        # LangGraph overwrites a checkpoint saved again under the same id.
        await self.store.rewrite(record.thread_id, replace=[record])
        return False

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against the checkpoint ``config`` names."""
        if self.batches:
            await self._settle(writing=True)
        thread_id, ns, cid = writes_target(config)
        key = _thread_key(thread_id, ns)
        entries = _stored_entries(await self.store.get_writes(key, cid), task_id)
        if _merged_writes(entries, writes, task_path):
            stored = [entries[i] for i in sorted(entries)]
            await self.store.put_write(key, cid, PendingWrite(task_id, {"writes": stored}))

    # ------------------------------------------------------------------ maintenance

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and write of a thread, in every namespace."""
        await self._settle()
        self._forget()
        for key in await self.store.threads(_thread_prefix(str(thread_id))):
            await self.store.delete_thread(key)

    async def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to a new thread, keeping the ids."""
        await self._settle()
        self._forget()
        sources = await self.store.threads(_thread_prefix(str(source_thread_id)))
        if await self.store.threads(_thread_prefix(str(target_thread_id))):
            raise CheckpointError(
                f"cannot copy thread {source_thread_id!r} to {target_thread_id!r}: the target "
                "thread already has checkpoints; delete it first or pick a new thread id"
            )
        for key in sources:
            target = _thread_key(str(target_thread_id), _split_key(key)[1])
            for cp in reversed(await self.store.history(key)):  # parents before children
                await self.store.put(dc_replace(cp, thread_id=target))
                for write in await self.store.get_writes(key, cp.checkpoint_id):
                    await self.store.put_write(target, cp.checkpoint_id, write)

    async def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the latest checkpoint per namespace (``keep_latest``) or none (``delete``)."""
        await self._settle()
        self._forget()
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(
                f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'"
            )
        for thread_id in thread_ids:
            if strategy == "delete":
                await self.delete_thread(thread_id)
                continue
            for key in await self.store.threads(_thread_prefix(str(thread_id))):
                history = await self.store.history(key)
                latest, older = history[0], {cp.checkpoint_id for cp in history[1:]}
                if older:
                    kept = await self._standalone(key, latest, older, {})
                    await self.store.rewrite(key, delete=older, replace=[kept])

    async def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints (and their writes) whose metadata names one of ``run_ids``."""
        await self._settle()
        self._forget()
        runs = {str(r) for r in run_ids}
        if not runs:
            return
        for key in await self.store.threads(_PREFIX):
            history = await self.store.history(key)
            doomed = {cp.checkpoint_id for cp in history if str(cp.metadata.get("run_id")) in runs}
            if not doomed:
                continue
            cache: dict[tuple[str, str], Checkpoint | None] = {
                (key, cp.checkpoint_id): cp for cp in history
            }
            fixed = [
                await self._standalone(key, cp, doomed, cache)
                for cp in history
                if cp.checkpoint_id not in doomed
                and (cp.parent_id in doomed or not _points_to(cp).isdisjoint(doomed))
            ]
            await self.store.rewrite(key, delete=doomed, replace=fixed)

    async def _standalone(
        self,
        key: str,
        cp: Checkpoint,
        leaving: set[str],
        cache: dict[tuple[str, str], Checkpoint | None],
    ) -> Checkpoint:
        """``cp`` with the values it reads from ``leaving`` checkpoints moved into it, whole.

        A value read through a kept checkpoint stays there: that checkpoint
        is made standalone too if it needs a leaving one.
        """
        cid = cp.checkpoint_id
        blob_at = dict(holders(cp))
        whole = dict(full_values(cp))
        tail = dict(tails(cp))
        for channel, holder in holders(cp).items():
            if holder == cid:
                piece = tail.get(channel)
                if piece is None or str(piece["base"]) not in leaving:
                    continue
            elif holder not in leaving:
                continue
            value = await self._value_at(key, channel, holder, cp, cache)
            blob_at[channel] = cid
            tail.pop(channel, None)
            if value is not _MISSING:
                whole[channel] = value
        return dc_replace(
            cp,
            parent_id=None if cp.parent_id in leaving else cp.parent_id,
            writes=write_groups(whole, tail),
            cursor={**(cp.cursor or {}), "blob_at": blob_at},
        )


def _points_to(cp: Checkpoint) -> set[str]:
    """The checkpoints whose records ``cp``'s values are read from directly."""
    pointed = set(holders(cp).values())
    for piece in tails(cp).values():
        pointed.add(str(piece["base"]))
    return pointed


# ---------------------------------------------------------------------- batched saving


class _Built:
    """A checkpoint a batch built, as the batch's next put and put_writes read it back."""

    __slots__ = ("blob_at", "checkpoint_id", "entries", "generation", "versions")

    def __init__(
        self, checkpoint_id: str, versions: Mapping[str, Any], blob_at: dict[str, str], gen: int
    ) -> None:
        self.checkpoint_id = checkpoint_id
        self.versions = versions
        self.blob_at = blob_at
        self.generation = gen
        # Per task: the write entries queued against this checkpoint so far.
        self.entries: dict[str, dict[int, dict[str, Any]]] = {}


class SaveBatch:
    """The runtime writer's port onto flowcore's own savers, for one run.

    ``put`` and ``put_writes`` build the same records :class:`SaverCore`
    stores, but take the parent and the task's earlier writes from what this
    batch built last instead of reading the store, and hand the records to
    ``writer``, the runtime's :class:`DurabilityWriter` (``"async"``: queued
    and stored in the background in batches, ``save_many`` being one
    transaction on SQLite; ``"sync"``: stored before the run goes on, a
    step's riding writes committed with its checkpoint). So a run waits for
    neither its store's reads nor, under ``async``, its commits. When the
    batch did not build what it needs (the run's first checkpoint, writes
    against a loaded one, maintenance in between) it lets the queue reach the
    store and reads from it, as ``SaverCore`` does. Every ``SaverCore``
    operation first waits for the queues of the open batches, so nothing
    reads around them.

    A failed store write is raised by the next ``put``, ``put_writes`` or
    :meth:`close`; what was queued before it is stored, what came after is not.

    Example:
        >>> # batch = SaveBatch(core); config = await batch.put(...); await batch.close()
    """

    def __init__(self, core: SaverCore, durability: Durability = "async") -> None:
        self.core = core
        self._built: dict[str, _Built] = {}
        self.writer: DurabilityWriter[Checkpoint, WriteAt] = DurabilityWriter(
            self, durability, group_commit=True
        )
        core.batches.add(self)

    def use(self, durability: Durability) -> None:
        """Save under ``durability`` (``"sync"`` or ``"async"``); call before the first save."""
        if durability == "exit":
            raise ValueError("a SaveBatch saves under 'sync' or 'async'; 'exit' saves at the end")
        # Parallel tasks' writes saved together share one commit, under "sync" too.
        self.writer = DurabilityWriter(self, durability, group_commit=True)

    def _remembered(self, key: str, checkpoint_id: str) -> _Built | None:
        built = self._built.get(key)
        if (
            built is None
            or built.checkpoint_id != checkpoint_id
            or built.generation != self.core.generation
        ):
            return None
        return built

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> RunnableConfig:
        """Save ``checkpoint`` as the child of the checkpoint ``config`` names; its config."""
        self._raise_failure()
        conf = _configurable(config, "put")
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")
        key = _thread_key(thread_id, ns)
        cid = str(checkpoint["id"])
        parent_id = conf.get("checkpoint_id") or None
        parent_id = None if parent_id is None else str(parent_id)
        store = self.core.store
        if parent_id == cid or self._built.get(key, _NOT_BUILT).checkpoint_id == cid:
            # Saved again under the same id: the store decides, as for a single put.
            await self.flush()
            self._raise_failure()
            self._built.pop(key, None)
            return await self.core.put(config, checkpoint, metadata, new_versions)
        stored_parent: str | None = None
        parent_versions: Mapping[str, Any] = {}
        parent_blobs: Mapping[str, str] = {}
        if parent_id is not None:
            built = self._remembered(key, parent_id)
            if built is not None:
                stored_parent = parent_id
                parent_versions, parent_blobs = built.versions, built.blob_at
            else:
                await self.flush()
                self._raise_failure()
                parent = await store.get(key, parent_id)
                if parent is not None:
                    stored_parent = parent.checkpoint_id
                    parent_versions, parent_blobs = channel_versions(parent), holders(parent)
        record, blob_at, shadows = _record(
            key,
            config,
            checkpoint,
            metadata,
            new_versions,
            parent_id,
            stored_parent,
            parent_versions,
            parent_blobs,
            self.core.shadows.get(key),
        )
        versions = checkpoint.get("channel_versions") or {}
        if _round_trips(versions):
            self._built[key] = _Built(cid, dict(versions), blob_at, self.core.generation)
        else:
            # The next put compares versions as a single put reads them back from the store.
            self._built.pop(key, None)
        await self.writer.checkpoint(record)
        self.core.shadows.remember(key, shadows)
        return _config(thread_id, ns, cid)

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
        *,
        rides: bool = False,
    ) -> None:
        """Save a task's writes against the checkpoint ``config`` names.

        ``rides``: under ``"sync"``, the writes wait for the checkpoint that
        follows and are committed with it (the last task of a clean step).
        """
        self._raise_failure()
        thread_id, ns, cid = writes_target(config)
        key = _thread_key(thread_id, ns)
        built = self._remembered(key, cid)
        if built is not None:
            entries = dict(built.entries.get(task_id, {}))
        else:
            await self.flush()
            self._raise_failure()
            entries = _stored_entries(await self.core.store.get_writes(key, cid), task_id)
        if _merged_writes(entries, writes, task_path):
            if built is not None:
                built.entries[task_id] = entries
            payload = {"writes": [entries[i] for i in sorted(entries)]}
            item = WriteAt(key, cid, PendingWrite(task_id, payload))
            await self.writer.writes(item, rides=rides)

    async def flush(self) -> None:
        """Wait until everything queued so far was handed to the store (failures are kept)."""
        await self.writer.drain()

    async def close(self) -> None:
        """Store what is queued, stop batching, and raise a store failure if there was one."""
        try:
            await self.writer.close()
        finally:
            self.core.batches.discard(self)
            self._built.clear()

    def _raise_failure(self) -> None:
        self.writer.raise_failure()

    # ------------------------------------------ the runtime writer's DurableStore port
    async def save_checkpoint(self, item: Checkpoint) -> None:
        """Store one checkpoint record (as :meth:`SaverCore.put` stores it)."""
        await self.core._store_checkpoint(item)

    async def save_writes(self, item: WriteAt) -> None:
        """Store one task's writes record."""
        await self.core.store.put_write(item.thread_id, item.checkpoint_id, item.write)

    async def save_many(self, items: Sequence[StoreItem]) -> None:
        """Store records in one go (one transaction), on a store that can; else refuse."""
        store = self.core.store
        if not isinstance(store, BatchCheckpointer):
            raise CheckpointError("this store has no put_many: store one record at a time")
        await store.put_many(items)


_NOT_BUILT = _Built("", {}, {}, -1)


async def _newest_first(
    streams: Sequence[AsyncIterator[tuple[str, Checkpoint]]],
) -> AsyncIterator[tuple[str, Checkpoint]]:
    """Merge per-thread streams (each newest first) into one, by descending checkpoint id."""
    heads: list[tuple[_Desc, int, tuple[str, Checkpoint]]] = []
    for i, stream in enumerate(streams):
        first = await anext(stream, None)
        if first is not None:
            heapq.heappush(heads, (_Desc(first[1].checkpoint_id), i, first))
    while heads:
        _, i, item = heapq.heappop(heads)
        yield item
        following = await anext(streams[i], None)
        if following is not None:
            heapq.heappush(heads, (_Desc(following[1].checkpoint_id), i, following))


class _Desc(str):
    """A string that sorts backwards, so a min-heap pops the largest id first."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)
