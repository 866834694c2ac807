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

import heapq
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace as dc_replace
from typing import TYPE_CHECKING, Any

from flowcore.checkpoint import (
    Checkpoint,
    LeasingCheckpointer,
    MaintainableCheckpointer,
    PendingWrite,
    ThreadLease,
)
from flowcore.compat.langgraph._savers import CheckpointTuple, RunnableConfig
from flowcore.compat.langgraph._savers_layout import (
    MAX_CHAIN,
    ShadowCache,
    channel_versions,
    full_values,
    holders,
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

if TYPE_CHECKING:
    from flowcore.compat.langgraph._savers_batch import SaveBatch

__all__ = [
    "SaverCore",
]
from flowcore.compat.langgraph._savers_records import (
    _MISSING,
    _PAGE,
    _PREFIX,
    _config,
    _configurable,
    _merged_writes,
    _record,
    _split_key,
    _stored_entries,
    _thread_key,
    _thread_prefix,
    listing_scope,
    writes_target,
)

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
