"""Errors of the executor port.

::

    FlowcoreError
    ├── UnknownTargetError (LookupError)   a run names a target the executor does not have
    ├── InvalidTargetError (TypeError)     a run's target is not something the executor runs
    ├── HandleConsumedError (RuntimeError) a handle's events were iterated a second time
    ├── RelayStateError (RuntimeError)     a relay was used out of order (subscribe after start)
    └── EventFormatError (ValueError)      a dict is not a valid serialized AiEvent

The first two never escape :meth:`InProcExecutor.run`: they end the run as
``failed``, with an ``error`` event and ``done``.
"""

from __future__ import annotations

from flowcore.errors import FlowcoreError

__all__ = [
    "EventFormatError",
    "HandleConsumedError",
    "InvalidTargetError",
    "RelayStateError",
    "UnknownTargetError",
]


class UnknownTargetError(FlowcoreError, LookupError):
    """A run request names a target that is not registered with the executor.

    Example:
        >>> UnknownTargetError("no graph named 'chat'").code
        'unknown-target'
    """

    code = "unknown-target"


class InvalidTargetError(FlowcoreError, TypeError):
    """A run request's target is of a kind the executor cannot run (as configured).

    Example:
        >>> InvalidTargetError("target 42 is not a graph").code
        'invalid-target'
    """

    code = "invalid-target"


class HandleConsumedError(FlowcoreError, RuntimeError):
    """A run handle's events can be iterated once; use a ``RunEventRelay`` for several readers.

    Example:
        >>> HandleConsumedError("already iterated").code
        'handle-consumed'
    """

    code = "handle-consumed"


class RelayStateError(FlowcoreError, RuntimeError):
    """A relay was used out of order, e.g. a subscriber added after pumping began.

    Example:
        >>> RelayStateError("subscribe before start()").code
        'relay-state'
    """

    code = "relay-state"


class EventFormatError(FlowcoreError, ValueError):
    """A mapping could not be read back as an AiEvent (unknown type, missing field).

    Example:
        >>> EventFormatError("unknown event type 'nope'").code
        'event-format'
    """

    code = "event-format"
