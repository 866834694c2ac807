"""Talking to models: the provider port, its data, errors, retries and a scripted provider."""

from flowcore.llm.errors import ProviderError, ScriptExhaustedError, ThrottleError, ThrottleKind
from flowcore.llm.offline import OfflineProvider
from flowcore.llm.prompt_hash import (
    PROMPT_HASH_VERSION,
    effective_model,
    prompt_hash,
    prompt_hash_payload,
)
from flowcore.llm.protocol import LLMProvider
from flowcore.llm.registry import ProviderRegistry
from flowcore.llm.retry import DEFAULT_MAX_DELAY, call_with_retries, provider_retry_delay
from flowcore.llm.scripted import ScriptedProvider
from flowcore.llm.types import (
    LLMRequest,
    LLMResponse,
    Message,
    StreamEvent,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "DEFAULT_MAX_DELAY",
    "PROMPT_HASH_VERSION",
    "LLMProvider",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "OfflineProvider",
    "ProviderError",
    "ProviderRegistry",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "StreamEvent",
    "ThrottleError",
    "ThrottleKind",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "call_with_retries",
    "effective_model",
    "prompt_hash",
    "prompt_hash_payload",
    "provider_retry_delay",
]
