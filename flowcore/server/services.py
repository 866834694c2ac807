"""``Services``: everything the routes work on, handed to ``create_app`` (no globals).

Example:
    >>> # services = Services(settings=..., keys=..., runs=..., blocks=..., ...)
    >>> # app = create_app(services)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowcore.blocks.store import BlockStore
from flowcore.history import RunHistory
from flowcore.memory.store import Store
from flowcore.secrets import NO_REDACTION, Redactor
from flowcore.server.keys import ApiKeys
from flowcore.server.limits import RateLimiter
from flowcore.server.manager import RunManager
from flowcore.server.pipeline_store import PipelineStore
from flowcore.server.settings import ServerSettings
from flowcore.server.thinker_service import ThinkerService

__all__ = ["Services"]


@dataclass(slots=True)
class Services:
    """The stores, the run manager and the limits one server uses.

    ``history`` is the run history behind ``/api/executions``; ``memory``
    the long-term store behind ``/api/memory/{user_id}``; ``redactor``
    scrubs what errors say before they are answered or logged; ``thinker``
    serves the Thinker routes and ``/api/blocks/search`` (None: they answer
    501, and search is full text on the registry).
    """

    settings: ServerSettings
    keys: ApiKeys
    runs: RunManager
    blocks: BlockStore
    pipelines: PipelineStore
    history: RunHistory | None = None
    memory: Store | None = None
    redactor: Redactor = NO_REDACTION
    limiter: RateLimiter = field(default_factory=RateLimiter)
    thinker: ThinkerService | None = None
    extra: dict[str, Any] = field(default_factory=dict)
