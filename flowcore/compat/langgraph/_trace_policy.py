"""``TracePolicy``: what a node's own trace run records of its input and output.

A node added with ``trace_policy=TracePolicy(process_inputs=..., process_outputs=...)``
runs on its real input and returns its real output; only the tracers among the
run's LangChain callback handlers (``BaseTracer`` subclasses that are not
stream handlers, e.g. LangSmith's) record what the processors make of them.
Other handlers, and ``astream_events``, see the real values. A processor
that raises is ignored: the real value is recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TracePolicy", "omit_payload", "recorded_payload"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TracePolicy:
    """How a node's trace run records its input and output.

    Example:
        >>> policy = TracePolicy(process_inputs=lambda _: {"omitted": True})
        >>> recorded_payload({"big": 1}, policy.process_inputs)
        {'omitted': True}
    """

    process_inputs: Callable[[Any], Any] | None = None
    process_outputs: Callable[[Any], Any] | None = None


def omit_payload(_value: Any) -> dict[str, Any]:
    """A processor that records an empty payload (the run and its timing stay).

    Example:
        >>> omit_payload({"messages": []})
        {}
    """
    return {}


def recorded_payload(value: Any, process: Callable[[Any], Any] | None) -> Any:
    """What a tracer records for ``value``: ``process(value)``, or ``value`` itself.

    ``value`` is returned as it is (the same object) when there is no processor
    or the processor raises.

    Example:
        >>> recorded_payload(3, None)
        3
        >>> recorded_payload(3, lambda _: 1 / 0)
        3
    """
    if process is None:
        return value
    try:
        return process(value)
    except Exception:
        _log.exception("a TracePolicy processor raised; recording the real payload")
        return value
