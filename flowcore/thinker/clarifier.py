"""Stage 0, the Clarifier: is the request specific enough, and if not, what to ask.

The conversation is a list of ``{"role": "user" | "assistant", "content": ...}``
messages. The model either asks one question or declares the request ready
with a ``refined_intent`` (goal, steps, inputs, outputs, edge cases). Once
the person has written :data:`MAX_USER_MESSAGES` messages the Clarifier stops
asking: the model is told it must decide, an answer that still asks is
repaired, and if even that fails the refined intent is put together from the
conversation itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.executor import BlockExecutor
from flowcore.errors import InvalidInputError
from flowcore.scheduler.context import NodeContext
from flowcore.thinker.models import ClarifyDecision, RefinedIntent
from flowcore.thinker.stage import StageFailedError, ask_stage

__all__ = ["MAX_USER_MESSAGES", "check_messages", "clarify_once", "user_messages"]

MAX_USER_MESSAGES = 3
"""After this many user messages the Clarifier answers ready, whatever the model says."""


def check_messages(messages: object) -> list[dict[str, str]]:
    """The conversation as clean dicts, or an :class:`InvalidInputError` saying what is wrong.

    Example:
        >>> check_messages([{"role": "user", "content": "Count words"}])
        [{'role': 'user', 'content': 'Count words'}]
    """
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise InvalidInputError(
            'messages must be a non-empty list like [{"role": "user", "content": "..."}]'
        )
    clean: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidInputError(f"messages[{i}] must be an object with role and content")
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant"):
            raise InvalidInputError(
                f"messages[{i}].role must be 'user' or 'assistant', not {role!r}"
            )
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError(f"messages[{i}].content must be non-empty text")
        clean.append({"role": str(role), "content": content})
    if clean[0]["role"] != "user":
        raise InvalidInputError("messages[0] must be the person's request (role 'user')")
    return clean


def user_messages(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many messages the person wrote.

    Example:
        >>> user_messages([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
        1
    """
    return sum(1 for m in messages if m.get("role") == "user")


def _fallback(messages: Sequence[Mapping[str, Any]]) -> RefinedIntent:
    # The model could not synthesize one: the person's own words are the spec.
    said = [str(m["content"]) for m in messages if m.get("role") == "user"]
    return RefinedIntent(goal=said[0], steps=said[1:], edge_cases=[])


async def clarify_once(
    executor: BlockExecutor,
    block: BlockDefinition,
    messages: Sequence[Mapping[str, Any]],
    ctx: NodeContext,
) -> ClarifyDecision:
    """One Clarifier decision on the conversation so far.

    Example:
        >>> # decision = await clarify_once(executor, blocks["clarify"], messages, ctx)
        >>> # decision.ready, decision.question
    """
    must_decide = user_messages(messages) >= MAX_USER_MESSAGES

    async def check(decision: ClarifyDecision) -> list[str]:
        if must_decide and not decision.ready:
            return [
                f"must_decide is true (the person has written {MAX_USER_MESSAGES} messages): "
                "answer ready with refined_intent"
            ]
        return []

    request = {"messages": list(messages), "must_decide": must_decide}
    try:
        answer = await ask_stage(
            executor, block, "clarify", request, ClarifyDecision, ctx, repairs=1, check=check
        )
    except StageFailedError:
        if not must_decide:
            raise
        return ClarifyDecision(ready=True, refined_intent=_fallback(messages))
    return answer.value
