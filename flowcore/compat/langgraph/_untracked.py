"""What a saver never stores: the writes to ``UntrackedValue`` channels.

An ``UntrackedValue`` key holds what lives only during a run (a lock, a
client session): it is never put in a checkpoint, and neither are the writes
to it, nor its value inside a ``Send`` whose argument is the state (the Send
is stored with that key left out of its argument).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.compat.langgraph._channel_api import UntrackedValue
from flowcore.compat.langgraph._channels import Channel
from flowcore.compat.langgraph._node import TASKS
from flowcore.compat.langgraph._types import Send

__all__ = ["persisted_writes", "stored_sends", "untracked_keys"]


def untracked_keys(channels: Mapping[str, Channel]) -> frozenset[str]:
    """The names of the ``UntrackedValue`` channels among ``channels``.

    Example:
        >>> untracked_keys({"lock": UntrackedValue(object)})
        frozenset({'lock'})
    """
    return frozenset(name for name, ch in channels.items() if isinstance(ch, UntrackedValue))


def persisted_writes(
    writes: Sequence[tuple[str, Any]], untracked: frozenset[str]
) -> list[tuple[str, Any]]:
    """``writes`` as a saver stores them: none to an untracked key, none inside a Send.

    Example:
        >>> persisted_writes([("lock", 1), ("n", 2)], frozenset({"lock"}))
        [('n', 2)]
    """
    kept: list[tuple[str, Any]] = []
    for chan, value in writes:
        if chan in untracked:
            continue
        if chan == TASKS and isinstance(value, Send) and isinstance(value.arg, dict):
            arg = {k: v for k, v in value.arg.items() if k not in untracked}
            if len(arg) != len(value.arg):
                value = Send(value.node, arg, timeout=value.timeout)
        kept.append((chan, value))
    return kept


def stored_sends(stored: list[Any], untracked: frozenset[str]) -> list[Any]:
    """The stored form of the pending ``Send``s (``{"node", "arg", ...}``), untracked keys out.

    Example:
        >>> stored_sends([{"node": "n", "arg": {"lock": 1, "x": 2}}], frozenset({"lock"}))
        [{'node': 'n', 'arg': {'x': 2}}]
    """
    out: list[Any] = []
    for plain in stored:
        arg = plain.get("arg") if isinstance(plain, dict) else None
        if isinstance(arg, dict) and any(k in untracked for k in arg):
            plain = {**plain, "arg": {k: v for k, v in arg.items() if k not in untracked}}
        out.append(plain)
    return out
