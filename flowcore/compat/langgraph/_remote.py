"""``RemoteGraph``: a graph deployed on a LangGraph server, called like a local one.

It speaks to the server through the ``langgraph_sdk`` clients: the ones the
app passes, or, for a ``url``, made by the SDK the app has imported (flowcore
never loads it by itself, so it imports without the SDK):
``invoke``/``stream`` start a run on the server and stream its parts back,
``get_state``/``update_state``/``get_state_history`` read and edit the
server's threads, ``get_graph`` draws the deployed graph.

Used as a node of a compat graph (``builder.add_node(remote)``) it runs
through the graph's normal node path (a runnable node, see
``_runnable_nodes``); from inside a running task it learns the task's
namespace, so a pause on the server pauses the node, and the parts of the
modes the calling graph streams reach that stream as a subgraph's would.

Example:
    >>> remote = RemoteGraph("agent", config={"configurable": {"user": "u"}})
    >>> remote.with_config({"configurable": {"thread_id": "t"}}).config["configurable"]
    {'user': 'u', 'thread_id': 't'}
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from flowcore.compat.langgraph._remote_config import (
    checkpoint_of,
    config_of,
    drawable_graph,
    merge_configs,
    sanitize_config,
    snapshot_of,
)
from flowcore.compat.langgraph._remote_parts import (
    ParentLink,
    PartRouter,
    RemoteException,
    stream_modes,
)
from flowcore.compat.langgraph._remote_v3 import (
    V3_SUPPORTED_KWARGS,
    RemoteEventStreams,
    merge_tracing_headers,
)
from flowcore.compat.langgraph._stream_v3 import GraphOutput
from flowcore.compat.langgraph._types import Command, StateSnapshot

__all__ = ["V3_SUPPORTED_KWARGS", "RemoteException", "RemoteGraph", "merge_tracing_headers"]

logger = logging.getLogger(__name__)


def _command_fields(command: Command[Any]) -> dict[str, Any]:
    return {
        "graph": command.graph,
        "update": command.update,
        "resume": command.resume,
        "goto": command.goto,
    }


class RemoteGraph(RemoteEventStreams):
    """A graph on a LangGraph server (an assistant id or graph name), used as a local graph.

    Give ``url`` (with ``api_key``/``headers``) to make default SDK clients, or
    ``client``/``sync_client`` ready-made ones; the async methods need the
    async client and the sync ones the sync client. ``config`` is merged
    under each call's config; ``name`` (the assistant id by default) names
    the node when the graph is added to another; ``distributed_tracing``
    sends the current LangSmith trace along.
    """

    def __init__(
        self,
        assistant_id: str,
        /,
        *,
        url: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        client: Any = None,
        sync_client: Any = None,
        config: dict[str, Any] | None = None,
        name: str | None = None,
        distributed_tracing: bool = False,
    ) -> None:
        self.assistant_id = assistant_id
        self.name = assistant_id if name is None else name
        self.config = config
        self.distributed_tracing = distributed_tracing
        if url is not None and (client is None or sync_client is None):
            # The app's own SDK: flowcore never loads a langgraph package by itself.
            sdk = sys.modules.get("langgraph_sdk")
            if sdk is None:
                raise ImportError(
                    "RemoteGraph(url=...) uses the app's langgraph_sdk: install it "
                    "(pip install langgraph-sdk) and import it before building the "
                    "RemoteGraph, or pass client=/sync_client="
                )
            get_client, get_sync_client = sdk.get_client, sdk.get_sync_client

            if client is None:
                client = get_client(url=url, api_key=api_key, headers=headers)
            if sync_client is None:
                sync_client = get_sync_client(url=url, api_key=api_key, headers=headers)
        self.client = client
        self.sync_client = sync_client

    def __repr__(self) -> str:
        return f"RemoteGraph({self.assistant_id!r}, name={self.name!r})"

    # ----------------------------------------------------------- set-up
    def _validate_client(self) -> Any:
        if self.client is None:
            raise ValueError(
                "Async client is not initialized: give `url` or `client` to RemoteGraph."
            )
        return self.client

    def _validate_sync_client(self) -> Any:
        if self.sync_client is None:
            raise ValueError(
                "Sync client is not initialized: give `url` or `sync_client` to RemoteGraph."
            )
        return self.sync_client

    def copy(self, update: dict[str, Any]) -> RemoteGraph:
        """A RemoteGraph like this one, with the attributes in ``update`` replaced."""
        attrs = {**self.__dict__, **update}
        return type(self)(attrs.pop("assistant_id"), **attrs)

    def with_config(self, config: dict[str, Any] | None = None, **kwargs: Any) -> RemoteGraph:
        """A copy whose default config is this one's merged with ``config`` and ``kwargs``."""
        return self.copy({"config": merge_configs(self.config, config, kwargs)})

    def _sanitize_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """``config`` as the server takes it (see ``_remote_config.sanitize_config``)."""
        return sanitize_config(config)

    def _thread(self, config: dict[str, Any] | None) -> tuple[dict[str, Any], Any]:
        merged = merge_configs(self.config, config)
        return merged, (merged.get("configurable") or {})["thread_id"]

    # ----------------------------------------------------------- graph and state
    def get_graph(
        self,
        config: dict[str, Any] | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> Any:
        """The deployed graph's drawing (``GET /assistants/{id}/graph``); ``config`` is unused."""
        graph = self._validate_sync_client().assistants.get_graph(
            assistant_id=self.assistant_id, xray=xray, headers=headers, params=params
        )
        return drawable_graph(graph)

    async def aget_graph(
        self,
        config: dict[str, Any] | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> Any:
        """The async form of :meth:`get_graph`."""
        graph = await self._validate_client().assistants.get_graph(
            assistant_id=self.assistant_id, xray=xray, headers=headers, params=params
        )
        return drawable_graph(graph)

    def get_state(
        self,
        config: dict[str, Any],
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> StateSnapshot:
        """The state of the server thread ``config`` names (at its checkpoint, if it names one)."""
        merged, thread_id = self._thread(config)
        state = self._validate_sync_client().threads.get_state(
            thread_id=thread_id,
            checkpoint=checkpoint_of(merged),
            subgraphs=subgraphs,
            headers=headers,
            params=params,
        )
        return snapshot_of(state)

    async def aget_state(
        self,
        config: dict[str, Any],
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> StateSnapshot:
        """The async form of :meth:`get_state`."""
        merged, thread_id = self._thread(config)
        state = await self._validate_client().threads.get_state(
            thread_id=thread_id,
            checkpoint=checkpoint_of(merged),
            subgraphs=subgraphs,
            headers=headers,
            params=params,
        )
        return snapshot_of(state)

    def _history_args(
        self,
        config: dict[str, Any],
        filter: dict[str, Any] | None,
        before: dict[str, Any] | None,
        limit: int | None,
        headers: dict[str, str] | None,
        params: Any,
    ) -> dict[str, Any]:
        merged, thread_id = self._thread(config)
        return {
            "thread_id": thread_id,
            "limit": limit or 10,
            "before": checkpoint_of(before),
            "metadata": filter,
            "checkpoint": checkpoint_of(merged),
            "headers": headers,
            "params": params,
        }

    def get_state_history(
        self,
        config: dict[str, Any],
        *,
        filter: dict[str, Any] | None = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> Iterator[StateSnapshot]:
        """The server thread's states, newest first (10 unless ``limit`` says otherwise)."""
        args = self._history_args(config, filter, before, limit, headers, params)
        for state in self._validate_sync_client().threads.get_history(**args):
            yield snapshot_of(state)

    async def aget_state_history(
        self,
        config: dict[str, Any],
        *,
        filter: dict[str, Any] | None = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> AsyncIterator[StateSnapshot]:
        """The async form of :meth:`get_state_history`."""
        args = self._history_args(config, filter, before, limit, headers, params)
        for state in await self._validate_client().threads.get_history(**args):
            yield snapshot_of(state)

    def bulk_update_state(self, config: dict[str, Any], updates: Any) -> dict[str, Any]:
        """Not offered by the server API: raises ``NotImplementedError``."""
        raise NotImplementedError

    async def abulk_update_state(self, config: dict[str, Any], updates: Any) -> dict[str, Any]:
        """Not offered by the server API: raises ``NotImplementedError``."""
        raise NotImplementedError

    def update_state(
        self,
        config: dict[str, Any],
        values: Any,
        as_node: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> dict[str, Any]:
        """Write ``values`` to the server thread as node ``as_node``.

        Returns the config naming the checkpoint the write made.
        """
        merged, thread_id = self._thread(config)
        response = self._validate_sync_client().threads.update_state(
            thread_id=thread_id,
            values=values,
            as_node=as_node,
            checkpoint=checkpoint_of(merged),
            headers=headers,
            params=params,
        )
        return config_of(response["checkpoint"])

    async def aupdate_state(
        self,
        config: dict[str, Any],
        values: Any,
        as_node: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> dict[str, Any]:
        """The async form of :meth:`update_state`."""
        merged, thread_id = self._thread(config)
        response = await self._validate_client().threads.update_state(
            thread_id=thread_id,
            values=values,
            as_node=as_node,
            checkpoint=checkpoint_of(merged),
            headers=headers,
            params=params,
        )
        return config_of(response["checkpoint"])

    # ----------------------------------------------------------- runs
    def _run_request(
        self,
        input: Any,
        config: dict[str, Any] | None,
        options: dict[str, Any],
    ) -> tuple[dict[str, Any], PartRouter]:
        """The ``runs.stream`` arguments of one call, and the router of its parts."""
        parent = ParentLink.find(config)
        parent_modes = parent.modes if parent is not None else []
        sent, requested, single = stream_modes(options.pop("stream_mode"), parent_modes)
        subgraphs = bool(options.pop("subgraphs"))
        router = PartRouter(
            requested,
            single=single,
            subgraphs=subgraphs,
            version=options.pop("version"),
            parent=parent,
        )
        sanitized = sanitize_config(merge_configs(self.config, config))
        thread_id = sanitized.get("configurable", {}).pop("thread_id", None)
        command = None
        if isinstance(input, Command):
            command, input = _command_fields(input), None
        request = {
            "thread_id": thread_id,
            "assistant_id": self.assistant_id,
            "input": input,
            "command": command,
            "config": sanitized,
            "context": options.pop("context"),
            "stream_mode": sent,
            "interrupt_before": options.pop("interrupt_before"),
            "interrupt_after": options.pop("interrupt_after"),
            "stream_subgraphs": subgraphs or (parent is not None and parent.host is not None),
            "if_not_exists": "create",
            "headers": self._headers(options.pop("headers")),
            "params": options.pop("params"),
            **options,
        }
        return request, router

    def stream(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] | None = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Start a run on the server and yield its output as a local graph's ``stream`` does.

        Runs on the thread named by ``configurable.thread_id`` (made if missing),
        else on a new thread. ``"updates"`` is the default mode; other keyword
        arguments go to the SDK's ``runs.stream``.
        """
        request, router = self._run_request(
            input,
            config,
            dict(
                kwargs,
                context=context,
                stream_mode=stream_mode,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
                subgraphs=subgraphs,
                headers=headers,
                params=params,
                version=version,
            ),
        )
        for part in self._validate_sync_client().runs.stream(**request):
            yield from router.route(part.event, part.data, getattr(part, "id", None))

    async def astream(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] | None = None,
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """The async form of :meth:`stream`."""
        client = self._validate_client()
        request, router = self._run_request(
            input,
            config,
            dict(
                kwargs,
                context=context,
                stream_mode=stream_mode,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
                subgraphs=subgraphs,
                headers=headers,
                params=params,
                version=version,
            ),
        )
        async for part in client.runs.stream(**request):
            for item in router.route(part.event, part.data, getattr(part, "id", None)):
                yield item

    @staticmethod
    def _final(last: Any, seen: bool, version: str) -> Any:
        if not seen:
            logger.warning("No events received from remote graph")
            return None
        if version == "v2":
            return GraphOutput(value=last["data"], interrupts=tuple(last.get("interrupts", ())))
        return last

    def invoke(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        """Run on the server until the run ends; its last values (a ``GraphOutput`` for "v2").

        Takes :meth:`stream`'s keyword arguments but ``stream_mode``/``subgraphs``.
        """
        last, seen = None, False
        for chunk in self.stream(input, config, stream_mode="values", version=version, **kwargs):
            last, seen = chunk, True
        return self._final(last, seen, version)

    async def ainvoke(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        """The async form of :meth:`invoke`.

        With a sync client only (a node of a graph run with ``invoke``, as
        LangGraph would call it there), :meth:`invoke` runs in a worker thread.
        """
        if self.client is None and self.sync_client is not None:
            return await asyncio.to_thread(
                functools.partial(self.invoke, input, config, version=version, **kwargs)
            )
        last, seen = None, False
        async for chunk in self.astream(
            input, config, stream_mode="values", version=version, **kwargs
        ):
            last, seen = chunk, True
        return self._final(last, seen, version)
