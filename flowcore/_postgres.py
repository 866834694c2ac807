"""What every Postgres store shares: the pool, URL redaction, versioned schemas.

psycopg is an optional extra (``pip install 'flowcore[postgres]'``): it is
imported here, lazily, only when a Postgres store opens, so ``import
flowcore`` never needs it.

Several stores may share one database; ``flowcore_schema_versions`` keeps one
schema version per store kind, and each store migrates its own tables under a
transaction-scoped advisory lock shared by all stores, so processes opening at once
never race.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flowcore.errors import InvalidInputError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["is_postgres_url", "migrate", "open_pool", "redact_url"]

_PASSWORD_IN_NETLOC = re.compile(r"(?P<head>://[^:/@\s]*):[^@/\s]*@")
_PASSWORD_PARAM = re.compile(r"(?P<head>\bpassword=)[^&\s]*", re.IGNORECASE)


def is_postgres_url(url: str) -> bool:
    """True for ``postgresql://`` and ``postgres://`` URLs.

    Example:
        >>> is_postgres_url("postgresql://app@db/flowcore"), is_postgres_url("runs.db")
        (True, False)
    """
    return urlsplit(url).scheme in ("postgresql", "postgres")


def redact_url(url: str) -> str:
    """The URL with its password (in the netloc or a ``password=`` parameter) hidden.

    Example:
        >>> redact_url("postgresql://app:s3cret@db:5432/flowcore?password=x")
        'postgresql://app:***@db:5432/flowcore?password=***'
    """
    url = _PASSWORD_IN_NETLOC.sub(r"\g<head>:***@", url)
    return _PASSWORD_PARAM.sub(r"\g<head>***", url)


def scrub(text: str, url: str) -> str:
    """``text`` (an error message) with the URL's password removed wherever it appears."""
    parts = urlsplit(url)
    secret = parts.password
    text = text.replace(url, redact_url(url))
    if secret:
        text = text.replace(secret, "***")
    return text


def _require_psycopg(what: str) -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise InvalidInputError(
            f"{what} needs psycopg 3 and psycopg-pool; install them with "
            "pip install 'flowcore[postgres]'"
        ) from exc


async def open_pool(
    url: str,
    *,
    what: str,
    error: type[Exception],
    min_size: int = 1,
    max_size: int = 10,
    timeout: float = 30.0,
) -> AsyncConnectionPool[AsyncConnection[Any]]:
    """An open pool of autocommit connections to ``url``.

    Raises ``error`` (the store's own error type), with the URL redacted, if
    the server cannot be reached within ``timeout`` seconds.

    Example:
        >>> # pool = await open_pool(url, what="PostgresCheckpointer", error=CheckpointStoreError)
    """
    if not is_postgres_url(url):
        raise InvalidInputError(
            f"{what} needs a postgresql:// URL, got {redact_url(url)!r}; "
            "for example postgresql://user:password@localhost:5432/flowcore"
        )
    _require_psycopg(what)
    import psycopg
    from psycopg_pool import AsyncConnectionPool, PoolTimeout

    # One direct connection first: a wrong host, password or database fails at once with
    # the server's reason, where the pool would retry quietly until its timeout.
    try:
        probe = await psycopg.AsyncConnection.connect(url, connect_timeout=max(1, int(timeout)))
    except psycopg.Error as exc:
        raise error(
            f"{what}: cannot connect to {redact_url(url)}: {scrub(str(exc), url)}"
        ) from None
    await probe.close()
    pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True},
        open=False,
        timeout=timeout,
        name=f"flowcore {what}",
    )
    try:
        await pool.open(wait=True, timeout=timeout)
    except PoolTimeout:
        await pool.close()
        raise error(
            f"{what}: cannot connect to {redact_url(url)} within {timeout:g}s; "
            "check that the server runs and the URL (host, port, user, database) is right"
        ) from None
    except Exception as exc:
        await pool.close()
        raise error(f"{what}: cannot open {redact_url(url)}: {scrub(str(exc), url)}") from None
    return pool


_VERSIONS = (
    "CREATE TABLE IF NOT EXISTS flowcore_schema_versions "
    "(store TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)


async def migrate(
    conn: AsyncConnection[Any],
    *,
    store: str,
    steps: Sequence[Sequence[str]],
    error: type[Exception],
    where: str,
) -> None:
    """Bring ``store``'s tables up to ``len(steps)``, one version at a time, in one transaction.

    A database with a newer version than this flowcore knows is refused.

    Example:
        >>> # await migrate(conn, store="checkpoint", steps=_MIGRATIONS, error=..., where=url)
    """
    async with conn.transaction():
        # One lock for every store's migration: they share the versions table, and two
        # CREATE TABLE IF NOT EXISTS of it at once fail in Postgres (a duplicate pg_type row)
        # even though each says IF NOT EXISTS. The first opener migrates; the others wait.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('flowcore:migrations'))")
        await conn.execute(_VERSIONS)
        cur = await conn.execute(
            "SELECT version FROM flowcore_schema_versions WHERE store = %s", (store,)
        )
        row = await cur.fetchone()
        have = 0 if row is None else int(row[0])
        if have > len(steps):
            raise error(
                f"{where} holds a {store} schema of version {have}, newer than this flowcore "
                f"knows ({len(steps)}); upgrade flowcore"
            )
        for version in range(have, len(steps)):
            for sql in steps[version]:
                await conn.execute(sql)
        if have < len(steps):
            await conn.execute(
                "INSERT INTO flowcore_schema_versions (store, version) VALUES (%s, %s) "
                "ON CONFLICT (store) DO UPDATE SET version = excluded.version",
                (store, len(steps)),
            )
