"""``RemoteGraph.stream_events(version="v3")``: a server run as a v3 run stream.

The run streams themselves are in ``_remote_run_stream``; this module checks
what the server's v3 streams can do, opens the SDK's thread stream and adds
LangSmith's distributed-tracing headers when asked.

Example:
    >>> sorted(V3_SUPPORTED_KWARGS)
    ['headers', 'metadata']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowcore.compat.langgraph._remote_config import merge_configs, sanitize_config
from flowcore.compat.langgraph._remote_run_stream import (
    AsyncRemoteGraphRunStream,
    RemoteGraphRunStream,
    translate_command_input,
)

__all__ = ["V3_SUPPORTED_KWARGS", "RemoteEventStreams", "merge_tracing_headers"]

#: The keyword arguments ``stream_events(version="v3")`` passes on besides its own.
V3_SUPPORTED_KWARGS: frozenset[str] = frozenset({"metadata", "headers"})


def merge_tracing_headers(headers: dict[str, str] | None) -> dict[str, str] | None:
    """``headers`` with LangSmith's distributed-tracing headers of the current trace added.

    Unchanged outside a trace or without ``langsmith``; a ``baggage`` header
    already given is kept in front of the trace's.
    """
    try:
        import langsmith
    except ImportError:  # pragma: no cover - langsmith comes with langchain_core
        return headers
    tree = langsmith.get_current_run_tree()
    if tree is None:
        return headers
    tracing: dict[str, str] = tree.to_headers()
    if not headers:
        return tracing
    if "baggage" in headers and "baggage" in tracing:
        tracing["baggage"] = f"{headers['baggage']},{tracing['baggage']}"
    headers.update(tracing)
    return headers


class RemoteEventStreams:
    """The v3 event-stream methods of ``RemoteGraph`` (its clients, config and id)."""

    assistant_id: str
    config: dict[str, Any] | None
    distributed_tracing: bool

    def _validate_client(self) -> Any:
        raise NotImplementedError

    def _validate_sync_client(self) -> Any:
        raise NotImplementedError

    def _headers(self, headers: dict[str, str] | None) -> dict[str, str] | None:
        return merge_tracing_headers(headers) if self.distributed_tracing else headers

    def _reject_v3_unsupported(
        self,
        *,
        control: Any,
        transformers: Any,
        interrupt_before: Any,
        interrupt_after: Any,
        extra_kwargs: dict[str, Any],
    ) -> None:
        """Raise ``NotImplementedError`` for what the server's v3 streams cannot do."""
        for name, value in (
            ("control", control),
            ("transformers", transformers),
            ("interrupt_before", interrupt_before),
            ("interrupt_after", interrupt_after),
        ):
            if value:
                raise NotImplementedError(
                    f"RemoteGraph.stream_events(version='v3') does not support `{name}=`."
                )
        unknown = sorted(set(extra_kwargs) - V3_SUPPORTED_KWARGS)
        if unknown:
            raise NotImplementedError(
                f"RemoteGraph.stream_events(version='v3') does not support {unknown!r}; "
                f"it supports {sorted(V3_SUPPORTED_KWARGS)!r}."
            )

    def _v3_thread(
        self,
        client: Any,
        config: dict[str, Any] | None,
        headers: dict[str, str] | None,
    ) -> tuple[Any, dict[str, Any]]:
        sanitized = sanitize_config(merge_configs(self.config, config))
        thread_id = sanitized.get("configurable", {}).pop("thread_id", None)
        sdk_thread = client.threads.stream(
            thread_id=thread_id,
            assistant_id=self.assistant_id,
            headers=self._headers(headers),
        )
        return sdk_thread, sanitized

    def stream_events(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        version: str = "v2",
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        control: Any = None,
        transformers: Sequence[Any] | None = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """A v3 run stream of a server run (``with rg.stream_events(..., version="v3") as run``).

        Only ``version="v3"`` is served; the input may be a ``Command(resume=...)``.
        """
        if version != "v3":
            raise NotImplementedError(
                f"RemoteGraph.stream_events(version={version!r}) is not implemented; "
                "use stream() or version='v3'."
            )
        self._reject_v3_unsupported(
            control=control,
            transformers=transformers,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            extra_kwargs=kwargs,
        )
        sync_client = self._validate_sync_client()
        translate_command_input(input)  # a goto/update Command fails before any server call
        sdk_thread, sanitized = self._v3_thread(sync_client, config, headers)
        return RemoteGraphRunStream(
            sync_client=sync_client,
            sdk_thread=sdk_thread,
            input=input,
            config=sanitized,
            metadata=kwargs.get("metadata"),
        )

    async def astream_events(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        version: str = "v2",
        interrupt_before: Any = None,
        interrupt_after: Any = None,
        control: Any = None,
        transformers: Sequence[Any] | None = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """The async form of :meth:`stream_events`: awaits to an async v3 run stream."""
        if version != "v3":
            raise NotImplementedError(
                f"RemoteGraph.astream_events(version={version!r}) is not implemented; "
                "use astream() or version='v3'."
            )
        self._reject_v3_unsupported(
            control=control,
            transformers=transformers,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            extra_kwargs=kwargs,
        )
        client = self._validate_client()
        translate_command_input(input)  # a goto/update Command fails before any server call
        sdk_thread, sanitized = self._v3_thread(client, config, headers)
        return AsyncRemoteGraphRunStream(
            client=client,
            sdk_thread=sdk_thread,
            input=input,
            config=sanitized,
            metadata=kwargs.get("metadata"),
        )
