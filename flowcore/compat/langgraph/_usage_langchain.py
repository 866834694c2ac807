"""Billing the LangChain chat-model calls a compat node makes, from LangChain's own callbacks.

A compat run whose app has loaded ``langchain_core`` puts one callback
handler in a context variable that LangChain's callback managers read
(``register_configure_hook``, the way LangChain's own usage callback is
installed), for as long as the run executes. Every LangChain chat model (or
LLM) call made in the run's nodes then reports to it, with or without the
node passing its ``config`` on:

- when the call starts, the handler notes the node running there (the compat
  task scope), its usage meter and the time;
- when it ends, the call is billed through
  :func:`~flowcore.compat.langgraph._call_records.bill_model_call` with the
  token counts of its response (each generation's ``usage_metadata``, else
  the provider's ``token_usage``), at once, so a node that fails after a
  successful call still pays for it;
- when it fails, it is billed as a call, with the tokens of the partial
  response LangChain hands over, if any.

The handler runs inline (``run_inline``): it only adds numbers and hands a
record on, so it is cheap enough for the event loop, and it sees the node's
context. flowcore never loads LangChain: nothing here runs unless the app did.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from flowcore.compat.langgraph._call_records import bill_model_call
from flowcore.compat.langgraph._context import TaskScope, running_scope
from flowcore.compat.langgraph._langchain import langchain_module
from flowcore.llm.types import Usage
from flowcore.runtime.usage import UsageMeter, current_meter

__all__ = ["langchain_usage", "usage_of_result"]

_HANDLER: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "flowcore_compat_langchain_usage", default=None
)
# The one handler (it keeps the calls in flight by LangChain run id), made on first use.
_INSTALLED: list[Any] = []


@dataclass(slots=True)
class _Open:
    """A call in flight: who made it, where it is billed, and when it started."""

    scope: TaskScope | None
    meter: UsageMeter | None
    started: float
    provider: str
    model: str


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_of_result(result: Any) -> tuple[Usage | None, str, str]:
    """Tokens, answering model and finish reason of a LangChain ``LLMResult`` (None: unknown).

    Example:
        >>> usage_of_result(None)
        (None, '', '')
    """
    found = False
    tokens_in = tokens_out = 0
    model = finish = ""
    for generations in getattr(result, "generations", None) or ():
        for generation in generations:
            message = getattr(generation, "message", None)
            usage = getattr(message, "usage_metadata", None)
            if isinstance(usage, Mapping):
                found = True
                tokens_in += _count(usage.get("input_tokens"))
                tokens_out += _count(usage.get("output_tokens"))
            meta = getattr(message, "response_metadata", None) or {}
            info = getattr(generation, "generation_info", None) or {}
            model = model or str(meta.get("model_name") or meta.get("model") or "")
            finish = finish or str(info.get("finish_reason") or meta.get("finish_reason") or "")
    if not found:
        # Older integrations put the provider's own counts in llm_output.
        output = getattr(result, "llm_output", None) or {}
        counts = None
        if isinstance(output, Mapping):
            counts = output.get("token_usage") or output.get("usage")
        if isinstance(counts, Mapping):
            found = True
            tokens_in = _count(counts.get("prompt_tokens", counts.get("input_tokens")))
            tokens_out = _count(counts.get("completion_tokens", counts.get("output_tokens")))
            model = model or str(output.get("model_name") or "")
    return (Usage(tokens_in, tokens_out) if found else None), model, finish


def _names(serialized: Any, metadata: Any, kwargs: Mapping[str, Any]) -> tuple[str, str]:
    """The provider and requested model of a call, from what LangChain says at its start."""
    meta = metadata if isinstance(metadata, Mapping) else {}
    params = kwargs.get("invocation_params")
    params = params if isinstance(params, Mapping) else {}
    provider = str(meta.get("ls_provider") or params.get("_type") or "")
    model = str(meta.get("ls_model_name") or params.get("model") or params.get("model_name") or "")
    if not provider and isinstance(serialized, Mapping):
        provider = str(serialized.get("name") or "")
    return provider, model


def _make_handler() -> Any:
    callbacks = langchain_module("callbacks")
    context = langchain_module("tracers.context")
    # Called only once the app has loaded LangChain.
    assert callbacks is not None
    assert context is not None

    class UsageHandler(callbacks.BaseCallbackHandler):  # type: ignore[misc,name-defined]
        """Bills each LangChain model call of a compat node (see the module docstring)."""

        run_inline = True
        raise_error = False

        def __init__(self) -> None:
            super().__init__()
            self.open: dict[Any, _Open] = {}

        def _start(self, serialized: Any, run_id: Any, metadata: Any, kwargs: Any) -> None:
            scope = running_scope()
            meter = current_meter()
            if scope is None and meter is None:
                return  # not made by a node of a compat run
            provider, model = _names(serialized, metadata, kwargs)
            self.open[run_id] = _Open(scope, meter, time.perf_counter(), provider, model)

        def on_chat_model_start(
            self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any
        ) -> None:
            self._start(serialized, run_id, kwargs.get("metadata"), kwargs)

        def on_llm_start(
            self, serialized: Any, prompts: Any, *, run_id: Any, **kwargs: Any
        ) -> None:
            self._start(serialized, run_id, kwargs.get("metadata"), kwargs)

        def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
            call = self.open.pop(run_id, None)
            if call is not None:
                usage, model, finish = usage_of_result(response)
                self._bill(call, run_id, usage or Usage(), True, model, finish)

        def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            call = self.open.pop(run_id, None)
            if call is not None:
                usage, model, _ = usage_of_result(kwargs.get("response"))
                self._bill(call, run_id, usage or Usage(), False, model, "")

        def _bill(
            self, call: _Open, run_id: Any, usage: Usage, answered: bool, model: str, finish: str
        ) -> None:
            bill_model_call(
                usage,
                provider=call.provider,
                model=model or call.model,
                answered=answered,
                started=call.started,
                invocation_id=str(run_id),
                request_model=call.model,
                finish_reason=finish,
                scope=call.scope,
                meter=call.meter,
            )

    context.register_configure_hook(_HANDLER, inheritable=True)
    return UsageHandler()


@contextmanager
def langchain_usage() -> Iterator[None]:
    """Bill the LangChain model calls made in this context (the run executing here).

    Does nothing when the app has not loaded ``langchain_core``.

    Example:
        >>> with langchain_usage():
        ...     pass
    """
    if langchain_module("callbacks") is None:
        yield
        return
    if not _INSTALLED:
        _INSTALLED.append(_make_handler())
    token = _HANDLER.set(_INSTALLED[0])
    try:
        yield
    finally:
        _HANDLER.reset(token)
