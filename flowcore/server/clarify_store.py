"""The Thinker's clarifying conversations, kept in the server database so a restart keeps them.

One row per conversation (``/api/clarify`` thread): whose it is, the
messages so far, whether the Clarifier found the intent ready and the
question it asked last. Rows live in the server's own tables, so they are
in the SQLite file by default and in Postgres with ``FLOWCORE_DATABASE_URL``,
where every server process behind one database sees the same threads.

Example:
    >>> # store = ClarifyStore(db)
    >>> # await store.save(ClarifyThread("clarify-1", "ada", messages))
    >>> # (await store.get("clarify-1")).user_id  -> 'ada'
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from flowcore.server.schema import ServerDb

__all__ = ["MAX_THREADS", "ClarifyStore", "ClarifyThread"]

MAX_THREADS = 2048
"""Clarifying conversations kept at once; the least recently used is dropped past this."""


@dataclass(slots=True)
class ClarifyThread:
    """One clarifying conversation: whose it is, what was said, whether it is done.

    Example:
        >>> ClarifyThread("t1", "ada", [{"role": "user", "content": "x"}]).ready
        False
    """

    thread_id: str
    user_id: str
    messages: list[dict[str, str]]
    ready: bool = False
    question: str | None = None


class ClarifyStore:
    """Clarifying threads by id: save (insert or replace), get, and a cap on how many are kept.

    Example:
        >>> # await ClarifyStore(db).save(thread)
    """

    def __init__(self, db: ServerDb, *, keep: int = MAX_THREADS) -> None:
        self.db = db
        self.keep = keep

    async def save(self, thread: ClarifyThread) -> None:
        """Store ``thread`` as it is now (replacing what was stored under its id).

        Example:
            >>> # await store.save(thread)
        """
        await self.db.execute(
            "INSERT INTO flowcore_server_clarify "
            "(thread_id, user_id, messages, ready, question, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET "
            "messages = excluded.messages, ready = excluded.ready, "
            "question = excluded.question, updated_at = excluded.updated_at",
            (
                thread.thread_id,
                thread.user_id,
                json.dumps(thread.messages, ensure_ascii=False),
                int(thread.ready),
                thread.question,
                time.time(),
            ),
        )

    async def get(self, thread_id: str) -> ClarifyThread | None:
        """The thread ``thread_id`` as last saved, or None.

        Example:
            >>> # thread = await store.get("clarify-1a2b")
        """
        row = await self.db.fetchone(
            "SELECT thread_id, user_id, messages, ready, question FROM flowcore_server_clarify "
            "WHERE thread_id = ?",
            (thread_id,),
        )
        if row is None:
            return None
        messages = [dict(m) for m in json.loads(row[2])]
        return ClarifyThread(str(row[0]), str(row[1]), messages, bool(row[3]), row[4])

    async def prune(self) -> int:
        """Drop the least recently used threads past ``keep``; returns how many went.

        Example:
            >>> # await store.prune()
        """
        return await self.db.execute(
            "DELETE FROM flowcore_server_clarify WHERE updated_at < (SELECT updated_at FROM "
            "flowcore_server_clarify ORDER BY updated_at DESC LIMIT 1 OFFSET ?)",
            (self.keep - 1,),
        )
