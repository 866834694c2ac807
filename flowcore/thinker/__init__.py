"""The Thinker: from a person's intent to a tested, runnable pipeline (seed 003).

:class:`Thinker` runs Clarify, Decompose, Search, Create and Wire as a
flowcore graph of stored prompt blocks; :class:`ThinkerModel` is the
deterministic stand-in model that lets it run with no API key.
"""

from flowcore.thinker.api import (
    AutomateResult,
    ClarifyResult,
    CreateResult,
    Thinker,
    ThinkerRunError,
)
from flowcore.thinker.events import EVENT_TYPES, ThinkerEvent, thinker_event, to_sse_frame
from flowcore.thinker.models import (
    ClarifyDecision,
    CreatedBlockDraft,
    DecomposeOutput,
    RefinedIntent,
    RequiredBlock,
    WireOutput,
)
from flowcore.thinker.offline_model import Faults, ThinkerModel
from flowcore.thinker.prompts import PROMPT_BLOCK_IDS, ensure_prompt_blocks, prompt_blocks
from flowcore.thinker.setup import default_embedder, default_search, thinker_model
from flowcore.thinker.stage import StageFailedError

__all__ = [
    "EVENT_TYPES",
    "PROMPT_BLOCK_IDS",
    "AutomateResult",
    "ClarifyDecision",
    "ClarifyResult",
    "CreateResult",
    "CreatedBlockDraft",
    "DecomposeOutput",
    "Faults",
    "RefinedIntent",
    "RequiredBlock",
    "StageFailedError",
    "Thinker",
    "ThinkerEvent",
    "ThinkerModel",
    "ThinkerRunError",
    "WireOutput",
    "default_embedder",
    "default_search",
    "ensure_prompt_blocks",
    "prompt_blocks",
    "thinker_event",
    "thinker_model",
    "to_sse_frame",
]
