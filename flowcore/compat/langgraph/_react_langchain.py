"""``create_react_agent`` with a LangChain chat model (or any LangChain runnable) as model.

LangGraph's agent takes a LangChain ``BaseChatModel``: it binds the agent's
tools to it (``model.bind_tools``) unless the caller already did, and calls
it with the conversation as LangChain messages and the node's config (so
callbacks, the ``messages`` stream and tracing see the call). Its answer, a
LangChain ``AIMessage``, goes into the state as it is. A
``response_format`` makes a last call through ``with_structured_output``.

flowcore's own models (:class:`~flowcore.llm.LLMProvider`) take the other
path in :mod:`._prebuilt`. Nothing here imports LangChain before the caller
has: a LangChain model is only recognised once ``langchain_core`` is loaded.

Example:
    >>> is_langchain_model(object())
    False
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.compat.langgraph._messages_langchain import to_langchain

__all__ = ["LangChainModelCall", "is_langchain_model"]


def is_langchain_model(model: Any) -> bool:
    """Whether ``model`` is a LangChain runnable (a chat model, a bound or chained one)."""
    module = sys.modules.get("langchain_core.runnables")
    return module is not None and isinstance(model, module.Runnable)


def _already_bound(model: Any, names: Sequence[str], builtin: int) -> bool:
    """Whether ``model`` has tools bound already (checked against the agent's tools)."""
    base = sys.modules["langchain_core.runnables.base"]
    if isinstance(model, base.RunnableSequence):
        model = next(
            (
                step
                for step in model.steps
                if isinstance(step, base.RunnableBinding) or _is_chat_model(step)
            ),
            model,
        )
    if not isinstance(model, base.RunnableBinding) or "tools" not in model.kwargs:
        return False
    bound = list(model.kwargs["tools"])
    if len(names) != len(bound) - builtin:
        raise ValueError(
            "Number of tools in the model.bind_tools() and tools passed to create_react_agent "
            f"must match Got {len(names)} tools, expected {len(bound) - builtin}"
        )
    bound_names = set()
    for tool in bound:
        if tool.get("type") == "function":
            bound_names.add(tool["function"]["name"])
        elif tool.get("name"):
            bound_names.add(tool["name"])
    missing = set(names) - bound_names
    if missing:
        raise ValueError(f"Missing tools '{missing}' in the model.bind_tools()")
    return True


def _is_chat_model(model: Any) -> bool:
    module = sys.modules.get("langchain_core.language_models")
    return module is not None and isinstance(model, module.BaseChatModel)


def _bindable(tool: Any) -> Any:
    """What ``bind_tools`` takes for one of the agent's tools (LangChain's own, or a spec)."""
    original = getattr(tool, "tool", None)
    if original is not None:
        return original
    spec = tool.spec()
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


class LangChainModelCall:
    """The agent's model calls on a LangChain ``model``, its tools bound once, here."""

    def __init__(self, model: Any, tools: Sequence[Any], builtin: Sequence[Mapping[str, Any]]):
        self.model = model
        names = [t.name for t in tools]
        if (tools or builtin) and not _already_bound(model, names, len(builtin)):
            model = model.bind_tools([*(_bindable(t) for t in tools), *builtin])
        self.bound = model

    async def answer(self, messages: list[Any], config: Mapping[str, Any] | None) -> Any:
        """The model's reply to ``messages`` (any message kinds), as the model gives it."""
        module = sys.modules["langchain_core.messages"]
        return await self.bound.ainvoke(to_langchain(list(messages), module), config)

    async def structured(
        self, messages: list[Any], schema: Any, config: Mapping[str, Any] | None
    ) -> Any:
        """The model's answer to ``messages`` as ``schema`` (``with_structured_output``)."""
        module = sys.modules["langchain_core.messages"]
        shaped = self.model.with_structured_output(schema)
        return await shaped.ainvoke(to_langchain(list(messages), module), config)

    def out_of_steps_message(self, text: str, message_id: Any) -> Any:
        """The agent's last answer when no tool round is left, in LangChain's class."""
        module = sys.modules["langchain_core.messages"]
        return module.AIMessage(content=text, id=message_id)
