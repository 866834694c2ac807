"""Spec: a run without a thread takes any object as input, but not input nested past the limit.

Nothing is stored, so values that no store could hold (objects, lone
surrogates) are the graph's own business; input nested more than
``MAX_NESTING`` deep is refused up front, because redaction, events and
references walk it (with a redactor it used to raise ``RecursionError``).
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from flowcore import START, Graph, InvalidInputError
from flowcore.checkpoint.serde import MAX_NESTING
from flowcore.secrets import SecretRedactor


class State(TypedDict):
    x: Any


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


GRAPH = Graph(State).add_node("copy", lambda s: {"x": s["x"]}).add_edge(START, "copy").compile()


@pytest.mark.parametrize("redacted", [False, True], ids=["plain", "redacted"])
def test_input_nested_past_the_limit_is_refused_before_anything_runs(redacted: bool) -> None:
    options: dict[str, Any] = (
        {"redactor": SecretRedactor(["sk-test-0123456789abc"])} if redacted else {}
    )
    with pytest.raises(InvalidInputError, match=f"more than {MAX_NESTING} levels deep"):
        GRAPH.run_sync({"x": nested(3000)}, **options)


def test_objects_and_lone_surrogates_are_fine_when_nothing_is_stored() -> None:
    marker = object()
    result = GRAPH.run_sync({"x": [marker, "caf\udce9", nested(MAX_NESTING - 2)]})
    assert result.status == "completed"
    assert result.state["x"][0] is marker
