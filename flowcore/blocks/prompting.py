"""Turning a block and its inputs into a prompt, and a model's answer into data.

Templates render through :mod:`flowcore.blocks.templates` (sandboxed and
bounded); ``render_prompt`` is re-exported here for existing imports.
Finding the JSON object in an answer takes time linear in the answer's
length, and never fails with anything but :class:`AnswerParseError`.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from flowcore.blocks.definition import BlockDefinition
from flowcore.blocks.templates import render_prompt
from flowcore.errors import FlowcoreError

__all__ = [
    "AnswerParseError",
    "aparse_json_object",
    "parse_json_object",
    "render_prompt",
    "repair_prompt",
    "system_prompt",
]

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)
# Failed decode attempts may scan, in all, this many times the answer's
# length; past that the answer is refused instead of parsed in quadratic time.
_SCAN_FACTOR = 4
# Where an object may start: "{" then a key or "}" (anything else fails at once).
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
# Answers longer than this are parsed in a worker thread by aparse_json_object.
_THREAD_ABOVE = 64 * 1024


class _Document(str):
    """The answer as the decoder sees it, without line numbers in its errors.

    ``json.JSONDecodeError`` counts the newlines before the error position on
    every failed attempt, which makes trying many ``{`` quadratic; the line and
    column are never shown (the message previews the answer instead).
    """

    __slots__ = ()

    def count(self, *_args: Any) -> int:
        return 0

    def rfind(self, *_args: Any) -> int:
        return -1


class _IntDigits:
    """The decoder's ``parse_int``: ints past Python's text limit become 0 and are noted.

    ``int()`` raises a bare ``ValueError`` for an int of more digits than
    Python converts from text; raised from inside the decoder it would end
    the scan with no position, so the work done could not be counted. The
    over-long int decodes as a stand-in instead, and an object holding one
    is refused once it has decoded.
    """

    __slots__ = ("limit", "longest")

    def __init__(self) -> None:
        # Never above the default, even when the process lifted the limit:
        # converting a longer int takes time quadratic in its length.
        current = sys.get_int_max_str_digits()
        default = sys.int_info.default_max_str_digits
        self.limit = min(current, default) if current else default
        self.longest = 0

    def __call__(self, text: str) -> int:
        digits = len(text) - text.startswith("-")
        if digits > self.limit:
            self.longest = max(self.longest, digits)
            return 0
        return int(text)


class AnswerParseError(FlowcoreError, ValueError):
    """A model's answer holds no usable JSON object; the message says what it held.

    Example:
        >>> AnswerParseError("the answer was empty; expected a JSON object").code
        'answer-parse'
    """

    code = "answer-parse"


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
    from which a whole object decodes. Raises :class:`AnswerParseError` (a
    ``ValueError``) saying what was found instead, also for JSON nested too
    deeply to decode, for an object holding an int of more digits than
    Python reads from text (4,300 by default), and for answers whose many
    ``{`` would take quadratic time to try one by one.

    Example:
        >>> parse_json_object('Sure! Here it is:\\n```json\\n{"a": 1}\\n```\\nAnything else?')
        {'a': 1}
    """
    stripped = text.strip()
    too_deep = False
    ints = _IntDigits()
    decoder = json.JSONDecoder(parse_int=ints)
    for candidate in (stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))):
        ints.longest = 0
        try:
            value = decoder.decode(candidate)
        except ValueError:
            continue
        except RecursionError:
            too_deep = True
            continue
        if isinstance(value, dict):
            return _without_long_ints(value, ints)
    document = _Document(stripped)
    work_left = _SCAN_FACTOR * len(stripped)
    gave_up = False
    for match in _OBJECT_START.finditer(stripped):
        start = match.start()
        ints.longest = 0
        try:
            value, _end = decoder.raw_decode(document, start)
        except json.JSONDecodeError as exc:
            work_left -= exc.pos - start + 1
        except RecursionError:
            too_deep = True
            work_left -= len(stripped) - start
        else:
            if isinstance(value, dict):
                return _without_long_ints(value, ints)
        if work_left < 0:
            gave_up = True
            break
    if too_deep:
        raise AnswerParseError(
            "the answer's JSON nests deeper than it can be decoded; ask for a flatter object"
        )
    if not stripped:
        raise AnswerParseError("the answer was empty; expected a JSON object")
    preview = stripped if len(stripped) <= 80 else stripped[:77] + "..."
    if gave_up:
        raise AnswerParseError(
            f"the answer holds no JSON object that could be found in linear time (it began "
            f"{preview!r}); ask for the object alone or in a ```json fence"
        )
    raise AnswerParseError(f"the answer holds no JSON object (it began {preview!r})")


def _without_long_ints(value: dict[str, Any], ints: _IntDigits) -> dict[str, Any]:
    """``value``, unless an int in it was too long to read (it decoded as a stand-in)."""
    if ints.longest:
        raise AnswerParseError(
            f"the answer's JSON object holds an integer of {ints.longest:,} digits, more than "
            f"the {ints.limit:,} Python reads as a number; ask for it as a string"
        )
    return value


async def aparse_json_object(text: str) -> dict[str, Any]:
    """:func:`parse_json_object` for async code: long answers are parsed in a worker thread.

    Example:
        >>> asyncio.run(aparse_json_object('{"a": 1}'))
        {'a': 1}
    """
    if len(text) <= _THREAD_ABOVE:
        return parse_json_object(text)
    return await asyncio.to_thread(parse_json_object, text)
