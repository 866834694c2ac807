"""The v3 event stream of a run on a LangGraph server (``RemoteGraph.stream_events(version="v3")``).

The SDK's thread stream (``client.threads.stream(...)``) already speaks the
v3 protocol; the classes here give it the surface of a local v3 run stream:
entering starts the run (``run.start``) and remembers its id, the projections
(``values``, ``messages``, ``tool_calls``, ``subgraphs``) are the SDK's,
``extensions`` maps every protocol channel to its projection, and ``abort()``
cancels the run and closes the stream once.

Example:
    >>> translate_command_input(Command(resume="yes"))
    'yes'
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import Any

from flowcore.compat.langgraph._types import Command

__all__ = [
    "AsyncRemoteGraphRunStream",
    "ChannelProjection",
    "ProjectionRegistry",
    "RemoteGraphRunStream",
    "translate_command_input",
]

logger = logging.getLogger(__name__)


def translate_command_input(input: Any) -> Any:
    """The v3 wire input of ``input``: a resume ``Command``'s raw answer, else ``input``.

    The server sees that the thread is paused and wraps the input as the
    answer itself; ``goto`` and ``update`` have no v3 wire form and raise
    ``NotImplementedError``.

    Example:
        >>> translate_command_input({"a": 1})
        {'a': 1}
    """
    if not isinstance(input, Command):
        return input
    for field in ("goto", "update"):
        if getattr(input, field):
            raise NotImplementedError(
                f"RemoteGraph v3 streams take Command(resume=...) only, not `{field}`."
            )
    return input.resume


class ChannelProjection:
    """The ``params.data`` of one channel's events, for channels the SDK does not type.

    Iterate with ``for`` on a sync stream, ``async for`` on an async one; events
    of other channels and events without data are skipped.
    """

    def __init__(self, sdk: Any, channel: str) -> None:
        self._sdk = sdk
        self._channel = channel

    def _data(self, event: Any) -> list[Any]:
        if not isinstance(event, Mapping) or event.get("method") != self._channel:
            return []
        data = (event.get("params") or {}).get("data")
        return [] if data is None else [data]

    def __iter__(self) -> Iterator[Any]:
        for event in self._sdk.subscribe([self._channel]):
            yield from self._data(event)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._aiter()

    async def _aiter(self) -> AsyncIterator[Any]:
        async for event in self._sdk.subscribe([self._channel]):
            for data in self._data(event):
                yield data


class ProjectionRegistry(Mapping[str, Any]):
    """Channel name -> projection, as a local run stream's ``extensions``.

    Typed channels are the SDK's projections, the plain-payload ones
    :class:`ChannelProjection`\\ s, any other name one of the SDK's custom
    extensions. ``lifecycle`` and ``debug`` are not listed.
    """

    TYPED = ("values", "messages", "tool_calls", "subgraphs")
    DECODED = ("updates", "checkpoints", "tasks", "custom")
    NATIVE = TYPED + DECODED

    def __init__(self, sdk: Any) -> None:
        self._sdk = sdk

    def __getitem__(self, name: str) -> Any:
        if name in self.TYPED:
            return getattr(self._sdk, name)
        if name in self.DECODED:
            return ChannelProjection(self._sdk, name)
        return self._sdk.extensions[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.NATIVE)

    def __len__(self) -> int:
        return len(self.NATIVE)


class _RunStreamBase:
    """What both run streams share: the start arguments and the SDK's projections."""

    def __init__(
        self,
        client: Any,
        sdk_thread: Any,
        input: Any,
        config: Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        self._client = client
        self._sdk = sdk_thread
        self._start_kwargs: dict[str, Any] = {
            "input": translate_command_input(input),
            "config": config,
            "metadata": metadata,
        }
        self._run_id: str | None = None
        self._closed = False
        self._events: Any = None

    @property
    def values(self) -> Any:
        """The run's state snapshots, as they come."""
        return self._sdk.values

    @property
    def messages(self) -> Any:
        """The run's messages, as they stream."""
        return self._sdk.messages

    @property
    def subgraphs(self) -> Any:
        """Handles of the subgraph runs the run starts."""
        return self._sdk.subgraphs

    @property
    def tool_calls(self) -> Any:
        """The run's tool executions (the ``tools`` channel)."""
        return self._sdk.tool_calls

    @property
    def extensions(self) -> Mapping[str, Any]:
        """Every channel's projection by name (see :class:`ProjectionRegistry`)."""
        return ProjectionRegistry(self._sdk)

    def _closing(self) -> bool:
        """Mark the stream closed; whether it already was."""
        was = self._closed
        self._closed = True
        return was


class RemoteGraphRunStream(_RunStreamBase):
    """A server run as a sync v3 run stream: ``with rg.stream_events(..., version="v3") as run``."""

    def __init__(
        self,
        *,
        sync_client: Any,
        sdk_thread: Any,
        input: Any,
        config: Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        super().__init__(sync_client, sdk_thread, input, config, metadata)

    def __enter__(self) -> RemoteGraphRunStream:
        if self._closed:
            raise RuntimeError("this remote run stream is closed")
        self._sdk.__enter__()
        try:
            started = self._sdk.run.start(**self._start_kwargs)
        except BaseException as exc:
            self._sdk.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._run_id = started["run_id"]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._closing():
            self._sdk.__exit__(exc_type, exc, tb)

    @property
    def output(self) -> Any:
        """The run's output as the SDK last saw it."""
        return self._sdk.output

    @property
    def interrupted(self) -> bool:
        """Whether the run is paused now (read without waiting for the run to end)."""
        return bool(self._sdk.interrupted)

    @property
    def interrupts(self) -> list[Any]:
        """The run's open pauses now."""
        return list(self._sdk.interrupts)

    def abort(self) -> None:
        """Cancel the run (when it started) and close the stream; later calls do nothing."""
        if self._closing():
            return
        if self._run_id is not None:
            try:
                self._client.runs.cancel(self._sdk.thread_id, self._run_id, wait=False)
            except Exception:
                logger.debug("remote run cancel failed", exc_info=True)
        try:
            self._sdk.close()
        except Exception:
            logger.debug("remote stream close failed", exc_info=True)

    def __iter__(self) -> Iterator[Any]:
        if self._events is None:
            self._events = iter(self._sdk.events)
        events: Iterator[Any] = self._events
        return events

    def interleave(self, *names: str) -> Iterator[tuple[str, Any]]:
        """The items of the projections ``names``, as ``(name, item)`` in arrival order."""
        yield from self._sdk.interleave_projections(list(names))


class AsyncRemoteGraphRunStream(_RunStreamBase):
    """A server run as an async v3 run stream (``async with await rg.astream_events(...)``)."""

    def __init__(
        self,
        *,
        client: Any,
        sdk_thread: Any,
        input: Any,
        config: Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        super().__init__(client, sdk_thread, input, config, metadata)

    async def __aenter__(self) -> AsyncRemoteGraphRunStream:
        if self._closed:
            raise RuntimeError("this remote run stream is closed")
        await self._sdk.__aenter__()
        try:
            started = await self._sdk.run.start(**self._start_kwargs)
        except BaseException as exc:
            await self._sdk.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._run_id = started["run_id"]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._closing():
            await self._sdk.__aexit__(exc_type, exc, tb)

    async def output(self) -> Any:
        """The run's final output, once it ends."""
        return await self._sdk.output

    async def interrupted(self) -> bool:
        """Whether the run is paused now (read without waiting for the run to end)."""
        return bool(self._sdk.interrupted)

    async def interrupts(self) -> list[Any]:
        """The run's open pauses now."""
        return list(self._sdk.interrupts)

    async def abort(self) -> None:
        """Cancel the run (when it started) and close the stream; later calls do nothing."""
        if self._closing():
            return
        if self._run_id is not None:
            try:
                await self._client.runs.cancel(self._sdk.thread_id, self._run_id, wait=False)
            except Exception:
                logger.debug("remote run cancel failed", exc_info=True)
        try:
            await self._sdk.close()
        except Exception:
            logger.debug("remote stream close failed", exc_info=True)

    def __aiter__(self) -> AsyncIterator[Any]:
        if self._events is None:
            self._events = self._sdk.events.__aiter__()
        events: AsyncIterator[Any] = self._events
        return events
