"""``PostgresCheckpointer``: threads kept in Postgres, on psycopg 3 with a connection pool.

The twin of :class:`~flowcore.checkpoint.sqlite.SqliteCheckpointer` for
deployments where several processes or machines share the threads:

* the same records (delta checkpoints, pending writes) and serializer;
* every write is one transaction on a pooled connection; ``put_many`` stores
  a whole batch or none of it;
* **thread leases** in ``thread_leases``, taken with one upsert whose
  ``WHERE`` checks the holder and the expiry against the *server's* clock,
  so racing takers on any machine see one winner and clocks need not agree.

Install the extra first: ``pip install 'flowcore[postgres]'``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection, Sequence
from typing import TYPE_CHECKING, Any, Self

from flowcore._postgres import redact_url
from flowcore._postgres_store import PostgresStoreBase
from flowcore.checkpoint.lease import DEFAULT_LEASE_TTL, check_lease_ttl
from flowcore.checkpoint.protocol import Checkpoint, PendingWrite, StoreItem, ThreadLease, WriteAt
from flowcore.checkpoint.records import checkpoint_from_record, item_to_record
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.checkpoint.table_rows import check_replacement, item_row, writes_from_rows
from flowcore.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStoreError,
    ThreadBusyError,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresCheckpointer"]

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        # seq orders a thread's checkpoints by insertion, across forks too.
        """CREATE TABLE IF NOT EXISTS checkpoints (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            thread_id TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            parent_id TEXT,
            step INTEGER NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            is_snapshot BOOLEAN NOT NULL,
            record BYTEA NOT NULL,
            UNIQUE (thread_id, checkpoint_id)
        )""",
        "CREATE INDEX IF NOT EXISTS checkpoints_history ON checkpoints (thread_id, seq)",
        """CREATE TABLE IF NOT EXISTS checkpoint_writes (
            thread_id TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            node TEXT NOT NULL,
            seq BIGINT NOT NULL,
            payload BYTEA NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_id, node)
        )""",
        """CREATE TABLE IF NOT EXISTS thread_leases (
            thread_id TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        )""",
    ),
)

_NOW = "extract(epoch from clock_timestamp())::double precision"
# Taken when free, renewed by its holder, taken over once expired; else no row comes back.
_TAKE_LEASE = (
    "INSERT INTO thread_leases (thread_id, holder, expires_at) "
    f"VALUES (%(t)s, %(h)s, {_NOW} + %(ttl)s) "
    "ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, "
    "expires_at = excluded.expires_at "
    f"WHERE thread_leases.holder = excluded.holder OR thread_leases.expires_at <= {_NOW} "
    "RETURNING expires_at"
)
# A replaced write moves to the end, as if saved anew (oldest first).
_UPSERT_WRITE = (
    "INSERT INTO checkpoint_writes (thread_id, checkpoint_id, node, seq, payload) "
    "VALUES (%(thread_id)s, %(checkpoint_id)s, %(node)s, "
    "(SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoint_writes "
    "WHERE thread_id = %(thread_id)s AND checkpoint_id = %(checkpoint_id)s), %(payload)s) "
    "ON CONFLICT (thread_id, checkpoint_id, node) "
    "DO UPDATE SET seq = excluded.seq, payload = excluded.payload"
)


class PostgresCheckpointer(PostgresStoreBase):
    """A :class:`~flowcore.checkpoint.protocol.Checkpointer` in a Postgres database.

    Open it with ``async with`` or :meth:`open`; close it with :meth:`aclose`.
    Any number of processes may share the database; the tables are created
    (or migrated) on open. Errors name the URL with its password hidden.

    Args:
        url: ``postgresql://user:password@host:port/database``.
        serializer: How values become bytes; :class:`JsonSerializer` by default.
        lease_ttl: Seconds a thread's lease lasts without renewal (default 30).
        max_connections: The pool's size.

    Example:
        >>> # async with PostgresCheckpointer("postgresql://app@localhost/flowcore") as store:
        >>> #     await store.put(Checkpoint("t", "c1", None, step=0, created_at=0.0))
    """

    _what = "PostgresCheckpointer"
    _kind = "checkpoint"
    _migrations = _MIGRATIONS
    _store_error = CheckpointStoreError
    _closed_error = CheckpointError
    _not_open_error = CheckpointError
    _not_open = (
        "{store!r} is not open; use 'async with PostgresCheckpointer(url) as store:' "
        "or 'store = await PostgresCheckpointer.open(url)'"
    )

    def __init__(
        self,
        url: str,
        *,
        serializer: Serializer | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        max_connections: int = 10,
    ) -> None:
        super().__init__(url, max_connections=max_connections)
        self.lease_ttl = check_lease_ttl(lease_ttl)
        self._serde = serializer or JsonSerializer()

    def __repr__(self) -> str:
        return f"PostgresCheckpointer({redact_url(self.url)!r}, {self._state})"

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        serializer: Serializer | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        max_connections: int = 10,
    ) -> Self:
        """Create a store and open it; close it with :meth:`aclose`.

        Example:
            >>> # store = await PostgresCheckpointer.open(os.environ["FLOWCORE_DATABASE_URL"])
        """
        store = cls(
            url, serializer=serializer, lease_ttl=lease_ttl, max_connections=max_connections
        )
        await store._open()
        return store

    # ------------------------------------------------------------------ plumbing

    @contextlib.asynccontextmanager
    async def _tx(self, doing: str) -> AsyncIterator[AsyncConnection[Any]]:
        pool = self._require_open()
        async with self._errors(doing), pool.connection() as conn, conn.transaction():
            yield conn

    async def _read(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        pool = self._require_open()
        async with self._errors("read"), pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    def _decode(self, data: bytes, what: str) -> Any:
        try:
            return self._serde.loads(bytes(data))
        except Exception as exc:  # the stored bytes are bad
            raise CheckpointStoreError(f"cannot decode {what}: {exc}") from exc

    def _checkpoint(self, data: bytes, thread_id: str) -> Checkpoint:
        return checkpoint_from_record(self._decode(data, f"a checkpoint of thread {thread_id!r}"))

    def _row(self, item: StoreItem) -> dict[str, Any]:
        value, path = item_to_record(item)
        blob = self._serde.dumps(value, path=path)
        return item_row(item, blob, flag=bool)

    # ------------------------------------------------------------------ the protocol

    async def put(self, checkpoint: Checkpoint) -> None:
        """Store a new checkpoint (see :meth:`Checkpointer.put`).

        Example:
            >>> # await store.put(Checkpoint("t", "c2", "c1", step=1, created_at=0.0))
        """
        await self.put_many((checkpoint,))

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        """Store or replace one node's pending write (see :meth:`Checkpointer.put_write`).

        Example:
            >>> # await store.put_write("t", "c1", PendingWrite("search", {"hits": 3}))
        """
        await self.put_many((WriteAt(thread_id, checkpoint_id, write),))

    async def put_many(self, items: Sequence[StoreItem]) -> None:
        """Store checkpoints and writes in order, in one transaction (:class:`BatchCheckpointer`).

        Example:
            >>> # await store.put_many([checkpoint, WriteAt("t", checkpoint.checkpoint_id, w)])
        """
        self._require_open()
        rows = [self._row(item) for item in items]  # unstorable values fail before any I/O
        if not rows:
            return
        import psycopg

        try:
            async with self._tx("write") as conn:
                for row in rows:
                    if "record" in row:
                        await _insert_checkpoint(conn, row)
                    else:
                        await _upsert_write(conn, row)
        except CheckpointStoreError as exc:
            # Two puts of one id racing: the loser's insert hits the unique key.
            if isinstance(exc.__context__, psycopg.errors.UniqueViolation):
                raise CheckpointError(
                    "a checkpoint of this batch was stored by another writer at the same "
                    "time; checkpoint ids must be new"
                ) from None
            raise

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """A checkpoint by id, or the thread's latest (see :meth:`Checkpointer.get`).

        Example:
            >>> # latest = await store.get("t")
        """
        if checkpoint_id is None:
            rows = await self._read(
                "SELECT record FROM checkpoints WHERE thread_id = %(t)s ORDER BY seq DESC LIMIT 1",
                {"t": thread_id},
            )
        else:
            rows = await self._read(
                "SELECT record FROM checkpoints WHERE thread_id = %(t)s AND checkpoint_id = %(c)s",
                {"t": thread_id, "c": checkpoint_id},
            )
        return self._checkpoint(rows[0][0], thread_id) if rows else None

    async def get_writes(self, thread_id: str, checkpoint_id: str) -> tuple[PendingWrite, ...]:
        """Pending writes saved against a checkpoint, oldest first.

        Example:
            >>> # [w.node for w in await store.get_writes("t", "c1")]
        """
        rows = await self._read(
            "SELECT node, payload FROM checkpoint_writes WHERE thread_id = %(t)s "
            "AND checkpoint_id = %(c)s ORDER BY seq",
            {"t": thread_id, "c": checkpoint_id},
        )
        return writes_from_rows(rows, self._decode)

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> list[Checkpoint]:
        """Checkpoints of a thread, newest first (see :meth:`Checkpointer.history`).

        Example:
            >>> # older = await store.history("t", before="c9", limit=5)
        """
        params: dict[str, Any] = {"t": thread_id, "limit": limit}
        bound = ""
        if before is not None:
            rows = await self._read(
                "SELECT seq FROM checkpoints WHERE thread_id = %(t)s AND checkpoint_id = %(c)s",
                {"t": thread_id, "c": before},
            )
            if not rows:
                raise CheckpointNotFoundError(
                    f"checkpoint {before!r} is not in thread {thread_id!r}",
                    thread_id=thread_id,
                    checkpoint_id=before,
                )
            bound, params["bound"] = "AND seq < %(bound)s ", rows[0][0]
        rows = await self._read(
            f"SELECT record FROM checkpoints WHERE thread_id = %(t)s {bound}"
            "ORDER BY seq DESC LIMIT %(limit)s",
            params,
        )
        return [self._checkpoint(row[0], thread_id) for row in rows]

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and pending write of a thread (no-op if unknown).

        Example:
            >>> # await store.delete_thread("t")
        """
        async with self._tx("delete") as conn:
            await conn.execute("DELETE FROM checkpoint_writes WHERE thread_id = %s", (thread_id,))
            await conn.execute("DELETE FROM checkpoints WHERE thread_id = %s", (thread_id,))

    # ------------------------------------------------------------------ leases

    async def acquire_lease(self, thread_id: str, holder: str) -> ThreadLease:
        """Take or renew a thread's lease (see :class:`LeasingCheckpointer`).

        One upsert reads the holder, checks its expiry on the server's clock
        and writes the new one; a refused taker reads who holds it in the
        same transaction.

        Example:
            >>> # lease = await store.acquire_lease("t", new_holder_id())
        """
        ttl = self.lease_ttl
        while True:
            async with self._tx("lease") as conn:
                cur = await conn.execute(_TAKE_LEASE, {"t": thread_id, "h": holder, "ttl": ttl})
                won = await cur.fetchone()
                if won is not None:
                    return ThreadLease(thread_id, holder, float(won[0]), ttl)
                cur = await conn.execute(
                    "SELECT holder, expires_at FROM thread_leases WHERE thread_id = %s",
                    (thread_id,),
                )
                row = await cur.fetchone()
            if row is not None:
                raise ThreadBusyError(
                    thread_id=thread_id, holder=str(row[0]), expires_at=float(row[1])
                )
            # Its holder released it between our two statements: the thread is free, try again.

    async def release_lease(self, thread_id: str, holder: str) -> None:
        """Give a thread's lease back if ``holder`` has it.

        Example:
            >>> # await store.release_lease("t", holder)
        """
        async with self._tx("lease release") as conn:
            await conn.execute(
                "DELETE FROM thread_leases WHERE thread_id = %s AND holder = %s",
                (thread_id, holder),
            )

    # ------------------------------------------------------------------ maintenance

    async def threads(self, prefix: str = "") -> list[str]:
        """Ids of the threads with a checkpoint that start with ``prefix``, sorted.

        Example:
            >>> # await store.threads("project-")
        """
        rows = await self._read(
            "SELECT DISTINCT thread_id FROM checkpoints "
            "WHERE left(thread_id, length(%(p)s)) = %(p)s ORDER BY thread_id",
            {"p": prefix},
        )
        return [str(row[0]) for row in rows]

    async def rewrite(
        self,
        thread_id: str,
        *,
        delete: Collection[str] = (),
        replace: Sequence[Checkpoint] = (),
    ) -> None:
        """Delete and replace checkpoints of a thread in one transaction (see the protocol).

        Example:
            >>> # await store.rewrite("t", delete={"c1"}, replace=[new_c2_without_parent])
        """
        doomed = sorted(set(delete))
        rows = []
        for cp in replace:
            check_replacement(thread_id, cp, doomed, _not_in_thread)
            rows.append(self._row(cp))
        async with self._tx("rewrite") as conn:
            for cid in doomed:
                for table in ("checkpoint_writes", "checkpoints"):
                    await conn.execute(
                        f"DELETE FROM {table} WHERE thread_id = %s AND checkpoint_id = %s",
                        (thread_id, cid),
                    )
            for row in rows:
                cur = await conn.execute(
                    "UPDATE checkpoints SET parent_id = %(parent_id)s, step = %(step)s, "
                    "created_at = %(created_at)s, is_snapshot = %(is_snapshot)s, "
                    "record = %(record)s WHERE thread_id = %(thread_id)s "
                    "AND checkpoint_id = %(checkpoint_id)s",
                    row,
                )
                if cur.rowcount != 1:
                    raise _not_in_thread(thread_id, str(row["checkpoint_id"]))
            cur = await conn.execute(
                "SELECT checkpoint_id, parent_id FROM checkpoints c WHERE thread_id = %(t)s "
                "AND parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM checkpoints p "
                "WHERE p.thread_id = %(t)s AND p.checkpoint_id = c.parent_id) LIMIT 1",
                {"t": thread_id},
            )
            orphan = await cur.fetchone()
            if orphan is not None:
                raise CheckpointError(
                    f"rewriting thread {thread_id!r} would leave checkpoint {orphan[0]!r} with "
                    f"parent {orphan[1]!r}, which is not in the thread; replace {orphan[0]!r} "
                    "too, with another parent_id (or None)"
                )


