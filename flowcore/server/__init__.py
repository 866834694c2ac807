"""``flowcore serve``: the HTTP API (runs, live streams, blocks, pipelines, history, memory).

Needs the ``server`` extra (``pip install 'flowcore[server]'``: FastAPI and
uvicorn). Importing this package does not import them: the API keys and
settings work without; :func:`create_app` imports FastAPI when called.

Example:
    >>> from flowcore.server import ServerSettings
    >>> ServerSettings().port
    8321

See docs/serve.md.
"""

import typing

from flowcore.server.db import ServerDatabase, ServerStoreError
from flowcore.server.keys import ApiKey, ApiKeys, KeyNotFoundError
from flowcore.server.postgres_db import PostgresServerDatabase
from flowcore.server.schema import ServerDb
from flowcore.server.settings import ServerSettings

if typing.TYPE_CHECKING:
    from flowcore.server.app import create_app

__all__ = [
    "ApiKey",
    "ApiKeys",
    "KeyNotFoundError",
    "PostgresServerDatabase",
    "ServerDatabase",
    "ServerDb",
    "ServerSettings",
    "ServerStoreError",
    "create_app",
]


def __getattr__(name: str) -> typing.Any:
    # FastAPI is an optional extra: imported only when the app is built.
    if name == "create_app":
        from flowcore.server.app import create_app

        return create_app
    raise AttributeError(f"module 'flowcore.server' has no attribute {name!r}")
