"""One model call of a block, billed exactly: ``ask_model`` and the tally it keeps.

The block executor asks the model through :func:`ask_model`, once per
request it means to send (the first answer, each tool round, the repair
request). Each provider request that goes out (a retry after a throttle
too) is one *invocation* with its own id, and is billed exactly once,
whatever becomes of it:

- on the block's :class:`CallTally` (its outcome's ``usage`` and
  ``model_calls``),
- on the node run and the run, through
  :func:`~flowcore.runtime.usage.charge_usage`,
- as a ``usage`` event, whenever the provider said what the request cost:
  always for an answered request, and for a stream that broke off (an
  error, a timeout, a cancel) after reporting its tokens.

A request refused before the model ran (a 429, a bad request) counts as a
call with no tokens and sends no ``usage`` event: there is no figure to
report.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from flowcore.events import TextDeltaEvent, UsageEvent
from flowcore.llm.errors import ProviderError
from flowcore.llm.prompt_hash import effective_model, prompt_hash
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.retry import call_with_retries
from flowcore.llm.types import LLMRequest, LLMResponse, Usage
from flowcore.runtime.usage import charge_usage
from flowcore.scheduler.context import NodeContext

__all__ = ["CallTally", "ask_model", "note_tries"]


@dataclass(slots=True)
class CallTally:
    """The model calls of one block execution, over all its attempts.

    Example:
        >>> tally = CallTally()
        >>> tally.add(Usage(10, 12))
        >>> tally.add(Usage(10, 12))
        >>> tally.calls, tally.usage.total_tokens
        (2, 44)
    """

    usage: Usage = field(default_factory=Usage)
    calls: int = 0

    def add(self, usage: Usage) -> None:
        """Count one call and its tokens."""
        self.calls += 1
        self.usage = Usage(
            self.usage.input_tokens + usage.input_tokens,
            self.usage.output_tokens + usage.output_tokens,
        )


@dataclass(slots=True)
class _Call:
    """One provider request: its invocation id and the usage its stream reported so far."""

    invocation: str
    started: float
    reported: Usage | None = None


def _reported_cost(response: LLMResponse) -> float | None:
    # A provider that knows the price reports it as ``cost_usd`` on its usage
    # (or response); providers that do not leave it out, and the cost stays unknown.
    for holder in (response.usage, response):
        cost = getattr(holder, "cost_usd", None)
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            return float(cost)
    return None


async def ask_model(
    provider: LLMProvider,
    request: LLMRequest,
    *,
    ctx: NodeContext,
    block_id: str,
    tally: CallTally,
    stream: bool = True,
    retry_wait: float = 0.5,
    before_send: Callable[[str | None], Awaitable[None]] | None = None,
) -> LLMResponse:
    """Send ``request`` (retrying provider errors worth retrying) and bill every request sent.

    Streams text as ``text_delta`` events when ``stream``; see the module
    docstring for how each request is billed. ``before_send`` (given the
    model the request goes to) runs before every provider request and may
    refuse it by raising, as a budget does.

    Example:
        >>> # response = await ask_model(provider, request, ctx=ctx, block_id="summarize",
        >>> #                            tally=CallTally())
    """
    # The one place a prompt hash is computed: here, where the request is sent,
    # and with the model it really goes to (the provider's default if it names none).
    model = effective_model(request, provider)
    hashed = prompt_hash(request, default_model=model)

    def bill(
        call: _Call,
        usage: Usage | None,
        cost: float | None,
        answered_by: str,
        finish_reason: str = "",
    ) -> None:
        tokens = usage or Usage()
        tally.add(tokens)
        charge_usage(Usage(tokens.input_tokens, tokens.output_tokens, cost))
        if usage is not None:
            ctx.publish(
                UsageEvent,
                block_id=block_id,
                provider=provider.name,
                model=answered_by or model or "",
                input_tokens=tokens.input_tokens,
                output_tokens=tokens.output_tokens,
                invocation_id=call.invocation,
                prompt_hash=hashed,
                cost_usd=cost,
                request_model=request.model or "",
                finish_reason=finish_reason,
                duration=time.perf_counter() - call.started,
            )

    async def once() -> LLMResponse:
        # Each provider request (a retry too) is its own invocation.
        if before_send is not None:
            await before_send(model)
        call = _Call(uuid.uuid4().hex, time.perf_counter())
        try:
            response = await _request(provider, request, call, ctx, block_id, stream)
        except BaseException:
            # Failed (an error, a timeout, a cancel): billed with the tokens the
            # provider reported before it broke off, if it reported any.
            bill(call, call.reported, None, "")
            raise
        bill(call, response.usage, _reported_cost(response), response.model, response.finish_reason)
        return response

    return await call_with_retries(once, base_delay=retry_wait)


async def _request(
    provider: LLMProvider,
    request: LLMRequest,
    call: _Call,
    ctx: NodeContext,
    block_id: str,
    stream: bool,
) -> LLMResponse:
    """One provider request; ``call.reported`` keeps the last usage a stream reported."""
    if not stream:
        return await provider.complete(request)
    final: LLMResponse | None = None
    # One stream per call: a secret split across deltas is caught whole.
    safe = ctx.redactor.text_stream()
    async for event in provider.stream(request):
        if event.kind == "text" and event.text:
            if text := safe.feed(event.text):
                ctx.publish(
                    TextDeltaEvent, block_id=block_id, text=text, invocation_id=call.invocation
                )
        elif event.kind == "usage" and event.usage is not None:
            call.reported = event.usage
        elif event.kind == "done":
            final = event.response
    if rest := safe.flush():
        ctx.publish(TextDeltaEvent, block_id=block_id, text=rest, invocation_id=call.invocation)
    if final is None:
        raise ProviderError(
            f"provider {provider.name!r} ended its stream without a final answer",
            provider=provider.name,
            kind="server",
        )
    return final


def note_tries(exc: BaseException, attempts: int, calls: int) -> None:
    """Record on a block's final error its attempts and model calls.

    Any error may carry them (a provider's throttle after three block
    attempts too), so the node's :class:`~flowcore.errors.NodeError` can say
    how much work came before it (see :class:`~flowcore.errors.BlockError`).

    Example:
        >>> error = ValueError("no JSON")
        >>> note_tries(error, 3, 6)
        >>> error.block_attempts, error.model_calls  # type: ignore[attr-defined]
        (3, 6)
    """
    try:
        exc.block_attempts = attempts  # type: ignore[attr-defined]
        exc.model_calls = calls  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - an exception type with __slots__
        pass
