"""The server's one Thinker, and the clarifying conversations it keeps per user.

:func:`build_thinker_service` makes the Thinker from what the app already
has: its block registry, the executor port's pipeline runner (its tools,
sandbox, memory, checkpointer and run history), hybrid block search on the
registry, and the runner's model passed through
:func:`~flowcore.thinker.thinker_model` (the offline stand-in becomes the
Thinker's own offline model, as in ``flowcore create``).

Clarifying conversations are kept in the server database
(:class:`~flowcore.server.clarify_store.ClarifyStore`), by thread id, each
owned by the user who started it: another user's thread id is "not found".
A restarted server, or another server process on the same database,
carries on the same conversation.

Example:
    >>> # service = build_thinker_service(blocks, executor, history=history)
    >>> # answer = await service.clarify_new("ada", [{"role": "user", "content": "..."}])
    >>> # await service.aclose()
"""

from __future__ import annotations

import asyncio
import copy
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowcore.blocks.postgres_store import PostgresBlockStore
from flowcore.blocks.store import BlockStore, SqliteBlockStore
from flowcore.history import RunHistory
from flowcore.llm.registry import ProviderRegistry
from flowcore.port.inproc import InProcExecutor
from flowcore.search.block_search import BlockSearch
from flowcore.secrets import NO_REDACTION, Redactor
from flowcore.server.clarify_store import ClarifyStore, ClarifyThread
from flowcore.server.errors import ConflictError, NotFoundError
from flowcore.server.executor import ServerExecutor
from flowcore.thinker.api import ClarifyResult, Thinker, ThinkerRunError
from flowcore.thinker.clarifier import user_messages
from flowcore.thinker.setup import default_search, thinker_model

__all__ = ["ClarifyOutcome", "ClarifyThread", "ThinkerService", "build_thinker_service"]


@dataclass(frozen=True, slots=True)
class ClarifyOutcome:
    """A Clarifier decision on a thread (``result`` None when the run failed: see ``error``).

    Example:
        >>> ClarifyOutcome(ClarifyThread("t", "ada", []), None, "provider down").error
        'provider down'
    """

    thread: ClarifyThread
    result: ClarifyResult | None
    error: str | None = None


