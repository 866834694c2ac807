"""A LangChain chat model for tests: answers from a script, reports token usage, can fail.

``ScriptedChat(replies=[...])`` answers each call with the next reply: a
string (an ``AIMessage`` with ``usage_metadata`` of ``tokens``), a prepared
``AIMessage``, or an exception, which the call raises. It is a real
``BaseChatModel``, so LangChain's callbacks (the ones flowcore bills from)
see every call, sync or async.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.messages import AIMessage as LCAIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["LCAIMessage", "ScriptedChat"]


class ScriptedChat(BaseChatModel):
    """Answers each call with the next of ``replies``; every answer reports ``tokens``."""

    replies: list[Any]
    tokens: tuple[int, int] = (10, 12)
    model_name: str = "scripted-chat"
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.calls += 1
        if not self.replies:
            raise RuntimeError("ScriptedChat has no reply left")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            tokens_in, tokens_out = self.tokens
            reply = AIMessage(
                reply,
                usage_metadata={
                    "input_tokens": tokens_in,
                    "output_tokens": tokens_out,
                    "total_tokens": tokens_in + tokens_out,
                },
                response_metadata={"model_name": self.model_name, "finish_reason": "stop"},
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])
