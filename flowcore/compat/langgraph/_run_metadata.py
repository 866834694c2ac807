"""Which of a run's ``configurable`` values its nodes' metadata shows.

LangGraph copies a few identifying ``configurable`` keys (the thread, the
checkpoint, the task, the run, the assistant and graph of a LangGraph server)
into the metadata every node run carries, so that stream consumers (the
``messages`` mode) and tracers see them; any other key (settings, secrets)
stays out. A key the run's own ``metadata`` already has keeps that value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SHOWN_KEYS", "shown_configurable"]

SHOWN_KEYS: tuple[str, ...] = (
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
)
"""The ``configurable`` keys a node's metadata shows (when their value is set)."""


def shown_configurable(configurable: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata entries ``configurable`` gives a node run.

    Example:
        >>> shown_configurable({"thread_id": "t1", "api_key": "s", "checkpoint_id": None})
        {'thread_id': 't1'}
    """
    if not configurable:
        return {}
    return {key: configurable[key] for key in SHOWN_KEYS if configurable.get(key)}
