"""``SqliteCheckpointer``: threads in one SQLite file, safe for many runs and processes.

How it stays safe under load:

* WAL journaling, so readers never block the writer and vice versa.
* Every write is one ``BEGIN IMMEDIATE`` transaction. A deferred transaction
  that reads and then writes cannot wait for the lock it needs and fails
  with "database is locked"; an immediate one takes the write lock up front
  and waits (``busy_timeout``, at least 5 s, then retries) for its turn.
* One writer connection per instance, fed by a queue and drained by one
  task, so the runs of one process never contend with each other. Reads use
  a second connection.
* ``PRAGMA wal_checkpoint(TRUNCATE)`` every ``wal_truncate_every`` commits,
  so a WAL file kept alive by constant readers cannot grow without bound.

``synchronous="NORMAL"`` (the default) survives a crash of the process but
not a power loss or OS crash, which can lose the last commits;
``synchronous="FULL"`` survives those too, at some cost per commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import aiosqlite

from flowcore.checkpoint.protocol import Checkpoint, PendingWrite
from flowcore.checkpoint.records import checkpoint_from_record, checkpoint_to_record
from flowcore.checkpoint.serde import JsonSerializer, Serializer
from flowcore.errors import CheckpointError, CheckpointNotFoundError, CheckpointStoreError

__all__ = ["SCHEMA_VERSION", "SqliteCheckpointer"]

_KIND = "flowcore-checkpoints"
_SQLITE_HEADER = b"SQLite format 3\x00"

# Each step upgrades the schema by one version; applied in one transaction.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: the tables
        "CREATE TABLE IF NOT EXISTS flowcore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE checkpoints (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            thread_id TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            parent_id TEXT,
            step INTEGER NOT NULL,
            created_at REAL NOT NULL,
            is_snapshot INTEGER NOT NULL,
            record BLOB NOT NULL,
            UNIQUE (thread_id, checkpoint_id))""",
        """CREATE TABLE writes (
            seq INTEGER NOT NULL,
            thread_id TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            node TEXT NOT NULL,
            payload BLOB NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_id, node))""",
    ),
    (  # 2: indexes for newest-first history and ordered pending writes
        "CREATE INDEX IF NOT EXISTS checkpoints_by_thread ON checkpoints (thread_id, seq)",
        "CREATE INDEX IF NOT EXISTS writes_by_checkpoint ON writes (thread_id, checkpoint_id, seq)",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)
"""The schema version this flowcore writes; older files are migrated on open."""

Job = Callable[[aiosqlite.Connection], Awaitable[Any]]


