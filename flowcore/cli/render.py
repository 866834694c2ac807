"""How the CLI shows runs: live progress lines, a summary table, and JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from flowcore.events import (
    BlockEndEvent,
    Event,
    InterruptEvent,
    NodeCancelledEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeSkippedEvent,
    NodeStartEvent,
    ToolCallStartEvent,
)
from flowcore.history import RunRecord

__all__ = ["ProgressPrinter", "one_line", "record_to_json", "short", "table"]


def short(value: Any, width: int = 60) -> str:
    """``value`` as one line of at most ``width`` characters.

    Example:
        >>> short({"a": "x" * 100}, 20)
        '{"a": "xxxxxxxxxxxx…'
    """
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def one_line(text: str) -> str:
    """A multi-line error message (a list of problems) as one line.

    Example:
        >>> one_line("2 problems:" + chr(10) + "  - a" + chr(10) + "  - b")
        '2 problems:; a; b'
    """
    return "; ".join(part.strip(" -") for part in text.splitlines() if part.strip())


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table with aligned columns (numbers right-aligned).

    Example:
        >>> print(table(["node", "ms"], [["a", 1], ["bb", 20]]))
        node  ms
        ----  --
        a      1
        bb    20
    """
    body = [[str(c) for c in row] for row in rows]
    numeric = [all(_is_number(row[i]) for row in body) and bool(body) for i in range(len(headers))]
    widths = [max([len(h), *(len(row[i]) for row in body)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(widths[i]) if numeric[i] else c.ljust(widths[i]) for i, c in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(row) for row in body)
    return "\n".join(out)


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return text == "-"
    return True


class ProgressPrinter:
    """Prints one line per node as the run goes (start, end, failure, skip, pause).

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> printer = ProgressPrinter(out)
        >>> # await runner.run(pipeline, inputs, on_event=printer)
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started: dict[str, int] = {}

    def __call__(self, event: Event) -> None:
        """Show ``event`` if it is one a user follows."""
        line = self._line(event)
        if line is not None:
            self.out.write(line + "\n")
            self.out.flush()

    def _line(self, event: Event) -> str | None:
        step = f"[{event.superstep}]"
        if isinstance(event, NodeStartEvent):
            return f"{step} {event.node} ..."
        if isinstance(event, NodeEndEvent):
            return f"{step} {event.node} done in {event.duration * 1000:.0f} ms"
        if isinstance(event, NodeErrorEvent):
            return f"{step} {event.node} FAILED: {short(str(event.error), 100)}"
        if isinstance(event, NodeCancelledEvent):
            return f"{step} {event.node} cancelled"
        if isinstance(event, NodeSkippedEvent):
            return f"{step} {event.node} skipped ({event.reason.replace('_', ' ')})"
        if isinstance(event, InterruptEvent):
            question = event.value.get("question") if isinstance(event.value, dict) else None
            return f"{step} {event.node} asks: {short(question or event.value, 100)}"
        if isinstance(event, ToolCallStartEvent):
            return f"{step}   tool {event.tool_name}({short(event.args, 60)})"
        if isinstance(event, BlockEndEvent) and event.ok and event.outputs:
            return f"{step}   -> {short(event.outputs, 90)}"
        return None


def record_to_json(record: RunRecord) -> dict[str, Any]:
    """A run record as plain JSON data, for ``--json`` output.

    Example:
        >>> # print(json.dumps(record_to_json(record)))
    """
    return {
        "run_id": record.run_id,
        "pipeline_id": record.pipeline_id,
        "pipeline_version": record.pipeline_version,
        "user_id": record.user_id,
        "thread_id": record.thread_id,
        "status": record.status,
        "started_at": record.started_at,
        "duration": record.duration,
        "inputs": _plain(record.inputs),
        "nodes": [
            {
                "node": n.node,
                "status": n.status,
                "pass_index": n.pass_index,
                "started_at": n.started_at,
                "duration": n.duration,
                "attempts": n.attempts,
                "outputs": _plain(n.outputs),
                "error": n.error,
                "skip_reason": n.skip_reason,
                "input_tokens": n.input_tokens,
                "output_tokens": n.output_tokens,
            }
            for n in record.nodes
        ],
        "errors": list(record.errors),
        "interrupts": _plain(list(record.interrupts)),
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
