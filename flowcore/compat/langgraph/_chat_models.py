"""flowcore's own providers as the chat models of compat graphs: ``"provider:model"`` and billing.

LangGraph lets ``create_react_agent`` take a model as ``"openai:gpt-4o"``;
here such a string names one of flowcore's providers
(:func:`resolve_chat_model`): ``openai`` (``OPENAI_API_KEY``, and
``OPENAI_BASE_URL`` for a compatible server) or ``anthropic``
(``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``). This is a front door, so it
may read the environment; the key goes to the provider and nowhere else.

:func:`ask_provider` is how a compat node asks a flowcore provider: every
request that goes out (a retry after a throttle too) is billed once through
:func:`~flowcore.compat.langgraph._call_records.bill_model_call`, failed ones
included, as the block executor's ``ask_model`` bills native calls.

Example:
    >>> resolve_chat_model("openai:gpt-4o", env={"OPENAI_API_KEY": "sk-test"}).model
    'gpt-4o'
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping

from flowcore.compat.langgraph._call_records import bill_model_call
from flowcore.errors import InvalidInputError
from flowcore.llm.prompt_hash import effective_model, prompt_hash
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.retry import call_with_retries
from flowcore.llm.types import LLMRequest, LLMResponse, Usage

__all__ = ["ask_provider", "resolve_chat_model"]

# provider -> (API key variable, base URL variable)
_PROVIDERS: Mapping[str, tuple[str, str]] = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}


def resolve_chat_model(spec: str, *, env: Mapping[str, str] | None = None) -> LLMProvider:
    """The flowcore provider a ``"provider:model"`` string names, keyed from ``env``.

    ``env`` defaults to the process environment. Raises
    :class:`~flowcore.errors.InvalidInputError` naming what is wrong: a
    string without ``:``, a provider flowcore has none of, or a missing key.

    Example:
        >>> resolve_chat_model("anthropic:claude-x", env={"ANTHROPIC_API_KEY": "k"}).name
        'anthropic'
    """
    provider, sep, model = spec.partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if not sep or not provider or not model:
        raise InvalidInputError(
            f"model {spec!r} is not a 'provider:model' string; write e.g. 'openai:gpt-4o' "
            "or pass a flowcore LLMProvider"
        )
    names = _PROVIDERS.get(provider)
    if names is None:
        known = ", ".join(sorted(_PROVIDERS))
        raise InvalidInputError(
            f"model {spec!r} names provider {provider!r}, which flowcore has no provider for "
            f"(known: {known}); pass a flowcore LLMProvider or a LangChain chat model instead"
        )
    source = os.environ if env is None else env
    key_name, url_name = names
    api_key = source.get(key_name)
    if not api_key:
        raise InvalidInputError(
            f"model {spec!r} needs the {key_name} environment variable (the {provider} API key); "
            f"set it, or pass a provider built with its key"
        )
    base_url = source.get(url_name) or None
    if provider == "openai":
        from flowcore.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(api_key=api_key, model=model, base_url=base_url)
    from flowcore.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(api_key=api_key, model=model, base_url=base_url)


async def ask_provider(
    provider: LLMProvider, request: LLMRequest, *, retry_wait: float = 0.5
) -> LLMResponse:
    """``provider.complete(request)``, retried as ``ask_model`` retries, every request billed.

    Each request that goes out is one invocation with its own id: billed with
    the tokens of its answer, or, when it failed, as a call without tokens.

    Example:
        >>> # response = await ask_provider(provider, LLMRequest((Message("user", "hi"),)))
    """
    model = effective_model(request, provider)
    hashed = prompt_hash(request, default_model=model)

    async def once() -> LLMResponse:
        started = time.perf_counter()
        invocation = uuid.uuid4().hex
        try:
            response = await provider.complete(request)
        except BaseException:
            bill_model_call(
                Usage(),
                provider=provider.name,
                model=model or "",
                answered=False,
                started=started,
                invocation_id=invocation,
                request_model=request.model or "",
                prompt_hash=hashed,
            )
            raise
        bill_model_call(
            response.usage,
            provider=provider.name,
            model=response.model or model or "",
            answered=True,
            started=started,
            invocation_id=invocation,
            request_model=request.model or "",
            finish_reason=response.finish_reason,
            prompt_hash=hashed,
        )
        return response

    return await call_with_retries(once, base_delay=retry_wait)
