"""Spec: references into odd values resolve or fail typed; values too deep are refused at compile.

An index of thousands of digits used to hit Python's int-string limit, a
value nested past the recursion limit crashed compiling, and interpolating
an int too long for text raised ``ValueError``.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowcore.errors import ReferenceResolutionError, ReferenceSyntaxError
from flowcore.refs import ValueTemplate, resolve_references


def nested(depth: int) -> Any:
    value: Any = "<<input.x>>"
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("root", [{"a": 1}, [1, 2, 3]], ids=["mapping", "list"])
def test_an_index_of_thousands_of_digits_is_a_missing_segment(root: Any) -> None:
    with pytest.raises(ReferenceResolutionError) as caught:
        resolve_references("<<input." + "9" * 4400 + ">>", {"input": root})
    assert caught.value.segment == "9" * 4400


def test_a_value_nested_too_deep_to_search_is_a_syntax_error_naming_where() -> None:
    with pytest.raises(ReferenceSyntaxError, match="more than 100 levels deep"):
        ValueTemplate.compile(nested(150))


def test_a_value_just_under_the_limit_compiles_and_resolves() -> None:
    template = ValueTemplate.compile(nested(90))
    resolved = template.resolve({"input": {"x": 5}})
    for _ in range(90):
        assert isinstance(resolved, dict)
        resolved = resolved["k"]
    assert resolved == 5


def test_interpolating_a_value_text_cannot_show_never_raises() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    resolved = resolve_references(
        "n=<<input.n>> d=<<input.d>>", {"input": {"n": 10**5000, "d": deep}}
    )
    assert isinstance(resolved, str)
    assert resolved.startswith("n=<int that cannot be shown as text>")
