"""``MemoryManager``: the two memories every agent needs, on top of any ``Store``.

A user's **preferences** live in ``("users", user_id, "preferences")``, one
key per preference. Each agent's **run history** for a user lives in
``("users", user_id, "agents", agent_id, "history")``, one summary per run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowcore.memory.store import Namespace, Store

__all__ = ["MemoryManager"]


@dataclass(frozen=True, slots=True)
class MemoryManager:
    """Preferences and per-agent run history of users, kept in ``store``.

    Example:
        >>> import asyncio
        >>> from flowcore.memory import InMemoryStore
        >>> memory = MemoryManager(InMemoryStore())
        >>> asyncio.run(memory.update_preferences("ada", {"food": "tacos"}))
        >>> asyncio.run(memory.preferences("ada"))
        {'food': 'tacos'}
    """

    store: Store

    @staticmethod
    def preferences_namespace(user_id: str) -> Namespace:
        """Where a user's preferences live.

        Example:
            >>> MemoryManager.preferences_namespace("ada")
            ('users', 'ada', 'preferences')
        """
        return ("users", user_id, "preferences")

    @staticmethod
    def history_namespace(user_id: str, agent_id: str) -> Namespace:
        """Where an agent's run summaries for a user live.

        Example:
            >>> MemoryManager.history_namespace("ada", "lunch")
            ('users', 'ada', 'agents', 'lunch', 'history')
        """
        return ("users", user_id, "agents", agent_id, "history")

    async def preferences(self, user_id: str) -> dict[str, Any]:
        """Every preference of ``user_id`` as one dict.

        Example:
            >>> # prefs = await memory.preferences("ada")
        """
        items = await self.store.list(self.preferences_namespace(user_id))
        return {item.key: item.value for item in sorted(items, key=lambda i: i.key)}

    async def update_preferences(self, user_id: str, changes: Mapping[str, Any]) -> None:
        """Set each preference in ``changes`` (others are kept).

        Example:
            >>> # await memory.update_preferences("ada", {"food": "sushi"})
        """
        namespace = self.preferences_namespace(user_id)
        for key, value in changes.items():
            await self.store.put(namespace, key, value)

    async def record_run(
        self, user_id: str, agent_id: str, run_id: str, summary: Mapping[str, Any]
    ) -> None:
        """Remember one run of ``agent_id`` for ``user_id``.

        Example:
            >>> # await memory.record_run("ada", "lunch", "run-1", {"ordered": "burrito"})
        """
        # Nanoseconds: two runs recorded back to back still sort in order.
        now = time.time_ns()
        record = {"run_id": run_id, "at": now / 1e9, "at_ns": now, **summary}
        await self.store.put(self.history_namespace(user_id, agent_id), run_id, record)

    async def history(
        self, user_id: str, agent_id: str, *, limit: int = 10
    ) -> list[dict[str, Any]]:
        """The latest run summaries of ``agent_id`` for ``user_id``, newest first.

        Example:
            >>> # last = (await memory.history("ada", "lunch", limit=1))[0]
        """
        items = await self.store.list(self.history_namespace(user_id, agent_id))
        records = [dict(item.value) for item in items if isinstance(item.value, dict)]
        records.sort(key=lambda r: -int(r.get("at_ns", 0)))
        return records[:limit]
