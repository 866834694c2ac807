"""The ``messages`` stream mode's tokens: chat models a node calls, token by token.

``astream`` adds :func:`messages_stream_handler` to a run's LangChain
callbacks when it streams ``messages``. Nodes find the run's callbacks in
LangChain's child config (see ``_tracing``), so a chat model a node calls
reports to the handler:

* each token it streams is a ``(chunk, metadata)`` chunk at once, the metadata
  being the node's (``langgraph_node``, ``langgraph_step``...) and the model's;
* a model that does not stream gives its whole message when it ends.

The node's returned message with the same id is then not streamed again (the
stream's formatter remembers streamed ids). A model tagged ``nostream`` is not
streamed; with ``subgraphs=False`` only the top graph's models are. Nothing
here imports LangChain: the handler is made only when ``langchain_core`` is
loaded (no chat model can run before), from its modules in ``sys.modules``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["graph_namespace", "messages_stream_handler"]

_NOSTREAM = frozenset({"nostream", "langsmith:nostream"})

Emit = Callable[[tuple[str, ...], Any], None]


_PUSH = "__pregel_push"


def graph_namespace(metadata: Any) -> tuple[str, ...]:
    """The namespace of the graph a task runs in, from its run's metadata.

    The task's own segment goes, and one more per enclosing ``@task`` call: a
    call runs in its caller's graph, though its segment nests under the
    caller's. A call's ``langgraph_path`` is ``(PUSH, caller's path, index,
    True)``, the caller's path flat (a call's own starts with ``PUSH``).

    Example:
        >>> graph_namespace({"langgraph_checkpoint_ns": "sub:1|node:2"})
        ('sub:1',)
        >>> graph_namespace({"langgraph_checkpoint_ns": "wf:1|outer:2|inner:3",
        ...     "langgraph_path": (_PUSH, (_PUSH, "__pregel_pull", "wf", 0), 0, True)})
        ()
    """
    ns = str((metadata or {}).get("langgraph_checkpoint_ns") or "")
    if not ns:
        return ()
    parts = tuple(ns.split("|"))
    path = (metadata or {}).get("langgraph_path") or ()
    drop = 1
    if isinstance(path, tuple) and len(path) == 4 and path[0] == _PUSH and path[-1] is True:
        drop += 1
        caller = path[1]
        while isinstance(caller, tuple) and caller and caller[0] == _PUSH:
            drop += 1
            caller = caller[1:-1]
    return parts[: max(len(parts) - drop, 0)]


def messages_stream_handler(emit: Emit, *, subgraphs: bool) -> Any:
    """A LangChain callback handler that turns a chat model's tokens into ``messages`` chunks.

    ``emit(ns, (message, metadata))`` gets each with the namespace of the graph
    the model ran in. ``None`` while LangChain's chat models are not loaded.

    Example:
        >>> # config = with_handler(config, messages_stream_handler(put, subgraphs=False))
    """
    callbacks = sys.modules.get("langchain_core.callbacks.base")
    streaming = sys.modules.get("langchain_core.tracers._streaming")
    if callbacks is None or streaming is None:
        return None
    handler_base: Any = callbacks.BaseCallbackHandler
    # A chat model streams its tokens (even from invoke) to a handler of this kind.
    streaming_base: Any = streaming._StreamingCallbackHandler

    class MessagesStream(handler_base, streaming_base):  # type: ignore[misc]
        run_inline = True

        def __init__(self) -> None:
            # Model run id -> (namespace, metadata) of the call.
            self.models: dict[Any, tuple[tuple[str, ...], dict[str, Any]]] = {}
            self.streamed: set[Any] = set()

        def tap_output_aiter(self, run_id: Any, output: Any) -> Any:
            return output

        def tap_output_iter(self, run_id: Any, output: Any) -> Any:
            return output

        def on_chat_model_start(
            self,
            serialized: Any,
            messages: Any,
            *,
            run_id: Any,
            tags: list[str] | None = None,
            metadata: dict[str, Any] | None = None,
            **_: Any,
        ) -> None:
            if not metadata or (tags and not _NOSTREAM.isdisjoint(tags)):
                return
            ns = graph_namespace(metadata)
            if ns and not subgraphs:
                return
            self.models[run_id] = (ns, dict(metadata))

        def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
            run_id = kwargs.get("run_id")
            found = self.models.get(run_id)
            message = getattr(kwargs.get("chunk"), "message", None)
            if found is None or message is None:
                return
            self.streamed.add(run_id)
            emit(found[0], (message, found[1]))

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            run_id = kwargs.get("run_id")
            found = self.models.pop(run_id, None)
            if found is None or run_id in self.streamed:
                self.streamed.discard(run_id)
                return
            for generations in getattr(response, "generations", None) or ():
                for generation in generations:
                    message = getattr(generation, "message", None)
                    if message is not None:
                        emit(found[0], (message, found[1]))

        def push_message(self, message: Any, metadata: dict[str, Any]) -> None:
            """Stream a message a node pushed (see ``_push``) from the node's metadata."""
            ns = graph_namespace(metadata)
            if subgraphs or not ns:
                emit(ns, (message, metadata))

        def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
            run_id = kwargs.get("run_id")
            self.models.pop(run_id, None)
            self.streamed.discard(run_id)

    return MessagesStream()
