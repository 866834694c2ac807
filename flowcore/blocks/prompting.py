"""Turning a block and its inputs into a prompt, and a model's answer into data.

Templates render in Jinja2's ``ImmutableSandboxedEnvironment`` with
``StrictUndefined``: a template sees only the block's validated inputs (never
the run config, environment or provider keys), cannot reach attributes such
as ``__class__`` or ``__globals__``, cannot mutate what it is given, and a
missing input is an error rather than an empty string in the prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, UndefinedError
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from flowcore.blocks.definition import BlockDefinition

__all__ = ["parse_json_object", "render_prompt", "repair_prompt", "system_prompt"]

_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)


@lru_cache(maxsize=512)
def _compiled(source: str) -> Template:
    return _ENV.from_string(source)


def render_prompt(template: str, inputs: Mapping[str, Any]) -> str:
    """Render ``template`` with exactly ``inputs`` as its variables.

    Raises ``ValueError`` naming the missing variable, or saying that the
    template tried an operation the sandbox forbids.

    Example:
        >>> render_prompt("Summarize: {{ text }}", {"text": "a long story"})
        'Summarize: a long story'
    """
    try:
        return _compiled(template).render(dict(inputs))
    except UndefinedError as exc:
        raise ValueError(
            f"prompt_template uses an input the block was not given ({exc.message}); "
            "declare it in the block's input_schema and wire it into the node"
        ) from None
    except (SecurityError, OverflowError) as exc:
        raise ValueError(
            f"prompt_template tried an operation the template sandbox forbids ({exc}); "
            "templates may only read their inputs"
        ) from None
    except TemplateError as exc:
        raise ValueError(f"prompt_template failed to render: {exc}") from None


def system_prompt(block: BlockDefinition, output_schema: Mapping[str, Any]) -> str:
    """The system prompt of an LLM block: what it is, and the JSON it must answer with.

    Example:
        >>> from flowcore.blocks.builtins import builtin_blocks
        >>> block = next(b for b in builtin_blocks() if b.id == "summarize")
        >>> system_prompt(block, block.output_schema).splitlines()[0]
        "You are running the step 'Summarize': Summarize a text in a few sentences."
    """
    schema = json.dumps(output_schema, indent=None, sort_keys=True)
    return (
        f"You are running the step {block.name!r}: {block.description}\n"
        "Answer with a single JSON object and nothing else. It must match this JSON "
        f"Schema:\n{schema}"
    )


def repair_prompt(problems: list[str]) -> str:
    """The follow-up message asking a model to fix an answer that did not fit.

    Example:
        >>> repair_prompt(["output: missing required key 'summary'"]).splitlines()[0]
        'Your answer could not be used:'
    """
    listed = "\n".join(f"- {p}" for p in problems)
    return (
        f"Your answer could not be used:\n{listed}\n"
        "Reply again with only the corrected JSON object."
    )


def parse_json_object(text: str) -> dict[str, Any]:
    """Find the JSON object in a model's answer: bare, fenced, or wrapped in prose.

    Tries the whole text, then each fenced code block, then the first ``{``
    from which a whole object decodes. Raises ``ValueError`` saying what was
    found instead.

    Example:
        >>> parse_json_object('Sure! Here it is:\\n```json\\n{"a": 1}\\n```\\nAnything else?')
        {'a': 1}
    """
    stripped = text.strip()
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    start = stripped.find("{")
    while start != -1:
        try:
            value, _end = decoder.raw_decode(stripped, start)
        except ValueError:
            start = stripped.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = stripped.find("{", start + 1)
    if not stripped:
        raise ValueError("the answer was empty; expected a JSON object")
    preview = stripped if len(stripped) <= 80 else stripped[:77] + "..."
    raise ValueError(f"the answer holds no JSON object (it began {preview!r})")
