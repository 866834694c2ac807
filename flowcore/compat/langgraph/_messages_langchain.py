"""``add_messages`` on LangChain's own message objects.

flowcore's message classes (``_messages``) stand on their own, but an app
written for LangGraph hands its reducer ``langchain_core`` messages, and then
compares the merged list with LangChain messages or checks their classes. So
when either side of a merge holds a LangChain message, the whole merge is done
in LangChain's family: strings, role pairs, role dicts and flowcore messages
on either side are turned into LangChain messages with LangChain's own
converters, and chunks into whole messages, as LangGraph does. Nothing is
imported here: a LangChain message can only exist once ``langchain_core.messages``
is loaded, so the module is taken from ``sys.modules``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

__all__ = ["langchain_family", "openai_shaped", "to_langchain"]

_MODULE = "langchain_core.messages"


def langchain_family(*sides: Iterable[Any]) -> ModuleType | None:
    """``langchain_core.messages`` when some side holds a LangChain message, else ``None``.

    Example:
        >>> langchain_family([("user", "hi")], []) is None
        True
    """
    module = sys.modules.get(_MODULE)
    if module is None:
        return None
    base = module.BaseMessage
    # The distinct classes only: a long chat is many messages of a few classes.
    kinds = {type(item) for side in sides for item in side}
    return module if any(issubclass(kind, base) for kind in kinds) else None


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


def openai_shaped(messages: list[Any], module: ModuleType) -> list[Any]:
    """LangChain messages after a trip through OpenAI's chat format (``format="langchain-openai"``).

    Example:
        >>> # openai_shaped([HumanMessage([{"type": "text", "text": "a"}])], module)
        >>> # -> [HumanMessage("a")]
    """
    return list(module.convert_to_messages(module.convert_to_openai_messages(messages)))
