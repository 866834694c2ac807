"""Spec (issue 16): following docs/secrets.md keeps every secret out of every log line.

The end-to-end test takes the setup block of the page's "Logs" section word
for word and runs it at the start of a real program (``log_traffic.py``, in
a fresh process, with keys in its environment). That program then sets up
logging the way applications do afterwards (``logging.basicConfig`` to a
file, a JSON handler dumping every record attribute, a handler on the
``openai`` logger, one on stderr), turns ``httpx``/``httpcore``/``openai``/
``anthropic`` to DEBUG and drives the real SDKs against a loopback server
that echoes the keys back raw, hex, base32, base64 and URL-encoded. Every
line it wrote is scanned for every canary in every form: none. The same
program without the setup block leaks every canary, hex and base32 forms
included, so the scan can fail.

The other tests pin each piece of ``install_log_redaction`` in this
process, and that it leaves logging exactly as it found it.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import os
import re
import secrets
import subprocess
import sys
import types
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowcore.secrets import LogRedaction, SecretRedactor, install_log_redaction

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "secrets.md"
PROGRAM = Path(__file__).with_name("log_traffic.py")
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", flags=re.S | re.M)


# ------------------------------------------------------------- the docs page
def page_blocks() -> list[tuple[str, str, str | None]]:
    """(section heading, python code, expected output or None) for each python block."""
    text = PAGE.read_text()
    fences = list(_FENCE.finditer(text))
    blocks = []
    for i, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        headings = re.findall(r"^## (.+)$", text[: fence.start()], flags=re.M)
        nxt = fences[i + 1] if i + 1 < len(fences) else None
        expected = None
        if (
            nxt is not None
            and nxt.group(1) == "output"
            and not text[fence.end() : nxt.start()].strip()
        ):
            expected = nxt.group(2)
        blocks.append((headings[-1] if headings else "", fence.group(2), expected))
    return blocks


def logging_setup_block() -> str:
    """The code the "Logs" section tells users to run at startup."""
    (setup, *_) = [code for heading, code, _ in page_blocks() if heading == "Logs"]
    assert "install_log_redaction(" in setup
    return setup


def test_every_python_block_of_the_page_runs_and_prints_what_it_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCS_SERVICE_API_KEY", "sk-docs-" + secrets.token_hex(8))
    factory = logging.getLogRecordFactory()
    module = types.ModuleType("docs_secrets")
    blocks = page_blocks()
    assert len(blocks) >= 3
    try:
        for heading, code, expected in blocks:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"docs/secrets.md ({heading})", "exec"), module.__dict__)
            if expected is not None:
                assert out.getvalue() == expected, f"docs/secrets.md ({heading}) printed otherwise"
    finally:
        leftover = [v for v in vars(module).values() if isinstance(v, LogRedaction)]
        for redaction in leftover:
            redaction.remove()
    # The page itself takes its redaction off again: nothing leaks into other tests.
    assert leftover
    assert logging.getLogRecordFactory() is factory


# ---------------------------------------------------------- the canary scan
def forms(value: str) -> dict[str, str]:
    """Every way the scan looks for ``value``, computed here, independently of flowcore."""
    raw = value.encode()
    found = {
        "raw": value,
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "quote": urllib.parse.quote(value, safe=""),
        "json": json.dumps(value)[1:-1],
        "repr of bytes": repr(raw)[2:-1],
    }
    # Inside longer base64 / base32 text: the characters that depend on `value` alone.
    for k in range(3):
        text = base64.b64encode(b"x" * k + raw + b"yz").decode()
        found[f"base64 after {k}"] = text[(8 * k + 5) // 6 : 8 * (k + len(raw)) // 6]
    for k in range(5):
        text = base64.b32encode(b"x" * k + raw + b"yz").decode()
        core = text[(8 * k + 4) // 5 : 8 * (k + len(raw)) // 5]
        found[f"base32 after {k}"] = core
        found[f"base32 lower after {k}"] = core.lower()
    return found


def canaries() -> dict[str, str]:
    return {
        "OPENAI_API_KEY": f"sk-proj-{secrets.token_urlsafe(18)}",
        "ANTHROPIC_API_KEY": f"sk-ant-api03-{secrets.token_urlsafe(18)}",
        "APP_DB_PASSWORD": f"pw-{secrets.token_hex(12)}",
    }


def run_program(tmp_path: Path, planted: dict[str, str], *, follow_docs: bool) -> list[str]:
    """Run log_traffic.py; every line it logged, in every file and on stdout and stderr."""
    log_dir = tmp_path / ("docs" if follow_docs else "control")
    log_dir.mkdir()
    argv = [sys.executable, "-W", "error", str(PROGRAM), str(log_dir)]
    if follow_docs:
        setup = tmp_path / "setup_from_docs.py"
        setup.write_text(logging_setup_block())
        argv.append(str(setup))
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_KEY", "_PASSWORD"))}
    env.update(planted, PYTHONPATH=str(ROOT))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines() + proc.stderr.splitlines()
    files = sorted(log_dir.iterdir())
    assert [f.name for f in files] == ["basic.log", "everything.jsonl", "openai.log"]
    for file in files:
        lines += [f"{file.name}: {line}" for line in file.read_text().splitlines()]
    return lines


def hits(lines: list[str], planted: dict[str, str]) -> set[tuple[str, str]]:
    return {
        (name, form)
        for name, value in planted.items()
        for form, text in forms(value).items()
        for line in lines
        if text in line
    }


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp_path = tmp_path_factory.mktemp("log-redaction")
    planted = canaries()
    return {
        "planted": planted,
        "docs": run_program(tmp_path, planted, follow_docs=True),
        "control": run_program(tmp_path, planted, follow_docs=False),
    }


def test_following_the_docs_no_log_line_holds_any_secret_in_any_form(
    both_runs: dict[str, object],
) -> None:
    lines, planted = both_runs["docs"], both_runs["planted"]
    assert isinstance(lines, list)
    assert isinstance(planted, dict)

    assert hits(lines, planted) == set()
    # The traffic was really logged, at DEBUG, by the HTTP stack and the SDKs.
    for logger in ("httpcore2.http11", "httpx2", "openai._base_client", "anthropic._base_client"):
        assert any(f" {logger} " in line for line in lines), logger
    assert sum("[REDACTED]" in line for line in lines) >= 20


def test_without_the_docs_setup_every_secret_leaks_in_every_echoed_form(
    both_runs: dict[str, object],
) -> None:
    lines, planted = both_runs["control"], both_runs["planted"]
    assert isinstance(lines, list)
    assert isinstance(planted, dict)

    found = hits(lines, planted)

    assert {name for name, _ in found} == set(planted)
    for name in planted:
        leaked = {form for each, form in found if each == name}
        assert {"raw", "hex", "HEX", "quote"} <= leaked, name
        assert any(form.startswith("base32") for form in leaked), name
        assert any(form.startswith("base64") for form in leaked), name
    # The app's password reaches the logs by every route the program tries.
    password = planted["APP_DB_PASSWORD"]
    routed = " ".join(line for line in lines if password in line)
    for route in ("connecting with", "credentials", "login refused", "Request options"):
        assert route in routed, route


# ------------------------------------------------------------ in this process
SECRET = "sk-test-0123456789abcdef"


@pytest.fixture
def redaction() -> Iterator[LogRedaction]:
    factory = logging.getLogRecordFactory()
    add_handler = logging.Logger.addHandler
    installed = install_log_redaction(SecretRedactor([SECRET]))
    try:
        yield installed
    finally:
        installed.remove()
    assert logging.getLogRecordFactory() is factory
    assert logging.Logger.addHandler is add_handler


@pytest.fixture
def sink() -> Iterator[io.StringIO]:
    """A handler on the root logger, attached *after* the redaction."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s %(token)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    yield out
    root.removeHandler(handler)


