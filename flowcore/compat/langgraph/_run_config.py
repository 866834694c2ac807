"""What a top-level compat run takes from its config before it starts, as LangGraph does.

* A graph with a saver refuses a config that names no thread (an empty
  ``configurable``), unless it runs inside another graph's node.
* The ids the config names (see :mod:`._run_metadata`) join the run's metadata.
* A runtime seeded under ``configurable["__pregel_runtime"]`` by a layer outside
  the run (a server) gives the run its store, and its context when the call
  passes none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowcore.compat.langgraph._context import running_scope
from flowcore.compat.langgraph._run_metadata import shown_configurable

__all__ = ["RUNTIME_SLOT", "run_config", "seeded_runtime"]

RUNTIME_SLOT = "__pregel_runtime"
"""The configurable key under which a caller may seed a runtime (its context and store)."""


def run_config(config: Mapping[str, Any] | None, *, has_saver: bool) -> dict[str, Any]:
    """A copy of a top-level run's ``config``, its metadata showing the ids it names.

    Raises:
        ValueError: The graph has a saver and ``config`` names no thread.

    Example:
        >>> run_config({"configurable": {"thread_id": "t"}}, has_saver=True)["metadata"]
        {'thread_id': 't'}
    """
    made = dict(config or {})
    configurable = made.get("configurable") or {}
    if has_saver and not configurable and running_scope() is None:
        raise ValueError(
            "Checkpointer requires one or more of the following 'configurable' "
            "keys: thread_id, checkpoint_ns, checkpoint_id"
        )
    shown = shown_configurable(configurable)
    if shown:
        made["metadata"] = {**shown, **(made.get("metadata") or {})}
    return made


def seeded_runtime(config: Mapping[str, Any]) -> Any:
    """The runtime a caller seeded in ``config`` (None: none).

    Example:
        >>> seeded_runtime({"configurable": {RUNTIME_SLOT: "rt"}})
        'rt'
    """
    return (config.get("configurable") or {}).get(RUNTIME_SLOT)
