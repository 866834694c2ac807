"""Spec: FLOWCORE_DATABASE_URL picks SQLite or Postgres, and open_backends opens all four stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowcore.errors import InvalidInputError
from flowcore.storage import (
    DatabaseTarget,
    database_url_from_env,
    open_backends,
    parse_database_url,
)


@pytest.mark.parametrize(
    ("value", "target"),
    [
        ("flowcore.db", DatabaseTarget("sqlite", "flowcore.db")),
        ("/var/lib/f.db", DatabaseTarget("sqlite", "/var/lib/f.db")),
        ("sqlite:///rel/f.db", DatabaseTarget("sqlite", "rel/f.db")),
        ("sqlite:////abs/f.db", DatabaseTarget("sqlite", "/abs/f.db")),
        ("postgresql://a:b@h:5432/d", DatabaseTarget("postgres", "postgresql://a:b@h:5432/d")),
        ("postgres://h/d", DatabaseTarget("postgres", "postgres://h/d")),
    ],
)
def test_each_form_names_its_backend(value: str, target: DatabaseTarget) -> None:
    assert parse_database_url(value) == target


def test_the_display_form_hides_the_password_and_an_unknown_scheme_is_refused() -> None:
    assert parse_database_url("postgresql://app:s3cret@db/x").display == "postgresql://app:***@db/x"
    with pytest.raises(InvalidInputError, match="sqlite:////path") as caught:
        parse_database_url("mysql://app:s3cret@db/x")
    assert "s3cret" not in str(caught.value)
    assert database_url_from_env({}) is None
    assert database_url_from_env({"FLOWCORE_DATABASE_URL": "  "}) is None


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_open_backends_opens_four_stores_that_work(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from flowcore.checkpoint import Checkpoint

    where = (
        str(tmp_path / "all.db") if kind == "sqlite" else request.getfixturevalue("pg_schema_url")
    )
    async with open_backends(where) as b:
        assert b.target.kind == kind
        await b.checkpoints.put(Checkpoint("t", "c1", None, step=0, created_at=0.0))
        await b.memory.put(("users", "ada"), "city", "Lyon")
        assert (await b.checkpoints.get("t")) is not None
        assert (await b.memory.get(("users", "ada"), "city")) is not None
        assert [x.id for x in await b.blocks.search("summarize a text", limit=1)] == ["summarize"]
        assert await b.history.list() == []
