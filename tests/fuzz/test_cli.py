"""Fuzz spec: whatever a user types or points it at, the CLI fails with one line, never a traceback.

``flowcore run/validate/graph/resume/blocks/runs`` get pipeline files of any
content, ``--input`` values that are deep JSON, over-long ints, lone
surrogates (as a shell passes undecodable bytes) or missing ``@files``, and
odd ids. Every call ends with exit code 0, 1 or 2; whenever something went
wrong, stderr holds one line that starts with ``flowcore: error:`` (several
problems: that line as a heading, then one ``  - `` line per problem).
"""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowcore.cli import main

from .harness import Judge, fuzz_settings
from .strategies import SURROGATES, TEXT, document_texts, pipeline_documents, plan_documents

_FILES = itertools.count()
GREETING = {
    "id": "greeting",
    "name": "Greeting",
    "nodes": [{"id": "n1", "block_id": "summarize", "inputs": {"text": "<<input.doc>>"}}],
}
INPUT_VALUES = st.one_of(
    TEXT,
    SURROGATES,
    st.just("1" * 5000),
    st.sampled_from([10, 500, 3000]).map(lambda d: "[" * d + "]" * d),
    st.just('{"a": NaN}'),
    st.just("@missing.json"),
    st.just('"\\ud800"'),
)
INPUT_KEYS = st.one_of(st.just("doc"), st.just("doc"), TEXT, SURROGATES)


def _argv(draw: st.DrawFn, tmp: Path) -> list[str]:
    file = tmp / f"doc{next(_FILES)}.json"
    if draw(st.integers(0, 2)) == 0:
        file.write_text(json.dumps(GREETING), encoding="utf-8")
    elif draw(st.integers(0, 3)) == 0:
        depth = draw(st.sampled_from([50, 5000]))
        nested = "[" * depth + "]" * depth
        file.write_text('{"format": "flowcore-blocks", "blocks": ' + nested + "}")
    else:
        text = draw(document_texts(st.one_of(pipeline_documents(), plan_documents())))
        if isinstance(text, str):
            file.write_bytes(text.encode("utf-8", "surrogatepass"))
        elif isinstance(text, bytes):
            file.write_bytes(text)
        else:
            file = tmp / "no-such-file.json"
    command = draw(st.sampled_from(["run", "run", "validate", "graph", "resume", "runs", "blocks"]))
    if command == "run":
        argv = ["run", str(file), "--provider", "offline"]
        for _ in range(draw(st.integers(0, 2))):
            argv += ["--input", f"{draw(INPUT_KEYS)}={draw(INPUT_VALUES)}"]
        if draw(st.booleans()):
            argv += ["--user", draw(st.one_of(st.just("ada"), TEXT.filter(bool), SURROGATES))]
        return argv
    if command in ("validate", "graph"):
        return [command, str(file)]
    if command == "resume":
        thread = draw(st.one_of(st.just("greeting-1"), TEXT.filter(bool), SURROGATES))
        return ["resume", thread, "--provider", "offline", "--value", draw(INPUT_VALUES)]
    if command == "runs":
        return draw(
            st.sampled_from(
                [
                    ["runs", "list"],
                    ["runs", "show", draw(st.one_of(TEXT.filter(bool), SURROGATES))],
                    ["runs", "list", "--thread", draw(st.one_of(TEXT, SURROGATES))],
                ]
            )
        )
    return draw(
        st.sampled_from(
            [
                ["blocks", "show", draw(st.one_of(TEXT.filter(bool), SURROGATES))],
                ["blocks", "add", str(file)],
                ["blocks", "import", str(file)],
                ["blocks", "search", draw(st.one_of(TEXT, SURROGATES))],
            ]
        )
    )


def _call(argv: list[str], db: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        code = main([*argv, "--db", str(db)], stdout=out, stderr=err)
    except SystemExit as exited:  # argparse's usage errors and --help
        code = exited.code if isinstance(exited.code, int) else 2
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model configured: every run uses the offline provider."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FLOWCORE_BASE_URL", "FLOWCORE_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("FLOWCORE_TRACEBACK", raising=False)


def test_every_cli_failure_is_one_line_and_never_a_traceback(
    tmp_path: Path, quiet_env: None
) -> None:
    judge = Judge("flowcore CLI (main)")
    db = tmp_path / "flowcore.db"

    @fuzz_settings(80)
    @given(data=st.data())
    def each(data: st.DataObject) -> None:
        argv = _argv(data.draw, tmp_path)
        outcome = judge.call(lambda: _call(argv, db))
        assert outcome is not None
        code, _, err = outcome
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in err, err
        if err:
            lines = err.splitlines()
            assert lines[0].startswith("flowcore: error: "), (argv, err)
            # Several problems: a heading line, then one "  - " line per problem.
            assert len(lines) == 1 or (
                lines[0].endswith(":") and all(ln.startswith("  - ") for ln in lines[1:])
            ), (argv, err)
        if code == 2:
            assert err, (argv, "exit code 2 without a message")
            judge.refused("cli-exit-2")

    each()
