"""Spec: no log record shows a secret while a CLI command runs, wherever it is written.

The command's redaction covers handlers attached after it started (a
library configuring logging late) and records of any logger, down to a
third-party child logger's DEBUG lines that never reach the root logger;
once the command returns, logging is as it was.
"""

from __future__ import annotations

import argparse
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

from flowcore.cli import main
from flowcore.cli.commands import COMMANDS
from flowcore.cli.redaction import redacted_output
from flowcore.secrets import SecretRedactor

KEY = "sk-cli-log-0123456789abcdef"


@pytest.fixture
def sdk_logger() -> Iterator[logging.Logger]:
    """A vendor SDK's logger: its own handlers, DEBUG, not propagating to the root."""
    logger = logging.getLogger("vendor_sdk.http")
    saved = logger.level, logger.propagate
    yield logger
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.setLevel(saved[0])
    logger.propagate = saved[1]


def test_a_handler_attached_while_a_command_runs_writes_no_secret(
    monkeypatch: pytest.MonkeyPatch, sdk_logger: logging.Logger, tmp_path: Path
) -> None:
    monkeypatch.setenv("PAYMENTS_API_KEY", KEY)
    late = io.StringIO()
    real_runs = COMMANDS["runs"]

    async def runs_with_chatty_sdk(args: argparse.Namespace, out: TextIO) -> int:
        # What an SDK does the first time it is used: configure its logger, then log.
        sdk_logger.addHandler(logging.StreamHandler(late))
        sdk_logger.setLevel(logging.DEBUG)
        sdk_logger.propagate = False
        sdk_logger.debug("POST /v1/chat headers={'authorization': 'Bearer %s'}", KEY)
        try:
            raise ConnectionError(f"refused for key {KEY}")
        except ConnectionError:
            sdk_logger.debug("retrying", exc_info=True, extra={"api_key": KEY})
        code: int = await real_runs(args, out)
        return code

    monkeypatch.setitem(COMMANDS, "runs", runs_with_chatty_sdk)
    out, err = io.StringIO(), io.StringIO()

    code = main(["runs", "list", "--db", str(tmp_path / "runs.db")], stdout=out, stderr=err)

    assert code == 0, err.getvalue()
    written = late.getvalue()
    assert "POST /v1/chat" in written  # both records came out
    assert "ConnectionError" in written
    assert KEY not in written
    assert "[REDACTED]" in written


def test_after_the_command_logging_is_left_as_it_was(sdk_logger: logging.Logger) -> None:
    factory = logging.getLogRecordFactory()
    add_handler = logging.Logger.addHandler
    seen = io.StringIO()
    handler = logging.StreamHandler(seen)
    sdk_logger.addHandler(handler)
    sdk_logger.setLevel(logging.DEBUG)
    sdk_logger.propagate = False

    with redacted_output(SecretRedactor([KEY]), io.StringIO(), io.StringIO()):
        sdk_logger.debug("inside %s", KEY)
        assert handler.filters  # redacting now

    sdk_logger.debug("outside %s", KEY)
    assert seen.getvalue() == f"inside [REDACTED]\noutside {KEY}\n"
    assert handler.filters == []
    assert logging.getLogRecordFactory() is factory
    assert logging.Logger.addHandler is add_handler


def test_printed_text_and_stderr_are_redacted_too(capsys: Any) -> None:
    out, err = io.StringIO(), io.StringIO()

    with redacted_output(SecretRedactor([KEY]), out, err) as (safe_out, _):
        print(f"stray print {KEY}")
        safe_out.write(f"table row {KEY}\n")

    assert out.getvalue() == "stray print [REDACTED]\ntable row [REDACTED]\n"
    assert capsys.readouterr().out == ""