def test_a_logger_filter_misses_child_records_which_is_why_the_docs_do_not_use_one() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    root.addHandler(handler)
    log_filter = SecretRedactor([SECRET]).logging_filter()
    root.addFilter(log_filter)
    try:
        logging.getLogger("httpcore.test").warning("key %s", SECRET)
    finally:
        root.removeFilter(log_filter)
        root.removeHandler(handler)
    assert SECRET in out.getvalue()


@pytest.mark.usefixtures("redaction")
def test_child_logger_records_reach_a_later_handler_redacted(sink: io.StringIO) -> None:
    hexed = SECRET.encode().hex().upper()
    based = base64.b32encode(SECRET.encode()).decode()
    logging.getLogger("httpcore.http11").warning(
        "key %s hex %s b32 %s", SECRET, hexed, based, extra={"token": f"Bearer {SECRET}"}
    )

    assert sink.getvalue() == (
        "httpcore.http11 key [REDACTED] hex [REDACTED] b32 [REDACTED] Bearer [REDACTED]\n"
    )


def test_a_record_is_clean_when_made_exception_and_stack_included(
    redaction: LogRedaction,
) -> None:
    try:
        raise PermissionError(f"token {SECRET} refused")
    except PermissionError as error:
        record = logging.getLogger("app").makeRecord(
            "app", logging.ERROR, __file__, 1, "failed %s", (SECRET,), sys.exc_info()
        )
        caught = error

    assert record.getMessage() == "failed [REDACTED]"
    assert record.exc_text is not None
    assert SECRET not in record.exc_text
    assert "PermissionError: token [REDACTED] refused" in record.exc_text
    assert str(caught) == "token [REDACTED] refused"  # scrubbed in place
    assert redaction.covers("anything")


