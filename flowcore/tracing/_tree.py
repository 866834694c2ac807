"""``span_tree``: finished spans drawn as an indented tree, for tests, examples and debugging.

Works on anything shaped like the OpenTelemetry SDK's ``ReadableSpan``
(``name``, ``context.span_id``, ``parent.span_id``, ``attributes``,
``start_time``, ``status``), so it needs no import of OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["span_tree"]

_SHOWN = (
    "gen_ai.provider.name",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.call.id",
    "flowcore.run.status",
    "error.type",
)


def _span_id(span: Any) -> int:
    return int(span.context.span_id)


def _parent_id(span: Any) -> int | None:
    parent = getattr(span, "parent", None)
    return None if parent is None else int(parent.span_id)


def _label(span: Any, attributes: Sequence[str]) -> str:
    attrs = dict(span.attributes or {})
    parts = []
    for name in attributes:
        if name in attrs:
            value = attrs[name]
            if isinstance(value, tuple | list):
                value = ",".join(str(v) for v in value)
            # Short labels: the namespaces add nothing when reading a tree.
            parts.append(f"{name.removeprefix('gen_ai.').removeprefix('usage.')}={value}")
    status = getattr(getattr(span, "status", None), "status_code", None)
    if status is not None and getattr(status, "name", "") == "ERROR":
        parts.append("status=ERROR")
    name = str(span.name)
    return name + (f"  [{' '.join(parts)}]" if parts else "")


def span_tree(spans: Iterable[Any], *, attributes: Sequence[str] = _SHOWN) -> str:
    """The spans as a tree, children under parents in start order, with chosen attributes.

    A span whose parent is not among ``spans`` is a root. ``attributes``
    names the attributes shown after each span's name (shown without
    their ``gen_ai.`` / ``gen_ai.usage.`` prefix).

    Example:
        >>> # print(span_tree(exporter.get_finished_spans()))
        >>> # invoke_workflow agent  [flowcore.run.status=completed]
        >>> #   node ask
        >>> #     chat scripted  [...]
        >>> span_tree([])
        ''
    """
    items = list(spans)
    ids = {_span_id(s) for s in items}
    children: dict[int | None, list[Any]] = {}
    for span in items:
        parent = _parent_id(span)
        children.setdefault(parent if parent in ids else None, []).append(span)
    for group in children.values():
        group.sort(key=lambda s: (s.start_time or 0, s.name))
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in children.get(parent, []):
            lines.append("  " * depth + _label(span, attributes))
            walk(_span_id(span), depth + 1)

    walk(None, 0)
    return "\n".join(lines)
