"""Mermaid text for a :class:`DrawableGraph`, in LangGraph's exact layout.

Nodes whose ids hold ``:`` (a subgraph drawn inline with ``xray``) are
grouped in ``subgraph`` blocks named after their prefix; ``with_styles``
adds the front matter, node shapes and class definitions.
"""

from __future__ import annotations

import string
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowcore.compat.langgraph._draw import DrawableEdge, DrawableGraph, DrawableNode

__all__ = ["render_mermaid", "safe_id"]

_MARKDOWN = "*_`"
_LABEL_ESCAPES = (
    ("[", "#91;"),
    ("]", "#93;"),
    ("(", "#40;"),
    (")", "#41;"),
    ("{", "#123;"),
    ("}", "#125;"),
    ('"', "#quot;"),
    ("<", "#60;"),
    (">", "#62;"),
    ("|", "#124;"),
)
_DEFAULT_STYLES = (
    ("default", "fill:#f2f0ff,line-height:1.2"),
    ("first", "fill-opacity:0"),
    ("last", "fill:#bfb6fc"),
)
_SAFE = frozenset(string.ascii_letters + string.digits + "_-")


def safe_id(label: str) -> str:
    """``label`` as a Mermaid id: other characters become ``\\`` plus their hex code."""
    return "".join(ch if ch in _SAFE else "\\" + format(ord(ch), "x") for ch in label)


def _escape(text: str) -> str:
    text = text.replace("#", "#35;")
    for char, entity in _LABEL_ESCAPES:
        text = text.replace(char, entity)
    return text


def _metadata_value(value: Any) -> str | None:
    scalars = (str, int, float, bool)
    if isinstance(value, scalars):
        return str(value)
    if isinstance(value, list | tuple | set) and all(isinstance(v, scalars) for v in value):
        items = [str(v) for v in value]
        return ", ".join(sorted(items) if isinstance(value, set) else items)
    return None


def _metadata_lines(metadata: dict[str, Any]) -> list[str]:
    lines = []
    for key, value in metadata.items():
        shown = _metadata_value(value)
        if shown is not None:
            lines.append(_escape(f"{key} = {shown}"))
    return lines


def _front_matter(curve: str, config: dict[str, Any] | None) -> str:
    if not config:
        return f"---\nconfig:\n  flowchart:\n    curve: {curve}\n---\n"
    import yaml  # type: ignore[import-untyped,unused-ignore]

    given = config or {}
    inner = dict(given.get("config", {}))
    inner["flowchart"] = {**inner.get("flowchart", {}), "curve": curve}
    text: str = yaml.dump({**given, "config": inner}, default_flow_style=False)
    return "---\n" + text + "---\n"


def _styles(node_colors: Any) -> list[tuple[str, str]]:
    if node_colors is None:
        return list(_DEFAULT_STYLES)
    if isinstance(node_colors, dict):
        return [(str(k), str(v)) for k, v in node_colors.items()]
    return [(name, str(getattr(node_colors, name))) for name, _ in _DEFAULT_STYLES]


class _Writer:
    """Builds the Mermaid text line by line."""

    def __init__(self, first: str | None, last: str | None, wrap: int) -> None:
        self.lines: list[str] = []
        self.first = first
        self.last = last
        self.wrap = wrap
        self.seen_groups: set[str] = set()

    def node(self, key: str, node: DrawableNode) -> None:
        name = node.name.split(":")[-1]
        label = f"<p>{name}</p>" if name[:1] in _MARKDOWN and name[-1:] in _MARKDOWN else name
        meta = _metadata_lines(node.metadata or {})
        if meta:
            label = f"{label}<hr/><small><em>" + "\n".join(meta) + "</em></small>"
        if key == self.first:
            shape = f"{safe_id(key)}([{label}]):::first"
        elif key == self.last:
            shape = f"{safe_id(key)}([{label}]):::last"
        else:
            shape = f"{safe_id(key)}({label})"
        self.lines.append(f"\t{shape}\n")

    def edge(self, edge: DrawableEdge) -> None:
        if edge.data is not None:
            words = str(edge.data).split()
            text = str(edge.data)
            if len(words) > self.wrap:
                text = "&nbsp<br>&nbsp".join(
                    " ".join(words[i : i + self.wrap]) for i in range(0, len(words), self.wrap)
                )
            arrow = (
                f" -. &nbsp;{text}&nbsp; .-> "
                if edge.conditional
                else f" -- &nbsp;{text}&nbsp; --> "
            )
        else:
            arrow = " -.-> " if edge.conditional else " --> "
        self.lines.append(f"\t{safe_id(edge.source)}{arrow}{safe_id(edge.target)};\n")


def _common_prefix(edge: DrawableEdge) -> str:
    pairs = zip(edge.source.split(":"), edge.target.split(":"), strict=False)
    return ":".join(s for s, t in pairs if s == t)


def render_mermaid(
    graph: DrawableGraph,
    *,
    first: str | None,
    last: str | None,
    with_styles: bool = True,
    curve: str = "linear",
    node_colors: Any = None,
    wrap_label_n_words: int = 9,
    frontmatter_config: dict[str, Any] | None = None,
) -> str:
    """The Mermaid flowchart text of ``graph`` (``first``/``last`` get the end shapes)."""
    out = _Writer(first, last, wrap_label_n_words)
    head = (_front_matter(curve, frontmatter_config) if with_styles else "") + "graph TD;\n"
    grouped: dict[str, dict[str, DrawableNode]] = {}
    plain: dict[str, DrawableNode] = {}
    for key, node in graph.nodes.items():
        if ":" in key:
            grouped.setdefault(key.rsplit(":", 1)[0], {})[key] = node
        else:
            plain[key] = node
    if with_styles:
        for key, node in plain.items():
            out.node(key, node)
    by_prefix: dict[str, list[DrawableEdge]] = {}
    for edge in graph.edges:
        by_prefix.setdefault(_common_prefix(edge), []).append(edge)

    def group(edges: list[DrawableEdge], prefix: str) -> None:
        self_loop = len(edges) == 1 and edges[0].source == edges[0].target
        if prefix and not self_loop:
            name = prefix.rsplit(":", 1)[-1]
            if name in out.seen_groups:
                raise ValueError(
                    f"Found duplicate subgraph '{name}' -- this likely means that "
                    "you're reusing a subgraph node with the same name. "
                    "Please adjust your graph to have subgraph nodes with unique names."
                )
            out.seen_groups.add(name)
            out.lines.append(f"\tsubgraph {name}\n")
            if with_styles:
                for key, node in grouped.get(prefix, {}).items():
                    out.node(key, node)
        for edge in edges:
            out.edge(edge)
        for nested, nested_edges in by_prefix.items():
            if not nested.startswith(prefix + ":") or nested == prefix:
                continue
            if ":" in nested[len(prefix) + 1 :]:
                continue
            group(nested_edges, nested)
        if prefix and not self_loop:
            out.lines.append("\tend\n")

    group(by_prefix.get("", []), "")
    for prefix, edges in by_prefix.items():
        if prefix and ":" not in prefix:
            group(edges, prefix)
            out.seen_groups.add(prefix)
    if with_styles:
        for prefix, members in grouped.items():
            if ":" not in prefix and prefix not in out.seen_groups:
                out.lines.append(f"\tsubgraph {prefix}\n")
                for key, node in members.items():
                    out.node(key, node)
                out.lines.append("\tend\n")
                out.seen_groups.add(prefix)
        out.lines.extend(f"\tclassDef {name} {style}\n" for name, style in _styles(node_colors))
    return head + "".join(out.lines)