class SqliteCheckpointer:
    """A :class:`~flowcore.checkpoint.protocol.Checkpointer` on one SQLite file.

    Open it before use, with ``async with`` or :meth:`open`; share one
    instance per file within a process.

    Example:
        >>> # async with SqliteCheckpointer("threads.db") as store:
        >>> #     app = graph.compile(checkpointer=store)
        >>> #     await app.run({"q": "hi"}, thread_id="t1")
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        busy_timeout: float = 5.0,
        wal_truncate_every: int = 1000,
        serializer: Serializer | None = None,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise CheckpointError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if busy_timeout < 5.0:
            raise CheckpointError(
                f"busy_timeout must be at least 5 seconds, got {busy_timeout}: shorter waits "
                "make concurrent writers fail with 'database is locked'"
            )
        if wal_truncate_every < 1:
            raise CheckpointError(f"wal_truncate_every must be >= 1, got {wal_truncate_every}")
        self.path = Path(path)
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self.wal_truncate_every = wal_truncate_every
        self.before_commit: Callable[[], None] | None = None
        """Test hook: called inside every write transaction, just before COMMIT."""
        self._serde = serializer or JsonSerializer()
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._queue: asyncio.Queue[tuple[Job, asyncio.Future[Any]] | None] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._commits = 0

    # ------------------------------------------------------------- lifecycle
    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> Self:
        """Create and open a store in one step.

        Example:
            >>> # store = await SqliteCheckpointer.open("threads.db")
        """
        store = cls(path, **options)
        await store._open()
        return store

    async def __aenter__(self) -> Self:
        await self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _open(self) -> None:
        if self._writer is not None:
            return
        self._check_header()
        writer = await self._connect()
        try:
            await self._check_kind(writer)
            await self._pragma(writer, "PRAGMA journal_mode=WAL")
            await self._pragma(writer, f"PRAGMA synchronous={self.synchronous}")
            await self._migrate(writer)
            reader = await self._connect()
        except BaseException:
            await writer.close()
            raise
        self._writer, self._reader = writer, reader
        self._queue = asyncio.Queue()
        self._worker = asyncio.get_running_loop().create_task(self._drain(self._queue, writer))

    async def aclose(self) -> None:
        """Finish queued writes, stop the writer task and close both connections."""
        queue, worker = self._queue, self._worker
        if queue is not None and worker is not None and not worker.done():
            queue.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._queue = self._worker = None
        for conn in (self._writer, self._reader):
            if conn is not None:
                await conn.close()
        self._writer = self._reader = None

    def _check_header(self) -> None:
        # Read the header ourselves: sqlite would only complain later, and a
        # journal_mode change must never touch a file that is not ours.
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
        if header != _SQLITE_HEADER:
            raise CheckpointStoreError(
                f"{self.path} is not an SQLite database (corrupt, or another kind of file); "
                "point SqliteCheckpointer at a new file or at one it created"
            )

    async def _connect(self) -> aiosqlite.Connection:
        try:
            conn = await aiosqlite.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise CheckpointStoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            await self._pragma(conn, f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _pragma(self, conn: aiosqlite.Connection, sql: str) -> None:
        try:
            async with conn.execute(sql) as cur:
                await cur.fetchall()
        except sqlite3.DatabaseError as exc:
            raise CheckpointStoreError(f"{self.path} is unusable: {exc}") from exc

    async def _check_kind(self, conn: aiosqlite.Connection) -> None:
        try:
            async with conn.execute("SELECT name FROM sqlite_master WHERE type='table'") as cur:
                tables = {row[0] for row in await cur.fetchall()}
            version = 0
            if "flowcore_meta" in tables:
                async with conn.execute(
                    "SELECT key, value FROM flowcore_meta WHERE key IN ('kind', 'schema_version')"
                ) as cur:
                    meta: dict[str, str] = {str(k): str(v) for k, v in await cur.fetchall()}
                if meta.get("kind") != _KIND:
                    raise CheckpointStoreError(
                        f"{self.path} has a flowcore_meta table but is not a flowcore "
                        "checkpoint database"
                    )
                version = int(meta.get("schema_version", "0"))
            elif tables - {"sqlite_sequence"}:
                raise CheckpointStoreError(
                    f"{self.path} is an SQLite database of something else (tables: "
                    f"{', '.join(sorted(tables))}); use a separate file for flowcore checkpoints"
                )
        except sqlite3.DatabaseError as exc:
            raise CheckpointStoreError(f"{self.path} is corrupt or not a database: {exc}") from exc
        if version > SCHEMA_VERSION:
            raise CheckpointStoreError(
                f"{self.path} has schema version {version}, newer than this flowcore knows "
                f"({SCHEMA_VERSION}); upgrade flowcore to open it"
            )

    async def _migrate(self, conn: aiosqlite.Connection) -> None:
        async def step(c: aiosqlite.Connection) -> None:
            async with c.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name='flowcore_meta'"
            ) as cur:
                has_meta = await cur.fetchone() is not None
            version = 0
            if has_meta:
                async with c.execute(
                    "SELECT value FROM flowcore_meta WHERE key='schema_version'"
                ) as cur:
                    row = await cur.fetchone()
                version = int(row[0]) if row else 0
            # Another process may have migrated between our check and our lock.
            for number, statements in enumerate(_MIGRATIONS, start=1):
                if number <= version:
                    continue
                for sql in statements:
                    await c.execute(sql)
            await c.execute(
                "INSERT OR REPLACE INTO flowcore_meta (key, value) VALUES ('kind', ?)", (_KIND,)
            )
            await c.execute(
                "INSERT OR REPLACE INTO flowcore_meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

        await self._transaction(conn, step)

    # -------------------------------------------------------------- writing
    async def _transaction(self, conn: aiosqlite.Connection, job: Job) -> Any:
        delay = 0.05
        for attempt in range(8):
            try:
                await conn.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as exc:
                # busy_timeout already waited; very heavy multi-process load
                # can still outlast it, so wait and take the lock again.
                if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == 7:
                    raise CheckpointError(f"{self.path}: cannot start a write: {exc}") from exc
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
        try:
            result = await job(conn)
            if self.before_commit is not None:
                self.before_commit()
            await conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                await conn.execute("ROLLBACK")
            raise
        return result

    async def _drain(
        self,
        queue: asyncio.Queue[tuple[Job, asyncio.Future[Any]] | None],
        conn: aiosqlite.Connection,
    ) -> None:
        while True:
            item = await queue.get()
            if item is None:
                return
            job, done = item
            try:
                result = await self._transaction(conn, job)
            except Exception as exc:
                if not done.cancelled():
                    done.set_exception(exc)
                continue
            if not done.cancelled():
                done.set_result(result)
            self._commits += 1
            if self._commits % self.wal_truncate_every == 0:
                with contextlib.suppress(sqlite3.Error):
                    async with conn.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cur:
                        await cur.fetchall()

    async def _write(self, job: Job) -> Any:
        queue = self._queue
        if queue is None:
            raise CheckpointError(
                "SqliteCheckpointer is not open; use 'async with SqliteCheckpointer(path)' "
                "or 'await SqliteCheckpointer.open(path)'"
            )
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        queue.put_nowait((job, done))
        # shield: a caller cancelled mid-write must not leave the transaction half done;
        # the writer task finishes it either way.
        return await asyncio.shield(done)

    def _read_conn(self) -> aiosqlite.Connection:
        if self._reader is None:
            raise CheckpointError(
                "SqliteCheckpointer is not open; use 'async with SqliteCheckpointer(path)' "
                "or 'await SqliteCheckpointer.open(path)'"
            )
        return self._reader

    # ------------------------------------------------------------ protocol
    async def put(self, checkpoint: Checkpoint) -> None:
        """Store a new checkpoint (see :class:`Checkpointer.put`)."""
        # Serialize first: an unstorable value fails before any lock is taken.
        blob = self._serde.dumps(checkpoint_to_record(checkpoint), path="checkpoint")
        cp = checkpoint

        async def job(c: aiosqlite.Connection) -> None:
            # One statement checks the parent and inserts: each statement is a
            # trip to aiosqlite's thread, and those trips are most of the cost.
            try:
                cur = await c.execute(
                    "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, "
                    "created_at, is_snapshot, record) SELECT ?, ?, ?, ?, ?, ?, ? "
                    "WHERE ? IS NULL OR EXISTS (SELECT 1 FROM checkpoints "
                    "WHERE thread_id = ? AND checkpoint_id = ?)",
                    (
                        cp.thread_id,
                        cp.checkpoint_id,
                        cp.parent_id,
                        cp.step,
                        cp.created_at,
                        int(cp.snapshot is not None),
                        blob,
                        cp.parent_id,
                        cp.thread_id,
                        cp.parent_id,
                    ),
                )
            except sqlite3.IntegrityError:
                raise CheckpointError(
                    f"checkpoint {cp.checkpoint_id!r} already exists in thread "
                    f"{cp.thread_id!r}; checkpoint ids must be new"
                ) from None
            if cur.rowcount == 0:
                raise CheckpointNotFoundError(
                    f"parent checkpoint {cp.parent_id!r} is not in thread {cp.thread_id!r}",
                    thread_id=cp.thread_id,
                    checkpoint_id=cp.parent_id,
                )

        await self._write(job)

    async def put_write(self, thread_id: str, checkpoint_id: str, write: PendingWrite) -> None:
        """Store or replace one node's pending write (see :class:`Checkpointer.put_write`)."""
        blob = self._serde.dumps(dict(write.payload), path=f"write of node {write.node!r}")

        async def job(c: aiosqlite.Connection) -> None:
            cur = await c.execute(
                "INSERT INTO writes (seq, thread_id, checkpoint_id, node, payload) "
                "SELECT (SELECT COALESCE(MAX(seq), 0) + 1 FROM writes), ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = ? "
                "AND checkpoint_id = ?) "
                "ON CONFLICT (thread_id, checkpoint_id, node) DO UPDATE SET "
                "payload = excluded.payload, seq = excluded.seq",
                (thread_id, checkpoint_id, write.node, blob, thread_id, checkpoint_id),
            )
            if cur.rowcount == 0:
                raise CheckpointNotFoundError(
                    f"checkpoint {checkpoint_id!r} is not in thread {thread_id!r}",
                    thread_id=thread_id,
                    checkpoint_id=checkpoint_id,
                )

        await self._write(job)

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """A checkpoint by id, or the thread's latest (see :class:`Checkpointer.get`)."""
        conn = self._read_conn()
        if checkpoint_id is None:
            sql = "SELECT record FROM checkpoints WHERE thread_id=? ORDER BY seq DESC LIMIT 1"
            params: tuple[str, ...] = (thread_id,)
        else:
            sql = "SELECT record FROM checkpoints WHERE thread_id=? AND checkpoint_id=?"
            params = (thread_id, checkpoint_id)
        async with conn.execute(sql, params) as cur:
            row = await cur.fetchone()
        return None if row is None else checkpoint_from_record(self._serde.loads(row[0]))

    async def get_writes(self, thread_id: str, checkpoint_id: str) -> tuple[PendingWrite, ...]:
        """Pending writes of a checkpoint, oldest first."""
        conn = self._read_conn()
        async with conn.execute(
            "SELECT node, payload FROM writes WHERE thread_id=? AND checkpoint_id=? ORDER BY seq",
            (thread_id, checkpoint_id),
        ) as cur:
            rows = await cur.fetchall()
        return tuple(PendingWrite(node, self._serde.loads(payload)) for node, payload in rows)

    async def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> list[Checkpoint]:
        """Checkpoints of a thread, newest first (see :class:`Checkpointer.history`)."""
        conn = self._read_conn()
        bound = None
        if before is not None:
            async with conn.execute(
                "SELECT seq FROM checkpoints WHERE thread_id=? AND checkpoint_id=?",
                (thread_id, before),
            ) as cur:
                row = await cur.fetchone()
            if row is None:
                raise CheckpointNotFoundError(
                    f"checkpoint {before!r} is not in thread {thread_id!r}",
                    thread_id=thread_id,
                    checkpoint_id=before,
                )
            bound = int(row[0])
        sql = "SELECT record FROM checkpoints WHERE thread_id=?"
        params: list[Any] = [thread_id]
        if bound is not None:
            sql += " AND seq < ?"
            params.append(bound)
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        async with conn.execute(sql, params) as cur:
            rows = await cur.fetchall()
        return [checkpoint_from_record(self._serde.loads(r[0])) for r in rows]

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and pending write of a thread."""

        async def job(c: aiosqlite.Connection) -> None:
            await c.execute("DELETE FROM writes WHERE thread_id=?", (thread_id,))
            await c.execute("DELETE FROM checkpoints WHERE thread_id=?", (thread_id,))

        await self._write(job)