class ThinkerService:
    """One Thinker for the app, its port, and the users' clarifying threads.

    Example:
        >>> # service = ThinkerService(thinker, port, search, ClarifyStore(db))
        >>> # outcome = await service.clarify_answer("ada", thread_id, "a weekly report")
    """

    def __init__(
        self,
        thinker: Thinker,
        port: InProcExecutor,
        search: BlockSearch | None,
        threads: ClarifyStore,
    ) -> None:
        self.thinker = thinker
        self.port = port
        self.search = search
        self.threads = threads
        # One lock per thread id while someone holds it, so answers to one thread take turns.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` ran (the server stopped).

        Example:
            >>> # service.closed
            >>> # False
        """
        return self._closed

    async def aclose(self) -> None:
        """Stop the Thinker runs still going (safe to call twice).

        Example:
            >>> # await service.aclose()  # on server shutdown
        """
        if self._closed:
            return
        self._closed = True
        await self.thinker.aclose()
        await self.port.aclose()

    async def thread(self, user_id: str, thread_id: str) -> ClarifyThread:
        """The caller's clarifying thread; :class:`NotFoundError` for anyone else's or none.

        Example:
            >>> # await service.thread("ada", "clarify-1a2b")
        """
        found = await self.threads.get(thread_id)
        if found is None or found.user_id != user_id:
            raise NotFoundError(
                f"no clarifying thread {thread_id!r} for this API key's user; start one with "
                'POST /api/clarify {"intent": "..."}'
            )
        return found

    def _lock(self, thread_id: str) -> asyncio.Lock:
        lock = self._locks.get(thread_id)
        if lock is None:
            lock = self._locks[thread_id] = asyncio.Lock()
        return lock

    async def clarify_new(
        self, user_id: str, messages: Sequence[Mapping[str, Any]]
    ) -> ClarifyOutcome:
        """Start a conversation with ``messages`` and ask the Clarifier about it.

        Example:
            >>> # await service.clarify_new("ada", [{"role": "user", "content": "research"}])
        """
        thread = ClarifyThread(
            f"clarify-{uuid.uuid4().hex[:16]}", user_id, [dict(m) for m in messages]
        )
        outcome = await self._decide(thread)
        # Kept only once the conversation proved well-formed (the Clarifier checks it).
        await self.threads.save(thread)
        await self.threads.prune()
        return outcome

    async def clarify_answer(self, user_id: str, thread_id: str, answer: str) -> ClarifyOutcome:
        """Add the person's ``answer`` to the pending question on the thread, then decide again.

        Raises:
            NotFoundError: no such thread for ``user_id``.
            ConflictError: the thread is ready already (nothing to answer).

        Example:
            >>> # await service.clarify_answer("ada", "clarify-1a2b", "a news article")
        """
        async with self._lock(thread_id):
            # Read under the lock: an answer that held it before may have changed the thread.
            thread = await self.thread(user_id, thread_id)
            if thread.ready:
                raise ConflictError(
                    f"clarifying thread {thread_id!r} is ready already (no question is "
                    "pending); use its refined_intent with POST /api/create-agent"
                )
            asked = thread.question or "Can you say more?"
            before = list(thread.messages)
            thread.messages += [
                {"role": "assistant", "content": asked},
                {"role": "user", "content": answer},
            ]
            outcome = await self._decide(thread)
            if outcome.result is None:
                thread.messages = before  # the answer can be sent again
            else:
                await self.threads.save(thread)
            return outcome

    async def _decide(self, thread: ClarifyThread) -> ClarifyOutcome:
        try:
            result = await self.thinker.clarify(thread.messages, user_id=thread.user_id)
        except ThinkerRunError as exc:
            return ClarifyOutcome(thread, None, str(exc))
        thread.ready = result.ready
        thread.question = result.question
        return ClarifyOutcome(thread, result)

    def user_messages(self, thread: ClarifyThread) -> int:
        """How many messages the person wrote on ``thread``.

        Example:
            >>> # service.user_messages(thread)
            >>> # 2
        """
        return user_messages(thread.messages)


def _thinker_providers(registry: ProviderRegistry) -> ProviderRegistry:
    """The same providers, each as the Thinker asks it (the offline one becomes ThinkerModel)."""
    return ProviderRegistry(
        {name: thinker_model(p) for name, p in registry.providers.items()},
        default=registry.default,
        default_model=registry.default_model,
        models=dict(registry.models),
    )


def build_thinker_service(
    blocks: BlockStore,
    executor: ServerExecutor,
    *,
    threads: ClarifyStore,
    history: RunHistory | None = None,
    redactor: Redactor = NO_REDACTION,
) -> ThinkerService | None:
    """The app's Thinker on its registry and runner; None when the executor has no runner.

    ``threads`` keeps the clarifying conversations (in the server database).

    Example:
        >>> # service = build_thinker_service(ws.blocks, executor, threads=ClarifyStore(db))
    """
    runner = executor.runner
    if runner is None:
        return None
    block_executor = copy.copy(runner.executor)
    if block_executor.providers is not None:
        # Same tools, sandbox and memory as the server's runs; only the model differs.
        block_executor.providers = _thinker_providers(block_executor.providers)
    search = (
        default_search(blocks)
        if isinstance(blocks, SqliteBlockStore | PostgresBlockStore)
        else None
    )
    # Thinker runs are recorded like any run (history), so their tokens show.
    port = InProcExecutor(history=history, redactor=redactor)
    thinker = Thinker(blocks, block_executor, search, runner.checkpointer, runner=runner, port=port)
    return ThinkerService(thinker, port, search, threads)
