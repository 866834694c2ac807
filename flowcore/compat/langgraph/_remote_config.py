"""What a ``RemoteGraph`` sends to a LangGraph server and makes of its answers.

The server takes JSON only, and owns its own checkpoints: a config bound for
it keeps plain values (strings, numbers, booleans, UUIDs, and dicts and lists
of them) and loses the keys that locate a checkpoint of the *calling* graph.
Thread states come back as plain dicts and become :class:`StateSnapshot`\\ s.

Example:
    >>> sanitize_config({"tags": ["a", 1], "configurable": {"checkpoint_ns": "x", "k": 2}})
    {'tags': ['a'], 'configurable': {'k': 2}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from flowcore.compat.langgraph._langchain import require_langchain_module
from flowcore.compat.langgraph._types import Interrupt, PregelTask, StateSnapshot

__all__ = [
    "DROPPED_CONFIGURABLE",
    "checkpoint_of",
    "config_of",
    "drawable_graph",
    "merge_configs",
    "sanitize_config",
    "sanitize_value",
    "snapshot_of",
]

#: ``configurable`` keys that locate the caller's own checkpoint or task: never sent.
DROPPED_CONFIGURABLE: frozenset[str] = frozenset(
    {
        "checkpoint_map",
        "checkpoint_id",
        "checkpoint_ns",
        "__pregel_task_id",
        "__pregel_strict_resume",
    }
)

_CHECKPOINT_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")


def sanitize_value(value: Any) -> Any:
    """``value`` with everything that is not JSON-like left out (None when nothing is left).

    Dict entries with non-string keys are dropped; tuples become lists.

    Example:
        >>> sanitize_value({"a": (1, print), 2: "x"})
        {'a': [1]}
    """
    if isinstance(value, str | int | float | bool | UUID):
        return value
    if isinstance(value, Mapping):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                continue
            clean = sanitize_value(item)
            if clean is not None:
                kept[key] = clean
        return kept
    if isinstance(value, list | tuple):
        return [clean for clean in map(sanitize_value, value) if clean is not None]
    return None


def _sanitized_mapping(source: Mapping[Any, Any], drop: frozenset[str]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, item in source.items():
        if not isinstance(key, str) or key in drop:
            continue
        clean = sanitize_value(item)
        if clean is not None:
            kept[key] = clean
    return kept


def sanitize_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``config`` a server can take: recursion limit, string tags, plain
    metadata and plain ``configurable`` values (without checkpoint-locating keys).

    Example:
        >>> sanitize_config({"recursion_limit": 5, "callbacks": []})
        {'recursion_limit': 5}
    """
    sanitized: dict[str, Any] = {}
    if "recursion_limit" in config:
        sanitized["recursion_limit"] = config["recursion_limit"]
    if "tags" in config:
        sanitized["tags"] = [tag for tag in config["tags"] or () if isinstance(tag, str)]
    if "metadata" in config:
        sanitized["metadata"] = _sanitized_mapping(config["metadata"] or {}, frozenset())
    if "configurable" in config:
        sanitized["configurable"] = _sanitized_mapping(
            config["configurable"] or {}, DROPPED_CONFIGURABLE
        )
    return sanitized


def merge_configs(*configs: Mapping[str, Any] | None) -> dict[str, Any]:
    """``configs`` merged left to right: ``metadata`` and ``configurable`` key by key,
    ``tags`` as a sorted union, anything else replaced; ``configurable`` is
    always there.

    Example:
        >>> merge_configs({"configurable": {"a": 1}, "tags": ["x"]},
        ...               {"configurable": {"b": 2}, "tags": ["w"]})
        {'configurable': {'a': 1, 'b': 2}, 'tags': ['w', 'x']}
        >>> merge_configs(None)
        {'configurable': {}}
    """
    merged: dict[str, Any] = {}
    for config in configs:
        if not config:
            continue
        for key, value in config.items():
            if key in ("metadata", "configurable") and value is not None:
                merged[key] = {**(merged.get(key) or {}), **value}
            elif key == "tags" and value is not None:
                merged[key] = sorted(set(merged.get(key) or ()) | set(value))
            else:
                merged[key] = value
    merged.setdefault("configurable", {})
    return merged


def checkpoint_of(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The server's checkpoint locator for ``config`` (None when it names none).

    Example:
        >>> checkpoint_of({"configurable": {"thread_id": "t", "user": "u"}})
        {'thread_id': 't'}
    """
    if config is None:
        return None
    configurable = config.get("configurable") or {}
    found = {key: configurable[key] for key in _CHECKPOINT_KEYS if key in configurable}
    return found or None


def config_of(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The local config that names the server checkpoint ``checkpoint``.

    Example:
        >>> config_of({"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "1"})["configurable"]
        {'thread_id': 't', 'checkpoint_ns': '', 'checkpoint_id': '1', 'checkpoint_map': {}}
    """
    return {
        "configurable": {
            "thread_id": checkpoint["thread_id"],
            "checkpoint_ns": checkpoint["checkpoint_ns"],
            "checkpoint_id": checkpoint["checkpoint_id"],
            "checkpoint_map": checkpoint.get("checkpoint_map", {}),
        }
    }


def _task_of(task: Mapping[str, Any]) -> PregelTask:
    state: Any = None
    if task.get("state"):
        state = snapshot_of(task["state"])
    elif task.get("checkpoint"):
        state = {"configurable": task["checkpoint"]}
    return PregelTask(
        id=task["id"],
        name=task["name"],
        path=(),
        error=Exception(task["error"]) if task.get("error") else None,
        interrupts=tuple(Interrupt(**i) for i in task.get("interrupts") or ()),
        state=state,
        result=task.get("result"),
    )


def snapshot_of(state: Mapping[str, Any]) -> StateSnapshot:
    """The :class:`StateSnapshot` of a thread state the server returned.

    Example:
        >>> snap = snapshot_of({"values": {"n": 1}, "next": ["a"], "tasks": [],
        ...     "checkpoint": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"},
        ...     "metadata": {}, "created_at": None, "parent_checkpoint": None})
        >>> snap.next, snap.parent_config
        (('a',), None)
    """
    tasks = tuple(_task_of(task) for task in state.get("tasks") or ())
    parent = state.get("parent_checkpoint")
    return StateSnapshot(
        values=state["values"],
        next=tuple(state["next"]) if state.get("next") else (),
        config=config_of(state["checkpoint"]),
        metadata=dict(state.get("metadata") or {}),
        created_at=state.get("created_at"),
        parent_config=config_of(parent) if parent else None,
        tasks=tasks,
        interrupts=tuple(i for task in tasks for i in task.interrupts),
    )


def drawable_graph(graph: Mapping[str, Any]) -> Any:
    """LangChain's drawable graph of the server's graph JSON (``langchain_core`` needed).

    A node's name is its own ``name``, else its data's ``name``, else its id.
    """
    drawing = require_langchain_module("runnables.graph", "RemoteGraph.get_graph")
    Edge, Graph, Node = drawing.Edge, drawing.Graph, drawing.Node

    nodes: dict[str, Any] = {}
    for node in graph["nodes"]:
        node_id = str(node["id"])
        data = node.get("data", {})
        name = node.get("name")
        if name is None:
            name = data.get("name", node_id) if isinstance(data, dict) else node_id
        nodes[node_id] = Node(id=node_id, name=name, data=data, metadata=node.get("metadata"))
    edges = [Edge(**edge) for edge in graph["edges"]]
    return Graph(nodes=nodes, edges=edges)
