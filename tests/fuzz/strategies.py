"""Hypothesis strategies for what users and models hand flowcore: mostly almost right.

Each strategy leans towards the inputs that broke entry points before: deep
nesting, lone surrogates, ints past Python's text conversion limit, NaN,
objects that are not data, names that are not strings, and ``<<refs>>`` that
are nearly well formed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from hypothesis import strategies as st

# --------------------------------------------------------------------- scalars
SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udc80x", "ok\ud83d"])
# Built by map: hypothesis cannot even show an int of more than 4300 digits in a repr.
HUGE_INTS = st.sampled_from([4400, -5000, 6021, 4299]).map(lambda d: 10 ** abs(d) * (d // abs(d)))
BIG_INTS = st.integers(min_value=-(2**70), max_value=2**70)
ODD_FLOATS = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0, 5e-324])


class _Opaque:
    """An object that is no kind of data."""

    def __repr__(self) -> str:
        return "<opaque>"


ODD_OBJECTS = st.sampled_from(
    [
        _Opaque(),
        b"\xff\x00bytes",
        {1, 2},
        (1, "two"),
        dt.datetime(2024, 1, 1),
        frozenset({"a"}),
        bytearray(b"x"),
        print,
        type,
    ]
)

WORDS = st.sampled_from(
    ["a", "n1", "n2", "doc", "text", "x", "y", "input", "state", "memory", "user", "__start__"]
)
TEXT = st.one_of(
    st.text(max_size=30),
    st.text(st.characters(codec="ascii"), max_size=12),
    SURROGATES,
    WORDS,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    BIG_INTS,
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
ODD_SCALARS = st.one_of(SCALARS, HUGE_INTS, ODD_FLOATS, SURROGATES, ODD_OBJECTS)


def nested(leaf: Any, depth: int, kind: str) -> Any:
    """``leaf`` wrapped ``depth`` times in one-element lists or dicts."""
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


DEPTHS = st.sampled_from([1, 20, 99, 100, 101, 150, 400, 999, 1500, 3000])


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    """A value nested from a little to far past any recursion limit."""
    return nested(draw(SCALARS), draw(DEPTHS), draw(st.sampled_from(["list", "dict", "mixed"])))


def json_values(leaves: st.SearchStrategy[Any] = SCALARS) -> st.SearchStrategy[Any]:
    """JSON-shaped values over ``leaves``, a few levels deep."""
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(TEXT, inner, max_size=4),
        ),
        max_leaves=12,
    )


ODD_VALUES = st.one_of(
    json_values(ODD_SCALARS),
    deep_values(),
    st.dictionaries(st.one_of(BIG_INTS, HUGE_INTS, st.none(), st.booleans()), SCALARS, max_size=3),
)
"""Values of every kind a run input might be: data, deep data, non-data."""

# ------------------------------------------------------------------ references
SEGMENTS = st.one_of(
    WORDS,
    st.sampled_from(["0", "-1", "9" * 4400, "1" * 19, "", " ", "a b", "[0]", "é", "_x", "-"]),
    st.text(st.sampled_from("ab.0-_ <>\\\t"), max_size=6),
)


@st.composite
def reference_texts(draw: st.DrawFn) -> str:
    """Text with ``<<...>>`` references: valid, nearly valid, escaped, huge or broken."""
    pieces: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["ref", "ref", "text", "escape", "open", "close", "many"]))
        if kind == "ref":
            segments = draw(st.lists(SEGMENTS, min_size=1, max_size=4))
            pad = draw(st.sampled_from(["", " ", "\t", "\n"]))
            pieces.append(f"<<{pad}{'.'.join(segments)}{pad}>>")
        elif kind == "text":
            pieces.append(draw(TEXT))
        elif kind == "escape":
            pieces.append("\\<<" + draw(TEXT))
        elif kind == "open":
            pieces.append("<<" * draw(st.integers(1, 3)))
        elif kind == "close":
            pieces.append(">>")
        else:
            pieces.append(draw(st.sampled_from(["<<", "<<a", "a>>", "<<a.b"])) * 2000)
    return "".join(pieces)


def namespaces() -> st.SearchStrategy[dict[str, Any]]:
    """What references resolve against: node outputs and namespaces holding odd values."""
    return st.dictionaries(WORDS, ODD_VALUES, max_size=4)


REF_VALUES = st.recursive(
    st.one_of(reference_texts(), ODD_SCALARS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(TEXT, inner, max_size=3),
        st.tuples(inner, inner),
    ),
    max_leaves=8,
)
"""Node inputs: references anywhere inside strings, lists, dicts and tuples."""

# ----------------------------------------------------------------- definitions
GOOD_IDS = st.sampled_from(["n1", "n2", "n3", "step_1", "step_2"])
NODE_IDS = st.one_of(
    GOOD_IDS,
    GOOD_IDS,
    GOOD_IDS,
    st.sampled_from(["", "1bad", "input", "a" * 70, "a.b", "n1\n", "\ud800", "save_memory"]),
    st.integers(),
    st.none(),
)
GOOD_BLOCKS = st.sampled_from(["summarize", "classify", "extract_json", "query_memory"])
BLOCK_IDS = st.one_of(GOOD_BLOCKS, GOOD_BLOCKS, GOOD_BLOCKS, st.just("missing_block"), TEXT)
GOOD_INPUTS = st.dictionaries(
    st.sampled_from(["text", "doc", "question", "labels"]),
    st.one_of(
        st.sampled_from(["<<input.doc>>", "<<n1.summary>>", "<<n2.label>>", "see <<input.q>>"]),
        reference_texts(),
        TEXT,
    ),
    max_size=3,
)


def _either(draw: st.DrawFn, clean: bool, good: Any, odd: Any) -> Any:
    """A good value on a clean document, else usually good and sometimes odd."""
    if clean:
        return draw(good)
    return draw(st.one_of(good, good, odd))


@st.composite
def pipeline_nodes(draw: st.DrawFn, clean: bool) -> Any:
    """A pipeline node: shaped right when ``clean``, else with odd ids, inputs and branches."""
    node: dict[str, Any] = {
        "id": _either(draw, clean, GOOD_IDS, NODE_IDS),
        "block_id": _either(draw, clean, GOOD_BLOCKS, BLOCK_IDS),
    }
    if draw(st.booleans()):
        node["inputs"] = _either(
            draw,
            clean,
            GOOD_INPUTS,
            st.one_of(st.dictionaries(TEXT, REF_VALUES, max_size=3), ODD_SCALARS, deep_values()),
        )
    if not clean and draw(st.integers(0, 4)) == 0:
        node["branches"] = draw(st.one_of(st.dictionaries(TEXT, NODE_IDS, max_size=2), SCALARS))
    if draw(st.integers(0, 4)) == 0:
        node["block_version"] = _either(
            draw, clean, st.just(1), st.one_of(BIG_INTS, HUGE_INTS, TEXT)
        )
    if not clean and draw(st.integers(0, 9)) == 0:
        node[draw(TEXT)] = draw(SCALARS)
    return node if clean else draw(st.one_of(st.just(node), st.just(node), ODD_SCALARS))


@st.composite
def pipeline_documents(draw: st.DrawFn) -> Any:
    """A pipeline document as parsed JSON: a third are clean, the rest have odd parts."""
    clean = draw(st.integers(0, 2)) == 0
    doc: dict[str, Any] = {
        "id": _either(draw, clean, st.just("p1"), st.one_of(TEXT, st.integers())),
        "name": _either(draw, clean, st.just("P"), TEXT),
        "nodes": draw(st.lists(pipeline_nodes(clean), max_size=4)),
    }
    if draw(st.booleans()):
        edge = st.fixed_dictionaries({"from": GOOD_IDS, "to": GOOD_IDS})
        odd_edge = st.one_of(st.fixed_dictionaries({"from": NODE_IDS, "to": NODE_IDS}), ODD_SCALARS)
        doc["edges"] = draw(st.lists(edge if clean else st.one_of(edge, odd_edge), max_size=3))
    if draw(st.integers(0, 3)) == 0:
        doc["memory_keys"] = _either(
            draw, clean, st.lists(WORDS, max_size=3), st.one_of(st.lists(TEXT), ODD_SCALARS)
        )
    if draw(st.integers(0, 3)) == 0:
        doc["on_error"] = _either(
            draw, clean, st.sampled_from(["fail_fast", "skip_dependents"]), SCALARS
        )
    if draw(st.integers(0, 3)) == 0:
        doc["version"] = _either(
            draw, clean, st.integers(1, 9), st.one_of(BIG_INTS, HUGE_INTS, ODD_FLOATS, TEXT)
        )
    if not clean and draw(st.integers(0, 5)) == 0:
        doc["user_prompt"] = draw(ODD_VALUES)
    return doc if clean else draw(st.one_of(st.just(doc), st.just(doc), st.just(doc), ODD_VALUES))


@st.composite
def plan_documents(draw: st.DrawFn) -> Any:
    """A task plan document as parsed JSON: a third are clean, the rest have odd parts."""
    clean = draw(st.integers(0, 2)) == 0
    ids = ["step_1", "step_2", "step_3"]
    steps: list[Any] = []
    for i in range(draw(st.integers(0 if not clean else 1, 3))):
        step: dict[str, Any] = {
            "step_id": _either(draw, clean, st.just(ids[i]), NODE_IDS),
            "block_id": _either(draw, clean, GOOD_BLOCKS, BLOCK_IDS),
        }
        if i and draw(st.booleans()):
            step["depends_on"] = _either(
                draw,
                clean,
                st.lists(st.sampled_from(ids[:i]), min_size=1, max_size=2, unique=True),
                st.one_of(st.lists(st.one_of(st.sampled_from(ids), NODE_IDS), max_size=3), SCALARS),
            )
        if draw(st.booleans()):
            step["inputs"] = _either(
                draw,
                clean,
                GOOD_INPUTS,
                st.one_of(st.dictionaries(TEXT, REF_VALUES, max_size=2), SCALARS),
            )
        if not clean and draw(st.integers(0, 4)) == 0:
            step["branches"] = draw(st.one_of(st.dictionaries(TEXT, NODE_IDS, max_size=2), SCALARS))
        steps.append(step if clean else draw(st.one_of(st.just(step), st.just(step), ODD_SCALARS)))
    doc: dict[str, Any] = {
        "plan_id": _either(draw, clean, st.just("plan"), st.one_of(TEXT, st.integers())),
        "entry_step_id": _either(draw, clean, st.just("step_1"), NODE_IDS),
        "steps": steps,
    }
    if draw(st.integers(0, 3)) == 0:
        doc["schedule"] = _either(
            draw,
            clean,
            st.fixed_dictionaries(
                {
                    "cron_expression": st.sampled_from(["*/5 * * * *", "0 9 * * 1"]),
                    "timezone": st.sampled_from(["UTC", "Europe/Paris"]),
                    "human_readable": st.just("often"),
                }
            ),
            st.one_of(
                st.fixed_dictionaries(
                    {"cron_expression": TEXT, "timezone": TEXT, "human_readable": TEXT}
                ),
                ODD_VALUES,
            ),
        )
    if not clean and draw(st.integers(0, 5)) == 0:
        doc["name"] = draw(ODD_VALUES)
    return doc if clean else draw(st.one_of(st.just(doc), st.just(doc), ODD_VALUES))


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, default=repr, allow_nan=True)
    except (ValueError, TypeError, RecursionError):
        # Not even repr() shows an int of 5000 digits: write such a document by hand.
        return '{"id": "p", "name": "P", "version": ' + "1" * 5000 + ', "nodes": []}'


@st.composite
def document_texts(draw: st.DrawFn, documents: st.SearchStrategy[Any]) -> Any:
    """JSON text of a document: whole, cut short, spliced, wrapped very deep, or not text."""
    text = _json_text(draw(documents))
    how = draw(st.sampled_from(["whole", "whole", "cut", "splice", "deep", "bytes", "odd"]))
    if how == "cut":
        return text[: draw(st.integers(0, len(text)))]
    if how == "splice":
        at = draw(st.integers(0, len(text)))
        return (
            text[:at]
            + draw(st.sampled_from(['"\\ud800"', "NaN", "1" * 5000, "[" * 50]))
            + text[at:]
        )
    if how == "deep":
        depth = draw(DEPTHS)
        return '{"id": "p", "name": "P", "nodes": [], "x": ' + "[" * depth + "]" * depth + "}"
    if how == "bytes":
        return text.encode("utf-8", "surrogatepass") + draw(st.sampled_from([b"", b"\xff"]))
    if how == "odd":
        return draw(ODD_SCALARS)
    return text


# -------------------------------------------------------------- block definitions
@st.composite
def block_documents(draw: st.DrawFn) -> Any:
    """A block definition: a third clean, the rest with odd schemas, keys and limits."""
    clean = draw(st.integers(0, 2)) == 0
    kinds = ["llm", "decision", "tool", "memory_query", "memory_save", "wait"]
    kind = _either(draw, clean, st.sampled_from(kinds), st.sampled_from(["python", "x", "human"]))
    doc: dict[str, Any] = {
        "id": _either(draw, clean, st.just("blk"), NODE_IDS),
        "name": _either(draw, clean, st.just("Block"), TEXT),
        "description": _either(draw, clean, st.just("does a thing"), TEXT),
        "kind": kind,
    }
    if kind in ("llm", "decision"):
        # Plain templates: what a template may do is the prompting module's to judge.
        doc["prompt_template"] = draw(st.sampled_from(["Say {{ text }}.", "Hi", "{{ x }}"]))
    if kind == "decision":
        doc["branches"] = _either(
            draw, clean, st.just({"yes": "n2", "no": "n3"}), st.dictionaries(TEXT, TEXT)
        )
    if kind == "tool":
        doc["tool"] = _either(draw, clean, st.just("http_get"), TEXT)
    keys = st.lists(st.sampled_from(["text", "summary", "x"]), max_size=2, unique=True)
    shape = draw(st.sampled_from(["keys", "schema", "none"]))
    if shape == "keys":
        doc["input_keys"] = _either(draw, clean, keys, ODD_SCALARS)
        doc["output_keys"] = _either(draw, clean, keys, ODD_SCALARS)
    elif shape == "schema":
        doc["input_schema"] = _either(
            draw,
            clean,
            st.just({"type": "object", "properties": {"text": {"type": "string"}}}),
            st.one_of(st.just({"type": "object", "required": ["text"]}), ODD_VALUES),
        )
    if draw(st.integers(0, 3)) == 0:
        doc["timeout_seconds"] = _either(draw, clean, st.just(0.5), ODD_SCALARS)
    if draw(st.integers(0, 3)) == 0:
        doc["max_retries"] = _either(draw, clean, st.integers(0, 2), ODD_SCALARS)
    return doc
