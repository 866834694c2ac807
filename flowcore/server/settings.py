"""``ServerSettings``: how ``flowcore serve`` listens and what it allows.

Plain data with no web framework behind it, so the CLI and the tests build
one without importing the server's optional dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ServerSettings"]


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Where the server listens, which database it uses, and its limits.

    ``max_body_bytes`` refuses larger request bodies with 413;
    ``rate_limit`` requests per ``rate_window`` seconds are allowed per API
    key (more get 429 with ``Retry-After``); ``shutdown_grace`` is how long
    a stop waits for running runs to reach a checkpoint.

    Example:
        >>> ServerSettings(port=9000).max_body_bytes
        1048576
    """

    host: str = "127.0.0.1"
    port: int = 8321
    db: Path | None = None
    max_body_bytes: int = 1024 * 1024
    rate_limit: int = 600
    rate_window: float = 60.0
    shutdown_grace: float = 10.0
    title: str = "flowcore"
