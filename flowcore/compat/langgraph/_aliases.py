"""Type aliases of LangGraph's ``langgraph.types`` used in annotations of user code.

They carry no behaviour: a node asks for the stream writer by naming a
``writer`` parameter, and ``durability=``/``stream_mode=`` take plain strings.
The aliases exist so that code annotated with LangGraph's names imports.

Example:
    >>> from typing import get_args
    >>> get_args(Durability)
    ('sync', 'async', 'exit')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias

__all__ = ["Durability", "StreamMode", "StreamWriter"]

Durability: TypeAlias = Literal["sync", "async", "exit"]
"""When a run saves its checkpoints: before each step, alongside it, or at the end."""

StreamMode: TypeAlias = Literal[
    "values", "updates", "checkpoints", "tasks", "debug", "messages", "custom"
]
"""What a ``stream`` call yields."""

StreamWriter: TypeAlias = Callable[[Any], None]
"""The ``writer`` a node receives: call it with a value to stream it in ``custom`` mode."""