def test_handlers_present_before_the_install_get_the_filter_and_lose_it_after() -> None:
    handler = logging.StreamHandler(io.StringIO())
    child = logging.getLogger("flowcore.test.present")
    child.addHandler(handler)
    try:
        installed = install_log_redaction(SecretRedactor([SECRET]))
        assert installed.filter in handler.filters
        installed.remove()
        assert installed.filter not in handler.filters
        assert not installed.active
    finally:
        child.removeHandler(handler)


def test_basic_config_after_the_install_writes_redacted_lines(
    redaction: LogRedaction, tmp_path: Path
) -> None:
    root = logging.getLogger()
    before = list(root.handlers)
    root.handlers = []  # basicConfig only configures a root logger without handlers
    try:
        logging.basicConfig(filename=tmp_path / "app.log", format="%(message)s")
        (handler,) = root.handlers
        logging.getLogger("openai._base_client").warning("Request options: key=%s", SECRET)
        handler.close()
    finally:
        root.handlers = before

    assert (tmp_path / "app.log").read_text() == "Request options: key=[REDACTED]\n"
    assert redaction.filter in handler.filters


def test_a_scoped_install_redacts_only_that_logger_and_its_children() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with install_log_redaction(SecretRedactor([SECRET]), logger="myapp"):
            logging.getLogger("myapp.db").warning("mine %s", SECRET)
            logging.getLogger("other").warning("theirs %s", SECRET)
    finally:
        root.removeHandler(handler)

    assert out.getvalue() == f"mine [REDACTED]\ntheirs {SECRET}\n"
    assert handler.filters == []


def test_a_record_factory_set_later_by_other_code_survives_the_removal() -> None:
    original = logging.getLogRecordFactory()
    installed = install_log_redaction(SecretRedactor([SECRET]))
    ours = logging.getLogRecordFactory()

    def tagging(*args: object, **kwargs: object) -> logging.LogRecord:
        record = ours(*args, **kwargs)
        record.tagged = True
        return record

    logging.setLogRecordFactory(tagging)
    try:
        installed.remove()
        record = logging.getLogger("x").makeRecord("x", 30, "f", 1, "k %s", (SECRET,), None)
    finally:
        logging.setLogRecordFactory(original)

    assert logging.getLogRecordFactory() is original
    assert record.tagged is True
    assert record.getMessage() == f"k {SECRET}"  # the removed layer only passes through