def _not_in_thread(thread_id: str, checkpoint_id: str) -> CheckpointNotFoundError:
    return CheckpointNotFoundError(
        f"checkpoint {checkpoint_id!r} is not in thread {thread_id!r}",
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
    )


async def _insert_checkpoint(conn: AsyncConnection[Any], row: dict[str, Any]) -> None:
    cur = await conn.execute(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %(thread_id)s "
        "AND checkpoint_id IN (%(checkpoint_id)s, %(parent_id)s)",
        row,
    )
    found = {str(r[0]) for r in await cur.fetchall()}
    thread_id, parent_id = row["thread_id"], row["parent_id"]
    if row["checkpoint_id"] in found:
        raise CheckpointError(
            f"checkpoint {row['checkpoint_id']!r} already exists in thread "
            f"{thread_id!r}; checkpoint ids must be new"
        )
    if parent_id is not None and parent_id not in found:
        raise _not_in_thread(thread_id, parent_id)
    await conn.execute(
        "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, "
        "is_snapshot, record) VALUES (%(thread_id)s, %(checkpoint_id)s, %(parent_id)s, "
        "%(step)s, %(created_at)s, %(is_snapshot)s, %(record)s)",
        row,
    )


async def _upsert_write(conn: AsyncConnection[Any], row: dict[str, Any]) -> None:
    cur = await conn.execute(
        "SELECT 1 FROM checkpoints WHERE thread_id = %(thread_id)s "
        "AND checkpoint_id = %(checkpoint_id)s",
        row,
    )
    if await cur.fetchone() is None:
        raise _not_in_thread(row["thread_id"], row["checkpoint_id"])
    await conn.execute(_UPSERT_WRITE, row)
