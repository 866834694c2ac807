"""Spec: opening one more store on a file keeps this process's SQLite locks on it.

Each SQLite store first checks that its file is SQLite. Were that check to
open and close the file itself, the process would lose every POSIX lock it
holds on the file, its other stores' included; another process closing its
last connection would then take itself for the only user and delete the WAL
and its index under this process's live connections.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from flowcore.history import SqliteRunHistory
from flowcore.memory import SqliteStore
from flowcore.memory.rows import encode_namespace
from flowcore.memory.store import to_json

WRITE_AND_CLOSE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
conn.execute(
    "INSERT OR REPLACE INTO flowcore_memory VALUES (?, 'k', ?, 0)", (sys.argv[2], sys.argv[3])
)
conn.close()
"""


async def test_another_process_closing_the_file_leaves_the_wal_of_this_process_in_place(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flowcore.db"
    async with SqliteStore(db) as memory:
        await memory.put(("users", "ada"), "food", "tacos")
        # Opened second: its check of the file runs while the memory store holds it.
        async with SqliteRunHistory(db):
            done = await asyncio.to_thread(
                subprocess.run,
                [
                    sys.executable,
                    "-c",
                    WRITE_AND_CLOSE,
                    str(db),
                    encode_namespace(("other",)),
                    to_json(("other",), "k", "theirs"),
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            # The other process knew it was not alone: it left the WAL and its index.
            assert sorted(await asyncio.to_thread(os.listdir, tmp_path)) == [
                "flowcore.db",
                "flowcore.db-shm",
                "flowcore.db-wal",
            ]
            await memory.put(("users", "ada"), "drink", "tea")
            assert [i.key for i in await memory.list(("users", "ada"))] == ["drink", "food"]
            theirs = await memory.get(("other",), "k")  # the other process's commit
            assert theirs is not None
            assert theirs.value == "theirs"
