"""``add_messages`` on LangChain's own message objects.

flowcore's message classes (``_messages``) stand on their own, but an app
written for LangGraph hands its reducer ``langchain_core`` messages, passes the
merged list to LangChain chat models, and compares it with LangChain messages.
LangGraph always makes LangChain messages, so the rule here follows it for
LangChain users without flowcore ever importing LangChain:

- when either side of a merge holds a LangChain message, the whole merge is
  done in LangChain's family;
- when it holds flowcore messages and no LangChain one, flowcore's family;
- when it holds no message object at all (only strings, role pairs and role
  dicts, e.g. the input ``{"messages": "hi"}``), LangChain's family if
  ``langchain_core.messages`` is already loaded in the process, else flowcore's.

In LangChain's family, strings, role pairs, role dicts and flowcore messages
are turned into LangChain messages with LangChain's own converters, and chunks
into whole messages, as LangGraph does. Nothing is imported here: the module
is taken from ``sys.modules``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, get_args, get_origin

__all__ = [
    "LangChainMessages",
    "equal_to_langchain",
    "langchain_family",
    "names_langchain",
    "openai_shaped",
    "to_flowcore",
    "to_langchain",
]

_MODULE = "langchain_core.messages"


def langchain_family(*sides: Iterable[Any]) -> ModuleType | None:
    """``langchain_core.messages`` when a merge of ``sides`` is LangChain's family, else ``None``.

    LangChain's family when some side holds a LangChain message, or when no
    side holds any message object and ``langchain_core.messages`` is loaded
    (see the module docstring).

    Example:
        >>> # with langchain_core.messages loaded:
        >>> # langchain_family([("user", "hi")], []) -> the module
        >>> # langchain_family([("user", "hi")], [flowcore_ai_message]) -> None
    """
    module = sys.modules.get(_MODULE)
    if module is None:
        return None
    # Imported here: _messages imports this module.
    from flowcore.compat.langgraph._messages import BaseMessage as Own

    base = module.BaseMessage
    # The distinct classes only: a long chat is many messages of a few classes.
    kinds = {type(item) for side in sides for item in side}
    if any(issubclass(kind, base) for kind in kinds):
        return module
    return None if any(issubclass(kind, Own) for kind in kinds) else module


def to_langchain(items: list[Any], module: ModuleType) -> list[Any]:
    """``items`` as LangChain messages (chunks made whole); plain messages stay the same objects.

    Example:
        >>> # to_langchain([("user", "hi"), AIMessageChunk("a")], langchain_core.messages)
        >>> # -> [HumanMessage("hi"), AIMessage("a")]
    """
    # Imported here: _messages imports this module.
    from flowcore.compat.langgraph._messages import BaseMessage as Own

    base, chunk = module.BaseMessage, module.BaseMessageChunk
    if all(issubclass(k, base) and not issubclass(k, chunk) for k in {type(i) for i in items}):
        return items
    converted: list[Any] = []
    for item in items:
        if isinstance(item, Own):
            # One of flowcore's messages: the same fields, in LangChain's class.
            item = module.messages_from_dict([{"type": item.type, "data": item.model_dump()}])[0]
        elif not isinstance(item, base):
            item = module.convert_to_messages([item])[0]
        if isinstance(item, chunk):
            item = module.message_chunk_to_message(item)
        converted.append(item)
    return converted


def to_flowcore(items: list[Any]) -> list[Any]:
    """``items`` with each LangChain message rebuilt as flowcore's message of the same type.

    For flowcore's own consumers of a chat (``create_react_agent`` with a
    flowcore model): a merge may have made LangChain messages (see the module
    docstring). Chunks are made whole first; anything else stays as it is.

    Example:
        >>> to_flowcore(["hi"])
        ['hi']
    """
    module = sys.modules.get(_MODULE)
    if module is None:
        return items
    from flowcore.compat.langgraph._messages import messages_from_dict

    base, chunk = module.BaseMessage, module.BaseMessageChunk
    converted: list[Any] = []
    for item in items:
        if isinstance(item, base):
            if isinstance(item, chunk):
                item = module.message_chunk_to_message(item)
            item = messages_from_dict([{"type": item.type, "data": item.model_dump()}])[0]
        converted.append(item)
    return converted


def openai_shaped(messages: list[Any], module: ModuleType) -> list[Any]:
    """LangChain messages after a trip through OpenAI's chat format (``format="langchain-openai"``).

    Example:
        >>> # openai_shaped([HumanMessage([{"type": "text", "text": "a"}])], module)
        >>> # -> [HumanMessage("a")]
    """
    return list(module.convert_to_messages(module.convert_to_openai_messages(messages)))


def names_langchain(annotation: Any) -> bool:
    """Whether a type annotation mentions a LangChain class (``list[BaseMessage]``, ``X | Y``).

    Example:
        >>> names_langchain(list[int])
        False
    """
    seen: list[Any] = [annotation]
    while seen:
        item = seen.pop()
        if isinstance(item, type) and item.__module__.startswith("langchain_core"):
            return True
        seen.extend(get_args(item))
        # A pydantic-style discriminated union keeps its members in Annotated's first arg.
        origin = get_origin(item)
        if origin is not None and origin is not item:
            seen.append(origin)
    return False


class LangChainMessages:
    """``add_messages`` for a key typed with LangChain messages: every message is LangChain's.

    A key declared ``Annotated[list[BaseMessage], add_messages]`` with
    LangChain's ``BaseMessage`` gets LangChain messages for role pairs, strings
    and dicts too, as LangGraph gives them, even before any LangChain message
    reached the key.
    """

    def __init__(self, reducer: Callable[[Any, Any], Any]) -> None:
        self.reducer = reducer

    def __call__(self, left: Any, right: Any) -> Any:
        module = sys.modules.get(_MODULE)
        if module is not None:
            rights = right if isinstance(right, list) else [right]
            if langchain_family(rights) is None:
                right = to_langchain(rights, module)
        return self.reducer(left, right)


def equal_to_langchain(own: Any, other: Any) -> bool | None:
    """``own == other`` for a flowcore message and a LangChain one; None when ``other`` is not.

    The two families have the same fields, so a flowcore message equals the
    LangChain message of the same class name with the same field values (a
    merge without any LangChain message makes flowcore's; a caller may hold
    LangChain's).
    """
    module = sys.modules.get(_MODULE)
    if module is None or not isinstance(other, module.BaseMessage):
        return None
    if type(other).__name__ != type(own).__name__:
        return False
    mine = getattr(own, "__pydantic_extra__", None) or {}
    theirs = getattr(other, "__pydantic_extra__", None) or {}
    return bool(own.__dict__ == other.__dict__ and mine == theirs)
