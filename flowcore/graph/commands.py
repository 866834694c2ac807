"""``Send`` and ``Command``: what a router or a node returns to steer a run.

``Send(node, arg)`` starts one task of ``node`` whose input is ``arg``
instead of the state: a router returning one Send per item is a dynamic
map step (map-reduce, when the mapped node's writes go through a reducer).

``Command`` is what a node returns when it wants more than an update:
``Command(update=..., goto=...)`` writes ``update`` and also runs ``goto``;
as a run's input, ``Command(resume=...)`` answers an interrupted thread
like :class:`~flowcore.interrupts.Resume` (and ``update=`` writes into the
thread first).

How both run on a native graph (supersteps, write order, checkpoints) is
described in ``docs/concepts.md``, section "Send and Command".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowcore._shown import shown

__all__ = ["Command", "Send", "split_task_key", "task_key"]


@dataclass(frozen=True, slots=True)
class Send:
    """Start one task of ``node`` with ``arg`` as its input, in the next superstep.

    A router (``add_conditional_edges``) may return a Send, or a list mixing
    node names and Sends; a node may put Sends in ``Command(goto=...)``.
    Several Sends to one node start several tasks; their writes are applied
    in the order the Sends were returned. ``node`` must be a declared target
    of the router (its ``path_map`` or ``Literal[...]``), or of the node's
    ``destinations`` for a goto.

    Example:
        >>> Send("summarize", {"doc": "a.txt"}).node
        'summarize'
    """

    node: str
    arg: Any

    def __post_init__(self) -> None:
        if not isinstance(self.node, str):
            raise TypeError(f"Send(node, arg): node must be a node name, got {shown(self.node)}")


@dataclass(frozen=True, slots=True)
class Command:
    """A node's update plus where to go next; or, as run input, a resume.

    * ``update``: the node's update, checked like any update (a mapping of
      state keys, or None).
    * ``goto``: a node name, a :class:`Send`, or a list of them, run on top
      of the node's static edges and routers. END is allowed and does
      nothing. A target outside the node's ``destinations`` (when declared)
      or not a node of the graph is a :class:`~flowcore.errors.RoutingError`.
    * ``resume``: only as run input, ``run(Command(resume=v), thread_id=t)``
      answers the pending interrupt like ``Resume(v)``; a mapping whose keys
      are all pending interrupt ids answers each by id. ``None`` means "no
      resume" (resume with ``Resume(None)`` to answer None).

    Example:
        >>> Command(update={"n": 1}, goto="next").goto
        'next'
    """

    update: Any = None
    goto: str | Send | Sequence[str | Send] = ()
    resume: Any = None

    def targets(self) -> list[str | Send]:
        """``goto`` as a list, in the order given.

        Example:
            >>> Command(goto=["a", Send("b", 1)]).targets()
            ['a', Send(node='b', arg=1)]
        """
        goto = self.goto
        if isinstance(goto, str | Send):
            return [goto]
        if isinstance(goto, Sequence) and not isinstance(goto, bytes):
            return list(goto)
        return [goto]  # not a target: the caller reports it with the node's name

    def resume_by_id(self, pending_ids: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """``resume`` as answers by interrupt id, if it is a mapping of pending ids only."""
        resume = self.resume
        if isinstance(resume, Mapping) and resume and all(k in pending_ids for k in resume):
            return resume
        return None


TASK_SEPARATOR = "#"
"""Between a node's name and a Send task's index in a task key (never in a node name)."""


def task_key(node: str, index: int | None) -> str:
    """The key a task's pending write is saved under: the node, or ``node#index`` for a Send.

    Example:
        >>> task_key("map", 2), task_key("map", None)
        ('map#2', 'map')
    """
    return node if index is None else f"{node}{TASK_SEPARATOR}{index}"


def split_task_key(key: str) -> tuple[str, int | None]:
    """The node and Send index of a task key (index None for a node's own task).

    Example:
        >>> split_task_key("map#2"), split_task_key("map")
        (('map', 2), ('map', None))
    """
    node, sep, index = key.partition(TASK_SEPARATOR)
    if not sep or not index.isdigit():
        return key, None
    return node, int(index)
