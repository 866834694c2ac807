"""A real, throwaway Postgres for the Postgres backend specs.

``FLOWCORE_TEST_POSTGRES_URL`` names a server to use; without it, a cluster
is created with Debian's ``initdb`` in a temp dir, started on a free loopback
port (its unix socket in the same dir), and stopped when the session ends.
As root, the cluster runs as ``nobody`` (Postgres refuses to run as root).

Each test gets its own schema (``pg_schema_url``: the URL with
``options=-csearch_path=...``), so tests never see each other's rows.

With no Postgres to be had the specs skip, saying why, unless
``FLOWCORE_REQUIRE_POSTGRES=1``, which makes that a failure (CI sets it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

__all__ = ["find_pg_bin", "pg_schema_url", "pg_server_url"]

_CANDIDATE_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/local/bin")


def find_pg_bin() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, if any."""
    for name in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (name / "initdb").exists():
            return name
    for d in _CANDIDATE_DIRS:
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
            return Path(d)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _unavailable(reason: str) -> None:
    if os.environ.get("FLOWCORE_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"FLOWCORE_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
    pytest.skip(f"no Postgres for the Postgres specs: {reason}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_owner(cmd: list[str]) -> list[str]:
    # Postgres refuses to run as root; nobody owns the data dir instead.
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


def _start_cluster(tmp: Path) -> tuple[str, list[str]]:
    bin_dir = find_pg_bin()
    if bin_dir is None:
        _unavailable("initdb is not installed (apt-get install postgresql)")
        raise AssertionError  # unreachable: skip/fail raise
    data, sock = tmp / "data", tmp / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        tmp.chmod(0o755)
        shutil.chown(sock, "nobody")
        data.mkdir(mode=0o700)
        shutil.chown(data, "nobody")
    port = _free_port()
    run = {"check": True, "capture_output": True, "timeout": 120, "cwd": tmp}
    subprocess.run(
        _as_owner([str(bin_dir / "initdb"), "-D", str(data), "-U", "flowcore", "-A", "trust"]),
        **run,  # type: ignore[call-overload]
    )
    log = sock / "log"
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c fsync=off"
    subprocess.run(
        _as_owner(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(log), "-w", "start"]
        ),
        **run,  # type: ignore[call-overload]
    )
    stop = _as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
    subprocess.run(
        [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "flowcore", "tests"],
        **run,  # type: ignore[call-overload]
    )
    return f"postgresql://flowcore@127.0.0.1:{port}/tests", stop


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """The URL of a database the session may create schemas in."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'flowcore[postgres]')")
    given = os.environ.get("FLOWCORE_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="flowcore-pg-") as name:
        try:
            url, stop = _start_cluster(Path(name))
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            _unavailable(f"could not start a throwaway cluster: {exc} {detail.decode()[-400:]}")
            raise AssertionError from exc  # unreachable
        try:
            yield url
        finally:
            subprocess.run(stop, capture_output=True, timeout=60, cwd=name)


@pytest.fixture
def pg_schema_url(pg_server_url: str) -> Iterator[str]:
    """A URL whose connections see only a fresh schema of their own."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in pg_server_url else "?"
    yield f"{pg_server_url}{sep}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        # Its siblings too: a test may make more schemas named after its own.
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
            (schema, f"{schema}\\_%"),
        ).fetchall()
        for (name,) in rows:
            conn.execute(f"DROP SCHEMA {name} CASCADE")
