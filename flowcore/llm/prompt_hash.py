"""``prompt_hash``: one canonical, versioned fingerprint of what a model was asked.

The hash lets a usage ledger or a dashboard notice when a prompt drifts
(someone edits a template, a tool's schema changes, a block switches model)
and group calls that asked the same thing. It is computed in exactly one
place, the block executor, right where a request is sent, and travels on
the ``usage`` event of that call.

What goes in (canonical JSON: sorted keys, no whitespace, UTF-8)::

    {"prompt_hash_version": "v1",
     "model": ..., "temperature": ..., "max_tokens": ...,
     "messages": [{"role": ..., "content": ..., "tool_call_id"?: ..., "tool_calls"?: [...]}],
     "tools": [{"name": ..., "description": ..., "parameters": ...}]   # only when offered}

``model`` is the *effective* model: the request's, else the default model of
the provider it is sent to (``effective_model``), so the same prompt sent to
providers configured with models A and B hashes differently even when the
request names no model. ``request.system`` is the first message (role ``system``), exactly as the
providers send it, so a system prompt given as a field or as a message
hashes the same. Nothing else enters the hash: no request, trace, user,
billing or run ids, no metadata. ``response_schema`` is not hashed either;
flowcore's blocks write it into the system prompt, which is. Changing what
is hashed changes the version tag, so hashes of different versions never
compare equal by accident.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from flowcore.llm.types import LLMRequest, Message, ToolCall, ToolSpec

__all__ = ["PROMPT_HASH_VERSION", "effective_model", "prompt_hash", "prompt_hash_payload"]

PROMPT_HASH_VERSION: Final = "v1"
"""The version tag of the canonical payload; the prefix of every hash."""


def _call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}


def _message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.tool_calls:
        out["tool_calls"] = [_call(c) for c in message.tool_calls]
    return out


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def effective_model(request: LLMRequest, provider: object) -> str | None:
    """The model ``request`` goes to on ``provider``: its own, else the provider's default.

    A provider's default is its ``model`` attribute (``OpenAIProvider(model=...)``,
    ``AnthropicProvider(model=...)``, ``ScriptedProvider(model=...)``); None
    when the request names none and the provider has none.

    Example:
        >>> from flowcore.llm.scripted import ScriptedProvider
        >>> from flowcore.llm.types import LLMRequest, Message
        >>> ask = LLMRequest((Message("user", "Hi"),))
        >>> effective_model(ask, ScriptedProvider([], model="model-a"))
        'model-a'
        >>> effective_model(LLMRequest((Message("user", "Hi"),), model="m"), object())
        'm'
    """
    if request.model:
        return request.model
    default = getattr(provider, "model", None)
    return default if isinstance(default, str) and default else None


def prompt_hash_payload(request: LLMRequest, *, default_model: str | None = None) -> dict[str, Any]:
    """The canonical payload :func:`prompt_hash` hashes (useful to see why two hashes differ).

    ``default_model`` is the model a request that names none goes to (see
    :func:`effective_model`).

    Example:
        >>> from flowcore.llm.types import LLMRequest, Message
        >>> payload = prompt_hash_payload(LLMRequest((Message("user", "Hi"),), model="m"))
        >>> payload["messages"], payload["prompt_hash_version"]
        ([{'role': 'user', 'content': 'Hi'}], 'v1')
    """
    messages = [_message(m) for m in request.messages]
    if request.system is not None:
        messages.insert(0, {"role": "system", "content": request.system})
    payload: dict[str, Any] = {
        "prompt_hash_version": PROMPT_HASH_VERSION,
        "model": request.model or default_model,
        "messages": messages,
        # 1 and 1.0 are the same temperature: hash them the same.
        "temperature": None if request.temperature is None else float(request.temperature),
        "max_tokens": request.max_tokens,
    }
    if request.tools:
        payload["tools"] = [_tool(t) for t in request.tools]
    return payload


def _unhashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | set | frozenset):
        return sorted(value, key=repr) if isinstance(value, set | frozenset) else list(value)
    raise TypeError(
        f"prompt_hash: a request holds a {type(value).__name__}, which has no canonical JSON "
        "form; pass plain JSON values (dict, list, str, int, float, bool, None)"
    )


def prompt_hash(request: LLMRequest, *, default_model: str | None = None) -> str:
    """``"v1:" + sha256`` of the request's canonical payload (see the module docstring).

    ``default_model`` is the provider's default, hashed as the model when the
    request names none; the block executor passes ``effective_model(request,
    provider)``. A request that names its model hashes the same either way.

    Example:
        >>> from flowcore.llm.types import LLMRequest, Message
        >>> a = prompt_hash(LLMRequest((Message("user", "Hi"),), model="m", temperature=0))
        >>> b = prompt_hash(LLMRequest((Message("user", "Hi"),), model="m", temperature=0.0))
        >>> a == b, a.startswith("v1:"), len(a)
        (True, True, 67)
    """
    text = json.dumps(
        prompt_hash_payload(request, default_model=default_model),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_unhashable,
    )
    return f"{PROMPT_HASH_VERSION}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"
