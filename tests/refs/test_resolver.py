"""Spec for ``<<namespace.path>>`` references (flowcore.refs)."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from flowcore.errors import FlowcoreError, ReferenceResolutionError, ReferenceSyntaxError
from flowcore.refs import (
    Reference,
    ValueTemplate,
    extract_references,
    lookup_path,
    resolve_references,
)


class Address(BaseModel):
    city: str
    zip_codes: list[str]


class Person(BaseModel):
    name: str
    address: Address


@dataclass
class Score:
    value: int
    tags: tuple[str, ...]


class Secretive:
    def __init__(self) -> None:
        self.visible = "yes"
        self._hidden = "no"


NAMESPACES: dict[str, Any] = {
    "n1": {
        "items": [10, 20, 30],
        "meta": {"a": 1, "b": None},
        "flag": True,
        "count": 7,
        "text": "hello",
        "none": None,
        "my-key": "dashed",
    },
    "input": {"question": "why?", "ints": {0: "zero", 1: "one"}},
    "state": {"person": Person(name="Ada", address=Address(city="London", zip_codes=["N1"]))},
    "memory": Score(value=42, tags=("x", "y")),
    "user": None,
}


def resolve(value: object, node: str | None = "writer") -> object:
    return resolve_references(value, NAMESPACES, node=node)


# --- whole-string references yield raw, typed values -------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("<<n1.items>>", [10, 20, 30]),
        ("<<n1.meta>>", {"a": 1, "b": None}),
        ("<<n1.count>>", 7),
        ("<<n1.none>>", None),
        ("<<n1.flag>>", True),
        ("<<state.person.address.city>>", "London"),
        ("<<state.person.address.zip_codes.0>>", "N1"),
        ("<<memory.value>>", 42),
        ("<<memory.tags>>", ("x", "y")),
        ("<<user>>", None),
    ],
)
def test_whole_string_reference_yields_raw_value(template: str, expected: object) -> None:
    result = resolve(template)
    assert result == expected
    assert type(result) is type(expected)


def test_whole_string_reference_returns_the_referenced_object_itself() -> None:
    assert resolve("<<n1.items>>") is NAMESPACES["n1"]["items"]
    assert resolve("<<state.person>>") is NAMESPACES["state"]["person"]
    assert resolve("<<n1>>") is NAMESPACES["n1"]


def test_namespace_only_reference_yields_the_namespace_root() -> None:
    assert resolve("<<memory>>") is NAMESPACES["memory"]


# --- mixed text interpolates --------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("say <<n1.text>>!", "say hello!"),
        ("Q: <<input.question>>", "Q: why?"),
        ("count=<<n1.count>>", "count=7"),
        ("flag=<<n1.flag>>", "flag=true"),
        ("none=<<n1.none>>", "none=null"),
        ("items=<<n1.items>>", "items=[10, 20, 30]"),
        ("meta=<<n1.meta>>", 'meta={"a": 1, "b": null}'),
        ("<<n1.text>><<n1.count>>", "hello7"),
        ("<<n1.text>> ", "hello "),
        ("city: <<state.person.address.city>>", "city: London"),
    ],
)
def test_mixed_text_interpolates(template: str, expected: str) -> None:
    assert resolve(template) == expected


def test_interpolation_keeps_non_ascii_and_falls_back_to_str() -> None:
    namespaces = {"n": {"word": ["café"], "obj": Score(1, ())}}
    assert resolve_references("w=<<n.word>>", namespaces) == 'w=["café"]'
    assert resolve_references("o=<<n.obj>>", namespaces) == f'o="{Score(1, ())}"'


# --- paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("<<n1.meta.a>>", 1),
        ("<<n1.items.0>>", 10),
        ("<<n1.items.2>>", 30),
        ("<<n1.items.-1>>", 30),
        ("<<n1.items.-3>>", 10),
        ("<<n1.my-key>>", "dashed"),
        ("<<memory.tags.-1>>", "y"),
        ("<<state.person.name>>", "Ada"),
    ],
)
def test_dotted_paths(template: str, expected: object) -> None:
    assert resolve(template) == expected


def test_int_key_fallback_for_dicts() -> None:
    assert resolve("<<input.ints.0>>") == "zero"
    assert resolve("<<input.ints.1>>") == "one"


def test_string_key_wins_over_int_key() -> None:
    assert resolve_references("<<n.0>>", {"n": {"0": "str", 0: "int"}}) == "str"


def test_lookup_path_directly() -> None:
    root = {"a": [{"b": Score(3, ("t",))}]}
    assert lookup_path(root, ["a", "0", "b", "tags", "0"], reference="<<x>>") == "t"
    assert lookup_path(root, [], reference="<<x>>") is root


# --- literals, escapes, whitespace -----------------------------------------------


def test_escaped_reference_whole_string_is_literal() -> None:
    template = ValueTemplate.compile("\\<<n1.text>>")
    assert template.references == ()
    assert template.is_static
    assert template.resolve(NAMESPACES) == "<<n1.text>>"


def test_escaped_reference_in_mixed_text_is_literal() -> None:
    assert resolve("use \\<<node.field>> for <<n1.text>>") == "use <<node.field>> for hello"
    assert resolve("a \\<< b") == "a << b"


def test_escapes_inside_containers_make_a_static_unescaped_copy() -> None:
    value = {"a": ["\\<<x.y>>", 1]}
    template = ValueTemplate.compile(value)
    assert template.is_static
    assert template.resolve({}) == {"a": ["<<x.y>>", 1]}
    assert template.resolve({}) is template.resolve({})
    assert value == {"a": ["\\<<x.y>>", 1]}


def test_unclosed_brackets_are_literal_text() -> None:
    for text in ["x << 2", "a << b\nc >> d", "<<", "shift <<n1.text"]:
        template = ValueTemplate.compile(text)
        assert template.is_static
        assert template.resolve(NAMESPACES) is text


def test_closing_brackets_alone_are_literal() -> None:
    assert resolve("a >> b <<n1.count>> >> c") == "a >> b 7 >> c"


@pytest.mark.parametrize("template", ["<< n1.count >>", "<<n1.count >>", "<<\tn1.count>>"])
def test_whitespace_just_inside_brackets_is_tolerated(template: str) -> None:
    assert resolve(template) == 7
    (ref,) = extract_references(template)
    assert ref.text == template
    assert ref.dotted() == "n1.count"


# --- deep resolution ---------------------------------------------------------------


def test_deep_resolution_keeps_container_types() -> None:
    value = {
        "messages": [
            {"role": "user", "content": "Q: <<input.question>>"},
            ("<<n1.count>>", "static", 3),
        ],
        "nested": {"items": "<<n1.items>>", "n": None},
        "keep": 1.5,
    }
    result = resolve(value)
    assert result == {
        "messages": [{"role": "user", "content": "Q: why?"}, (7, "static", 3)],
        "nested": {"items": [10, 20, 30], "n": None},
        "keep": 1.5,
    }
    assert isinstance(result, dict)
    assert type(result["messages"]) is list
    assert type(result["messages"][1]) is tuple
    assert value["messages"][0]["content"] == "Q: <<input.question>>"  # input untouched


def test_dict_keys_are_not_resolved() -> None:
    assert resolve({"<<n1.text>>": "<<n1.text>>"}) == {"<<n1.text>>": "hello"}


def test_namedtuple_keeps_its_type() -> None:
    pair = namedtuple("pair", "left right")
    result = resolve(pair("<<n1.count>>", "x"))
    assert result == pair(7, "x")
    assert type(result) is pair


def test_other_values_are_returned_unchanged() -> None:
    obj = Score(1, ("<<n1.text>>",))
    assert resolve({"obj": obj, "x": "<<n1.count>>"})["obj"] is obj  # type: ignore[index]


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, "two", {"b": (None, 3.5)}]},
        ["plain", "x << 2", ("t",)],
        "just text",
        42,
        None,
        OrderedDict(a="b"),
        Score(1, ("<<n1.text>>",)),
    ],
)
def test_static_values_are_returned_identical(value: object) -> None:
    template = ValueTemplate.compile(value)
    assert template.is_static
    assert template.references == ()
    assert template.resolve(NAMESPACES) is value
    assert template.resolve({}) is value
    assert resolve(value) is value


def test_template_is_reusable_and_immutable() -> None:
    template = ValueTemplate.compile({"q": "<<input.question>>"})
    assert not template.is_static
    assert template.resolve({"input": {"question": "a"}}) == {"q": "a"}
    assert template.resolve({"input": {"question": "b"}}) == {"q": "b"}
    with pytest.raises(AttributeError):
        template._plan = None  # type: ignore[misc]


# --- extract_references ------------------------------------------------------------


def test_extract_references_in_document_order() -> None:
    value = {
        "z": "<<n1.a.b>> and <<input>>",
        "a": ["<<n2.items.-1>>", {"deep": "<< state.x >>"}],
        "k": "\\<<not.a.ref>>",
    }
    refs = extract_references(value)
    assert refs == (
        Reference("n1", ("a", "b"), "<<n1.a.b>>"),
        Reference("input", (), "<<input>>"),
        Reference("n2", ("items", "-1"), "<<n2.items.-1>>"),
        Reference("state", ("x",), "<< state.x >>"),
    )
    assert [r.dotted() for r in refs] == ["n1.a.b", "input", "n2.items.-1", "state.x"]
    assert ValueTemplate.compile(value).references == refs


# --- syntax errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    ["<<>>", "<< >>", "<<n1.>>", "<<.n1>>", "<<n1..x>>", "<<n1.a b>>", "<<n1[0]>>", "<<n1.x!>>"],
)
def test_malformed_reference_raises_syntax_error(bad: str) -> None:
    for value in [bad, f"prefix {bad} suffix", {"k": [bad]}]:
        with pytest.raises(ReferenceSyntaxError) as info:
            ValueTemplate.compile(value)
        message = str(info.value)
        assert bad in message
        assert "<<node.field.0>>" in message
        assert "\\<<" in message
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, FlowcoreError)


def test_syntax_error_explains_the_problem_and_location() -> None:
    with pytest.raises(ReferenceSyntaxError, match="empty path segment") as info:
        extract_references({"messages": [{"content": "hi <<n1..x>>"}]})
    assert "['messages'][0]['content']" in str(info.value)
    with pytest.raises(ReferenceSyntaxError, match="empty"):
        resolve_references("<<>>", {})
    with pytest.raises(ReferenceSyntaxError, match=r"segment 'a b'"):
        extract_references("<<n1.a b>>")
    with pytest.raises(ReferenceSyntaxError, match=r"n1\[0\]"):
        extract_references("<<n1[0]>>")


def test_valid_reference_after_bad_one_still_raises() -> None:
    with pytest.raises(ReferenceSyntaxError):
        extract_references("<<n1.ok>> then <<bad..>>")


# --- resolution errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "segment", "reason"),
    [
        ("<<n1.missing>>", "missing", "is not a key of the mapping (available: "),
        ("<<n1.meta.c>>", "c", "is not a key of the mapping (available: a, b)"),
        ("<<n1.items.3>>", "3", "is out of range for a list of length 3"),
        ("<<n1.items.-4>>", "-4", "is out of range for a list of length 3"),
        ("<<n1.items.first>>", "first", "is not an integer index into a list"),
        ("<<memory.tags.9>>", "9", "is out of range for a tuple of length 2"),
        ("<<memory.nope>>", "nope", "is not an attribute of Score (available: tags, value)"),
        ("<<state.person.age>>", "age", "is not an attribute of Person (available: address, name)"),
        ("<<n1.count.real.x>>", "x", "is not an attribute of int"),
        ("<<user.name>>", "name", "is not an attribute of NoneType"),
        ("<<n1.text.0>>", "0", "is not an attribute of str"),
        ("<<nope.x>>", "nope", "is not a known node or namespace (known: input, memory, n1, "),
    ],
)
def test_resolution_failure_names_node_reference_and_segment(
    template: str, segment: str, reason: str
) -> None:
    with pytest.raises(ReferenceResolutionError) as info:
        resolve(f"value: {template}", node="writer")
    err = info.value
    assert err.node == "writer"
    assert err.reference == template
    assert err.segment == segment
    assert err.reason.startswith(reason)
    message = str(err)
    assert "'writer'" in message
    assert template in message
    assert repr(segment) in message
    assert reason in message
    assert isinstance(err, LookupError)
    assert isinstance(err, FlowcoreError)


def test_resolution_error_in_whole_string_and_nested_value() -> None:
    with pytest.raises(ReferenceResolutionError) as info:
        resolve({"a": ["<< n1.meta.zz >>"]}, node="n9")
    assert (info.value.reference, info.value.segment, info.value.node) == (
        "<< n1.meta.zz >>",
        "zz",
        "n9",
    )


def test_resolution_error_without_node() -> None:
    with pytest.raises(ReferenceResolutionError) as info:
        resolve("<<n1.zz>>", node=None)
    assert info.value.node is None
    assert str(info.value).startswith("cannot resolve <<n1.zz>>")


def test_available_keys_are_sorted_and_capped() -> None:
    namespaces = {"n": {f"k{i:02d}": i for i in range(15)}}
    with pytest.raises(ReferenceResolutionError) as info:
        resolve_references("<<n.zz>>", namespaces)
    expected = ", ".join(f"k{i:02d}" for i in range(10))
    assert f"(available: {expected}, ... (5 more))" in info.value.reason


def test_empty_mapping_and_no_namespaces() -> None:
    with pytest.raises(ReferenceResolutionError, match="the mapping is empty"):
        resolve_references("<<n.a>>", {"n": {}})
    with pytest.raises(ReferenceResolutionError, match="none are known"):
        resolve_references("<<n.a>>", {})


@pytest.mark.parametrize(
    "template", ["<<memory.__class__>>", "<<memory._x>>", "<<state.person.__dict__>>"]
)
def test_underscore_attributes_are_blocked(template: str) -> None:
    with pytest.raises(ReferenceResolutionError, match="private") as info:
        resolve(template)
    assert info.value.segment == template.strip("<>").split(".")[-1]


def test_underscore_attribute_blocked_even_if_it_exists() -> None:
    with pytest.raises(ReferenceResolutionError) as info:
        resolve_references("<<o._hidden>>", {"o": Secretive()}, node="n")
    assert info.value.segment == "_hidden"
    assert resolve_references("<<o.visible>>", {"o": Secretive()}) == "yes"


def test_underscore_keys_in_mappings_are_allowed() -> None:
    assert resolve_references("<<n._private>>", {"n": {"_private": 1}}) == 1


def test_failing_property_becomes_resolution_error() -> None:
    class Broken:
        @property
        def boom(self) -> int:
            raise RuntimeError("kaput")

    with pytest.raises(ReferenceResolutionError, match="kaput") as info:
        resolve_references("<<b.boom>>", {"b": Broken()}, node="n")
    assert isinstance(info.value.__cause__, RuntimeError)


# --- properties ----------------------------------------------------------------------

SEGMENT = st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True)
JSON_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(SEGMENT, children, max_size=4)
    ),
    max_leaves=20,
)


@given(data=JSON_DATA, draw=st.data())
def test_reference_resolves_to_value_at_random_path(data: object, draw: st.DataObject) -> None:
    path: list[str] = []
    current = data
    while draw.draw(st.booleans()):
        if isinstance(current, dict) and current:
            key = draw.draw(st.sampled_from(sorted(current)))
            path.append(key)
            current = current[key]
        elif isinstance(current, list) and current:
            index = draw.draw(st.integers(-len(current), len(current) - 1))
            path.append(str(index))
            current = current[index]
        else:
            break
    template = "<<" + ".".join(["ns", *path]) + ">>"
    assert resolve_references(template, {"ns": data}) is current
    (ref,) = extract_references(template)
    assert (ref.namespace, ref.path) == ("ns", tuple(path))


@given(text=st.text().filter(lambda s: "<<" not in s))
def test_strings_without_brackets_are_static(text: str) -> None:
    template = ValueTemplate.compile(text)
    assert template.is_static
    assert template.references == ()
    assert template.resolve({}) is text


@given(
    prefix=st.text().filter(lambda s: "<<" not in s and not s.endswith(("<", "\\"))),
    suffix=st.text().filter(lambda s: "<<" not in s),
    value=st.text(),
)
def test_interpolation_inserts_strings_verbatim(prefix: str, suffix: str, value: str) -> None:
    assert resolve_references(f"{prefix}<<n.v>>{suffix}", {"n": {"v": value}}) == (
        prefix + value + suffix
    )
