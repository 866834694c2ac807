"""The tables of a ``SqliteCheckpointer`` file and the statements that write them.

Private to :mod:`flowcore.checkpoint.sqlite`. Holds the schema migrations
(each version's steps, applied on open by
:class:`~flowcore.checkpoint._sqlite_connections.SqliteConnections`), the
version this flowcore writes, and the SQL that stores checkpoints, pending
writes and thread leases, with the one-row-at-a-time forms that name the item
at fault. Nothing here opens a file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiosqlite

from flowcore.checkpoint.serde import Serializer
from flowcore.errors import CheckpointError, CheckpointNotFoundError

__all__ = [
    "INSERT_CHECKPOINT",
    "MIGRATIONS",
    "NOW",
    "RELEASE_LEASE",
    "SCHEMA_VERSION",
    "SIBLING_TABLES",
    "TAKE_LEASE",
    "UPSERT_WRITE",
    "CheckpointMigrationStep",
    "insert_checkpoint",
    "upsert_write",
]

CheckpointMigrationStep = str | Callable[[aiosqlite.Connection, Serializer], Awaitable[None]]
"""One statement, or a coroutine that rewrites data (it gets the store's serializer)."""


async def _backfill_is_snapshot(conn: aiosqlite.Connection, serde: Serializer) -> None:
    # v1 files have no is_snapshot column; the only truth is inside each record.
    rows = await conn.execute_fetchall("SELECT seq, record FROM checkpoints")
    flags = [(int(serde.loads(record).get("snapshot") is not None), seq) for seq, record in rows]
    await conn.executemany("UPDATE checkpoints SET is_snapshot = ? WHERE seq = ?", flags)


MIGRATIONS: tuple[tuple[CheckpointMigrationStep, ...], ...] = (
    # v1: the tables.
    (
        "CREATE TABLE flowcore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        # seq is the rowid: always larger than every row present, so it orders a
        # thread's checkpoints by insertion even across forks.
        """CREATE TABLE checkpoints (
            seq INTEGER PRIMARY KEY,
            thread_id TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            parent_id TEXT,
            step INTEGER NOT NULL,
            created_at REAL NOT NULL,
            record BLOB NOT NULL,
            UNIQUE (thread_id, checkpoint_id)
        )""",
        """CREATE TABLE writes (
            thread_id TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            node TEXT NOT NULL,
            seq INTEGER NOT NULL,
            payload BLOB NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_id, node)
        )""",
    ),
    # v2: snapshots findable without decoding records; indexes for history and write order.
    (
        "ALTER TABLE checkpoints ADD COLUMN is_snapshot INTEGER NOT NULL DEFAULT 0",
        _backfill_is_snapshot,
        "CREATE INDEX checkpoints_history ON checkpoints (thread_id, seq)",
        "CREATE INDEX writes_order ON writes (thread_id, checkpoint_id, seq)",
    ),
    # v3: who runs each thread now, and until when (Unix time) unless renewed.
    (
        """CREATE TABLE thread_leases (
            thread_id TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at REAL NOT NULL
        )""",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this flowcore writes; files with an older one are migrated on open."""
# Tables of the other flowcore stores, which may live in the same file.
SIBLING_TABLES = ("flowcore_", "blocks", "block_tags", "run_history_")


INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, "
    "is_snapshot, record) SELECT :thread_id, :checkpoint_id, :parent_id, :step, :created_at, "
    ":is_snapshot, :record WHERE :parent_id IS NULL OR EXISTS (SELECT 1 FROM checkpoints "
    "WHERE thread_id = :thread_id AND checkpoint_id = :parent_id)"
)
# A replaced write moves to the end, as if saved anew (oldest first).
UPSERT_WRITE = (
    "INSERT INTO writes (thread_id, checkpoint_id, node, seq, payload) "
    "SELECT :thread_id, :checkpoint_id, :node, (SELECT COALESCE(MAX(seq), 0) + 1 FROM writes "
    "WHERE thread_id = :thread_id AND checkpoint_id = :checkpoint_id), :payload "
    "WHERE EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = :thread_id "
    "AND checkpoint_id = :checkpoint_id) "
    "ON CONFLICT (thread_id, checkpoint_id, node) "
    "DO UPDATE SET seq = excluded.seq, payload = excluded.payload"
)


# Taken when free, renewed by its holder, taken over once expired; else no row changes
# and none is returned. The clock (Python's time.time, registered on the writer
# connection) is read inside the statement, under the write lock, so no other taker
# runs between reading it and writing.
NOW = "flowcore_now"
TAKE_LEASE = (
    "INSERT INTO thread_leases (thread_id, holder, expires_at) "
    f"VALUES (:t, :h, {NOW}() + :ttl) "
    "ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, "
    "expires_at = excluded.expires_at "
    "WHERE thread_leases.holder = excluded.holder "
    "OR thread_leases.expires_at <= excluded.expires_at - :ttl "
    "RETURNING expires_at"
)

RELEASE_LEASE = "DELETE FROM thread_leases WHERE thread_id = ? AND holder = ?"


async def insert_checkpoint(conn: aiosqlite.Connection, row: dict[str, Any]) -> None:
    """Insert one checkpoint row, naming what is wrong if its id exists or its parent does not.

    Example:
        >>> # await insert_checkpoint(writer, item_row(checkpoint, blob))
    """
    found = {
        str(r[0])
        for r in await conn.execute_fetchall(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = :thread_id "
            "AND checkpoint_id IN (:checkpoint_id, :parent_id)",
            row,
        )
    }
    thread_id, parent_id = row["thread_id"], row["parent_id"]
    if row["checkpoint_id"] in found:
        raise CheckpointError(
            f"checkpoint {row['checkpoint_id']!r} already exists in thread "
            f"{thread_id!r}; checkpoint ids must be new"
        )
    if parent_id is not None and parent_id not in found:
        raise CheckpointNotFoundError(
            f"parent checkpoint {parent_id!r} is not in thread {thread_id!r}",
            thread_id=thread_id,
            checkpoint_id=parent_id,
        )
    await conn.execute_fetchall(INSERT_CHECKPOINT, row)


async def upsert_write(conn: aiosqlite.Connection, row: dict[str, Any]) -> None:
    """Store or replace one pending-write row, naming its checkpoint if that is missing.

    Example:
        >>> # await upsert_write(writer, item_row(WriteAt("t", "c1", write), blob))
    """
    cursor = await conn.execute(UPSERT_WRITE, row)
    if cursor.rowcount != 1:
        thread_id, checkpoint_id = row["thread_id"], row["checkpoint_id"]
        raise CheckpointNotFoundError(
            f"checkpoint {checkpoint_id!r} is not in thread {thread_id!r}",
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
        )
