"""Spec: a SqliteBlockStore shared by the runs of a process, beside other processes.

Saves of several runs at once each become their own transaction, and a save
waits for another process's write lock (as the busy timeout allows) even
while another run of the same process is reading: a read left half-stepped
on the shared connection would make SQLite refuse the save at once with
"database is locked".
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from flowcore.blocks import BlockDefinition, SqliteBlockStore

HOLDER = Path(__file__).resolve().parents[1] / "sqlite_lock_holder.py"


def _block(block_id: str, description: str = "Shorten a text") -> BlockDefinition:
    return BlockDefinition.model_validate(
        {
            "id": block_id,
            "name": block_id.title(),
            "description": description,
            "kind": "llm",
            "prompt_template": "Shorten {{ text }}",
            "input_keys": ["text"],
            "output_keys": ["short"],
            "category": "process",
            "tags": ["text"],
        }
    )


def _hold_write_lock(db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HOLDER), str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_saves_of_several_runs_at_once_each_store_a_version(tmp_path: Path) -> None:
    async with SqliteBlockStore(tmp_path / "flowcore.db") as store:
        saved = await asyncio.gather(
            *(store.save(_block("shorten", f"Shorten a text, take {n}")) for n in range(5)),
            *(store.save(_block(f"other{n}")) for n in range(5)),
        )

        assert sorted(b.version for b in saved[:5]) == [1, 2, 3, 4, 5]
        assert await store.versions("shorten") == [1, 2, 3, 4, 5]
        assert [b.version for b in saved[5:]] == [1] * 5


async def test_a_save_waits_for_another_process_while_a_read_of_the_same_store_is_under_way(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flowcore.db"
    async with SqliteBlockStore(db) as store:
        holder = _hold_write_lock(db)
        try:
            assert await asyncio.to_thread(holder.stdout.readline) == "locked\n"  # type: ignore[union-attr]

            async def read_then_let_go() -> int:
                # Another run reads while the other process holds the write lock;
                # the lock is let go only once that read is done.
                blocks = await store.list_blocks()
                holder.stdin.write("go\n")  # type: ignore[union-attr]
                holder.stdin.flush()  # type: ignore[union-attr]
                return len(blocks)

            listed, saved = await asyncio.gather(read_then_let_go(), store.save(_block("shorten")))
            out, err = await asyncio.to_thread(holder.communicate, timeout=60)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.communicate()
        assert holder.returncode == 0, err
        assert out == "released\n"
        assert listed > 0  # the builtin blocks
        assert saved.version == 1
        assert (await store.get("shorten")).description == "Shorten a text"
