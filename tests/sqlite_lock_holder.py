"""Another process holding a SQLite file's write lock until told to let go.

    python tests/sqlite_lock_holder.py DATABASE

Takes the write lock (``BEGIN IMMEDIATE``), prints ``locked``, waits for a
line on stdin, commits and prints ``released``. Used by the specs of the
SQLite stores (tests/memory, tests/blocks).
"""

from __future__ import annotations

import sqlite3
import sys


def main(database: str) -> None:
    conn = sqlite3.connect(database, timeout=30, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
    conn.close()
    print("released", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
