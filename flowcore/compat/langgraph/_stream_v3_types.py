"""The v3 stream protocol's envelope and extension point (LangGraph's ``langgraph.stream``).

A v3 run (``stream_events(version="v3")``) reads the graph's v2 stream parts
(``{"type", "ns", "data"}``, themselves a projection of the run's one record
stream, see ``_records``) and wraps each in a :class:`ProtocolEvent`. Every
event then passes through the run's transformers (:class:`StreamTransformer`),
which build projections (mostly :class:`~._stream_v3_channel.StreamChannel`
objects) a caller iterates.

Example:
    >>> event = convert_to_protocol_event({"type": "values", "ns": ("a:1",), "data": {}})
    >>> event["method"], event["params"]["namespace"]
    ('values', ['a:1'])
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, ClassVar, Literal, NotRequired

from typing_extensions import TypedDict

__all__ = [
    "ProtocolEvent",
    "ProtocolEventParams",
    "StreamTransformer",
    "TransformerFactory",
    "convert_to_protocol_event",
    "transformer_requires_async",
]

_log = logging.getLogger(__name__)


class ProtocolEventParams(TypedDict):
    """What an event carries: where it comes from, when (wall-clock ms), and its data."""

    namespace: list[str]
    timestamp: int
    data: Any
    interrupts: NotRequired[tuple[Any, ...]]


class ProtocolEvent(TypedDict):
    """One event of a v3 run: a stream part in a uniform envelope.

    ``method`` is the stream mode (``values``, ``messages``, ...) or a
    transformer channel's name; ``seq`` is the root mux's running number.
    """

    type: Literal["event"]
    event_id: NotRequired[str]
    seq: NotRequired[int]
    method: str
    params: ProtocolEventParams


def convert_to_protocol_event(part: Mapping[str, Any]) -> ProtocolEvent:
    """Wrap a v2 stream part (``type``, ``ns``, ``data``, maybe ``interrupts``) as an event.

    Example:
        >>> convert_to_protocol_event({"type": "custom", "ns": (), "data": 1})["params"]["data"]
        1
    """
    params: ProtocolEventParams = {
        "namespace": list(part["ns"]),
        "timestamp": int(time.time() * 1000),
        "data": part["data"],
    }
    if "interrupts" in part:
        params["interrupts"] = part["interrupts"]
    return {"type": "event", "method": part["type"], "params": params}


class StreamTransformer(ABC):
    """A projection of a v3 run's events; subclass it to add your own.

    ``init()`` returns the projection (a dict; its keys become
    ``run.extensions`` entries, and attributes of the run when the class sets
    ``_native = True``). ``process(event)`` sees every event in order and
    returns whether the event stays in the run's main log. ``finalize`` /
    ``fail`` run when the run ends. The async lane (``aprocess``,
    ``afinalize``, ``afail``, :meth:`schedule`) works only under
    ``astream_events``.

    Class attributes: ``requires_async`` (needs an event loop),
    ``supports_sync`` (overrides async hooks yet works sync),
    ``required_stream_modes`` (the graph stream modes it reads; a run asks the
    graph for the union), ``before_builtins`` (registered before the rest).
    """

    requires_async: ClassVar[bool] = False
    supports_sync: ClassVar[bool] = False
    required_stream_modes: ClassVar[tuple[str, ...]] = ()
    before_builtins: ClassVar[bool] = False

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        self.scope: tuple[str, ...] = scope

    @abstractmethod
    def init(self) -> dict[str, Any]:
        """The projection: name -> channel (or any object)."""

    def _on_register(self, mux: Any) -> None:  # noqa: B027 - an optional hook
        """Hook called once the mux has wired this transformer in."""

    def process(self, event: ProtocolEvent) -> bool:
        """See one event (sync lane); True keeps it in the main log."""
        raise NotImplementedError(f"{type(self).__name__} must override process() or aprocess()")

    async def aprocess(self, event: ProtocolEvent) -> bool:
        """See one event (async lane); by default the sync ``process``."""
        return self.process(event)

    def finalize(self) -> None:  # noqa: B027 - an optional hook
        """The run ended normally (sync lane)."""

    async def afinalize(self) -> None:
        """The run ended normally (async lane); by default ``finalize``."""
        self.finalize()

    def fail(self, err: BaseException) -> None:  # noqa: B027 - an optional hook
        """The run ended with ``err`` (sync lane)."""

    async def afail(self, err: BaseException) -> None:
        """The run ended with ``err`` (async lane); by default ``fail``."""
        self.fail(err)

    def schedule(
        self,
        coro: Coroutine[Any, Any, Any],
        *,
        on_error: Literal["log", "raise"] = "log",
    ) -> asyncio.Task[Any]:
        """Run ``coro`` as a task the mux awaits before finishing (cancels on failure).

        With ``on_error="log"`` an exception of the task is logged, not raised.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                f"{type(self).__name__}.schedule() requires a running event loop: use "
                "astream_events(version='v3'), and set requires_async=True on the class."
            ) from None
        task = asyncio.ensure_future(_logged(coro) if on_error == "log" else coro)
        pending = self._scheduled()
        pending.add(task)
        task.add_done_callback(pending.discard)
        return task

    def _scheduled(self) -> set[asyncio.Task[Any]]:
        pending: set[asyncio.Task[Any]] | None = self.__dict__.get("_stream_scheduled_tasks")
        if pending is None:
            pending = set()
            self.__dict__["_stream_scheduled_tasks"] = pending
        return pending


async def _logged(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        return await coro
    except asyncio.CancelledError:
        raise
    except BaseException:
        _log.exception("A scheduled StreamTransformer task failed")
        return None


def transformer_requires_async(transformer: StreamTransformer) -> bool:
    """Whether ``transformer`` can only run under an event loop.

    Example:
        >>> class T(StreamTransformer):
        ...     def init(self): return {}
        ...     def process(self, event): return True
        >>> transformer_requires_async(T())
        False
    """
    if transformer.requires_async:
        return True
    if transformer.supports_sync:
        return False
    cls = type(transformer)
    return any(
        getattr(cls, name) is not getattr(StreamTransformer, name)
        for name in ("aprocess", "afinalize", "afail")
    )


#: Builds a transformer for a mux's scope (a transformer class is one).
TransformerFactory = Callable[[tuple[str, ...]], StreamTransformer]
