"""Write a run's figures into the migration guide, between two markers.

``docs/langgraph-migration.md`` carries a section that only this module
writes: the date and command of the run, the total, what each cause of a
failure means, the per-file table and the largest groups of failures that
are not LangGraph internals. ``run.py --doc PATH`` rewrites it from the run
it just made, so the guide says what the harness measured, not what someone
remembered.

Example:
    >>> text = "intro\\n" + START + "\\nold\\n" + END + "\\noutro\\n"
    >>> out = replace_section(text, "new")
    >>> out.splitlines()[1:4] == [START, "new", END]
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["CAUSES_EXPLAINED", "END", "START", "render_section", "replace_section", "write_doc"]

START = "<!-- langgraph-suite:start (written by bench/langgraph_suite/run.py --doc) -->"
END = "<!-- langgraph-suite:end -->"

# What each column of the table counts (the reasons a test that passes on LangGraph
# does not count as passing on flowcore).
CAUSES_EXPLAINED: dict[str, str] = {
    "missing": "the test needs a public LangGraph name flowcore does not offer yet",
    "behaviour": "a public API behaves differently (an assertion or an error)",
    "internals": (
        "the test drives LangGraph's private functions or classes "
        "(`langgraph._internal._config`, `langgraph.stream._mux`, ...), which are never "
        "redirected (LangGraph's constants module alone loads for real: it holds only values)"
    ),
    "timeout": "the test ran past the per-test time limit",
    "environment": "a service or package the test needs is missing",
    "no_flowcore_run": (
        "the test passes but no function of flowcore's ran in it (it reads class "
        "attributes or LangGraph's checkpoint library only), so it does not count"
    ),
    "langgraph_built": "LangGraph's own runtime was loaded, so the test does not count",
    "skipped": "skipped in the flowcore run",
    "not_run": "not reached in the flowcore run",
}

_COLUMNS = tuple(CAUSES_EXPLAINED)


def render_section(result: dict[str, Any], *, clusters: int = 15) -> str:
    """The guide's section for ``result`` (what ``run.py`` writes to its JSON)."""
    s = result["summary"]
    meta = result["meta"]
    lines = [
        f"Measured {meta['date'][:10]} with `{meta['command'].strip()}` "
        f"({meta['langgraph_sdist']}, Python {meta['python']}): "
        f"**{s['flowcore_passed']} of the {s['langgraph_passed']} tests that pass on "
        f"LangGraph pass on flowcore ({s['percent']} %)**; "
        f"{s.get('flowcore_passed_with_graph_run', '?')} of them ran a graph, the rest "
        "exercised flowcore's reducers, channels, graph builders or stream parts directly.",
        "",
        "A test that passes on LangGraph and not here is counted under one cause:",
        "",
    ]
    for cause, count in s["causes"].items():
        lines.append(f"- `{cause}` ({count}): {CAUSES_EXPLAINED.get(cause, cause)}.")
    lines += [
        "",
        f"| file | LangGraph | flowcore | {' | '.join(_COLUMNS)} |",
        "|---|---:|---:|" + "---:|" * len(_COLUMNS),
    ]
    for row in s["files"]:
        cells = " | ".join(str(row.get(c, "")) for c in _COLUMNS)
        lines.append(
            f"| {row['file']} | {row['langgraph_passed']} | {row['flowcore_passed']} | {cells} |"
        )
    shown = [c for c in s["clusters"] if c["cause"] != "internals"][:clusters]
    if shown:
        lines += ["", "The largest groups of failures that are not LangGraph internals:", ""]
        lines += ["| tests | cause | first error |", "|---:|---|---|"]
        for c in shown:
            key = str(c["key"]).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {c['count']} | {c['cause']} | `{key[:140]}` |")
    return "\n".join(lines)


def replace_section(text: str, section: str) -> str:
    """``text`` with what lies between :data:`START` and :data:`END` replaced by ``section``.

    Raises ValueError when the markers are missing or out of order.
    """
    begin = text.find(START)
    end = text.find(END)
    if begin < 0 or end < begin:
        raise ValueError(
            f"the guide has no section to write: add the lines {START!r} and {END!r} to it"
        )
    return text[: begin + len(START)] + "\n" + section.strip("\n") + "\n" + text[end:]


def write_doc(path: Path, result: dict[str, Any]) -> None:
    """Rewrite the figures section of the guide at ``path`` from ``result``."""
    text = path.read_text()
    replace_section(text, "")  # a guide without the markers is refused before any work
    path.write_text(replace_section(text, render_section(result)))
