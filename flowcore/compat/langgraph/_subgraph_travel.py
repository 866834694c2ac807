"""Addressing a subgraph's checkpoint from its root graph: time travel into subgraphs.

A subgraph's checkpoint records, in its metadata's ``parents``, the checkpoint
each enclosing graph stood at when it was made (by namespace, the root's under
``""``). A snapshot's config carries that map as ``checkpoint_map``, with the
snapshot's own namespace added, as LangGraph's does. Handing such a config back
to the root graph:

* ``invoke(None, sub_config)`` replays the root from the checkpoint the map
  names for ``""``; each subgraph on the way whose namespace the map names
  loads exactly that checkpoint and replays from it (its finished tasks rerun,
  its answered questions are asked again);
* ``update_state(sub_config, values)`` and ``get_state(sub_config)`` act on the
  subgraph the namespace names, with the root's saver, and the config returned
  carries the map on to the new checkpoint.

Namespaces are ``|``-joined ``node:task_id`` parts; a ``checkpointer=True``
subgraph's drops the task ids (see ``CompiledStateGraph._history_ns``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowcore.compat.langgraph._subgraph_detect import iter_subgraphs

__all__ = [
    "CHECKPOINT_MAP",
    "address_root",
    "child_map",
    "stable_ns",
    "subgraph_at",
    "with_checkpoint_map",
]

CHECKPOINT_MAP = "checkpoint_map"
"""The configurable key of the namespace -> checkpoint id map."""


def address_root(configurable: Mapping[str, Any]) -> dict[str, Any]:
    """A root run's configurable for a config that names a subgraph's namespace.

    The root runs under ``""``: it loads the checkpoint the map names for
    ``""`` (its newest if none), and keeps the map for the subgraphs it enters.

    Example:
        >>> address_root({"thread_id": "t", "checkpoint_ns": "sub", "checkpoint_id": "2",
        ...               "checkpoint_map": {"": "1", "sub": "2"}})["checkpoint_id"]
        '1'
    """
    conf = dict(configurable)
    if not conf.get("checkpoint_ns"):
        return conf
    conf["checkpoint_ns"] = ""
    conf.pop("checkpoint_id", None)
    root_id = (conf.get(CHECKPOINT_MAP) or {}).get("")
    if root_id is not None:
        conf["checkpoint_id"] = root_id
    return conf


def child_map(
    configurable: Mapping[str, Any], parent_ns: str, parent_id: str | None
) -> dict[str, Any]:
    """The map a subgraph entered by a run (namespace ``parent_ns``, at ``parent_id``) sees.

    Example:
        >>> child_map({"checkpoint_map": {"": "1", "a": "2"}}, "", "3")
        {'': '3', 'a': '2'}
    """
    found = dict(configurable.get(CHECKPOINT_MAP) or {})
    if parent_id is not None:
        found[parent_ns] = parent_id
    return found


def with_checkpoint_map(
    config: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None
) -> Any:
    """``config`` with the ``checkpoint_map`` its checkpoint's metadata implies.

    Only a checkpoint whose metadata names parents gets one: the parents and
    the checkpoint's own namespace and id.

    Example:
        >>> with_checkpoint_map({"configurable": {"checkpoint_ns": "s", "checkpoint_id": "2"}},
        ...                     {"parents": {"": "1"}})["configurable"]["checkpoint_map"]
        {'': '1', 's': '2'}
    """
    parents = (metadata or {}).get("parents")
    if config is None or not parents:
        return config
    conf = dict(config.get("configurable") or {})
    conf[CHECKPOINT_MAP] = {**parents, conf.get("checkpoint_ns", ""): conf.get("checkpoint_id")}
    return {**dict(config), "configurable": conf}


def stable_ns(ns: str) -> str:
    """Namespace ``ns`` without task ids (and the numbered parts of repeated calls).

    Example:
        >>> stable_ns("research:1f2a|review:9c|3")
        'research|review'
    """
    return "|".join(part.split(":")[0] for part in ns.split("|") if part and not part.isdigit())


def subgraph_at(graph: Any, ns: str) -> Any | None:
    """The subgraph of ``graph`` (declared or detected) that namespace ``ns`` names, or ``None``.

    Example:
        >>> subgraph_at(object(), "") is None
        True
    """
    if not ns:
        return None
    for _, found in iter_subgraphs(graph, stable_ns(ns), recurse=True):
        return found
    return None
