"""The ``START`` channel of a ``StateGraph``: the run's input, stored as plain data.

A run's input is kept in the input checkpoint so that a replay from that
checkpoint runs its START task again. The input may hold what a saver
cannot store as it is: ``Overwrite`` values (``{"messages": Overwrite([...])}``)
and, on a new thread, the ``Command`` the run was invoked with. This channel
stores those in plain form (``{"__overwrite__": value}``, which every reducer
channel reads as the ``Overwrite`` it stands for, and ``{"__command__": {...}}``)
and reads a stored ``Command`` back as one.
"""

from __future__ import annotations

from typing import Any

from flowcore.compat.langgraph._channels import EphemeralValue
from flowcore.compat.langgraph._types import OVERWRITE, Command, Overwrite

__all__ = ["COMMAND", "InputValue", "plain_input", "restored_input"]

COMMAND = "__command__"
"""The key of a stored ``Command``'s plain form."""

_COMMAND_FIELDS = ("graph", "update", "resume", "goto")


def plain_input(value: Any) -> Any:
    """``value`` with each ``Overwrite`` (in it or in a dict it holds) and a ``Command`` as data.

    Example:
        >>> plain_input({"xs": Overwrite([1])})
        {'xs': {'__overwrite__': [1]}}
    """
    if isinstance(value, Overwrite):
        return {OVERWRITE: value.value}
    if isinstance(value, Command):
        fields = {f: getattr(value, f) for f in _COMMAND_FIELDS}
        fields["update"] = plain_input(fields["update"])
        return {COMMAND: fields}
    if isinstance(value, dict) and any(isinstance(v, Overwrite) for v in value.values()):
        return {k: plain_input(v) for k, v in value.items()}
    return value


def restored_input(stored: Any) -> Any:
    """The inverse of :func:`plain_input` (an ``Overwrite`` stays in its dict form).

    Example:
        >>> restored_input({"__command__": {"update": {"n": 1}}})
        Command(update={'n': 1})
    """
    if isinstance(stored, dict) and len(stored) == 1 and COMMAND in stored:
        fields = stored[COMMAND]
        if isinstance(fields, dict) and set(fields) <= set(_COMMAND_FIELDS):
            goto = fields.get("goto", ())
            return Command(
                graph=fields.get("graph"),
                update=fields.get("update"),
                resume=fields.get("resume"),
                goto=tuple(goto) if isinstance(goto, list) else goto,
            )
    return stored


class InputValue(EphemeralValue):
    """The ``START`` channel: one superstep's input, stored in plain form.

    Example:
        >>> channel = InputValue("__start__")
        >>> channel.update([Command(update={"n": 1})])
        True
        >>> channel.snapshot()
        {'__command__': {'graph': None, 'update': {'n': 1}, 'resume': None, 'goto': ()}}
    """

    __slots__ = ()

    def snapshot(self) -> Any:
        return plain_input(self.value)

    def restore(self, stored: Any) -> None:
        self.value = restored_input(stored)
