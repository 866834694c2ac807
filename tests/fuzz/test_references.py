"""Fuzz spec: ``<<ref>>`` values compile and resolve, or are refused typed.

``ValueTemplate.compile``, ``extract_references``, ``resolve_references`` and
``lookup_path`` take node inputs written by users and models: references
nearly well formed, huge indexes, escapes, values nested past the recursion
limit, namespaces holding anything. Each call succeeds or raises a
``ReferenceSyntaxError`` / ``ReferenceResolutionError``, within the limit.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flowcore.refs import ValueTemplate, extract_references, lookup_path, resolve_references

from .harness import Judge, fuzz_settings
from .strategies import REF_VALUES, SEGMENTS, deep_values, namespaces, reference_texts

VALUES = st.one_of(REF_VALUES, REF_VALUES, deep_values())


@fuzz_settings(350)
@given(value=VALUES, roots=namespaces())
def test_reference_values_compile_and_resolve_or_are_refused_typed(
    value: Any, roots: dict[str, Any]
) -> None:
    judge = Judge("refs: compile, extract, resolve")
    template = judge.call(lambda: ValueTemplate.compile(value))
    refs = judge.call(lambda: extract_references(value))
    if template is not None:
        assert refs is not None
        assert template.references == refs
        judge.call(lambda: template.resolve(roots, node="n1"))
    judge.call(lambda: resolve_references(value, roots))


@fuzz_settings(250)
@given(text=reference_texts(), roots=namespaces())
def test_reference_text_against_every_namespace_is_typed(text: str, roots: dict[str, Any]) -> None:
    judge = Judge("refs: resolve text")
    # Every namespace the text names exists, so paths are walked into odd values.
    refs = judge.call(lambda: extract_references(text))
    for ref in refs or ():
        roots.setdefault(ref.namespace, roots.get("x", {"a": [1, {"b": 2}]}))
    judge.call(lambda: resolve_references(text, roots, node="n1"))


@fuzz_settings(200)
@given(root=st.one_of(deep_values(), REF_VALUES), path=st.lists(SEGMENTS, max_size=5))
def test_lookup_path_walks_any_value_or_is_typed(root: Any, path: list[str]) -> None:
    judge = Judge("refs: lookup_path")
    judge.call(lambda: lookup_path(root, path, reference="<<n." + ".".join(path) + ">>"))
