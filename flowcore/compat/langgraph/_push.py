"""``push_message``: a node hands a message to the ``messages`` stream by hand.

The message streams at once, under the namespace of the graph whose node
pushed it, to the stream of that node's run (as a chat model's tokens do, see
``_lc_stream``). With a ``state_key`` it is also written to that channel, as
part of the node's writes, ahead of what the node returns.
"""

from __future__ import annotations

from typing import Any

from flowcore.compat.langgraph._context import current_scope
from flowcore.compat.langgraph._messages import convert_to_messages
from flowcore.compat.langgraph._messages_langchain import langchain_family

__all__ = ["push_message"]


def push_message(message: Any, *, state_key: str | None = "messages") -> Any:
    """Stream ``message`` now (and write it to ``state_key`` unless that is ``None``).

    Returns the message as streamed. LangChain messages stay LangChain's.

    Raises:
        RuntimeError: called outside a node.
        ValueError: the message has no id.

    Example:
        >>> # push_message(AIMessage(id="m1", content="hi"), state_key=None)
    """
    scope = current_scope()
    family = langchain_family([message])
    converted = (
        family.convert_to_messages([message])[0]
        if family is not None
        else convert_to_messages([message])[0]
    )
    if getattr(converted, "id", None) is None:
        raise ValueError("Message ID is required")
    run: Any = scope.host
    task = scope.task
    if "llm_token" in run.wants:
        meta = {
            "langgraph_step": run.step,
            "langgraph_node": task.name,
            "langgraph_triggers": task.triggers,
            "langgraph_checkpoint_ns": f"{run.ns}|{task.name}:{task.id}".lstrip("|"),
        }
        run.emit("llm_token", (converted, meta))
    if state_key:
        scope.pushed = [*(scope.pushed or ()), (state_key, converted)]
    return converted
