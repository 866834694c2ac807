"""Seed 000's ``{placeholder}`` prompt templates, filled by a parser of our own.

A block with ``template_format: "f-string"`` writes its prompt the way seed
000 does: ``"Log in using {uber_eats_credentials}."``. The seed fills it with
``str.format``, which an untrusted template can turn against the host:
``{x.__class__.__mro__}`` walks attributes, ``{x[0]}`` indexes, and
``{x:>999999999}`` asks for a gigabyte of padding in one C call. So this
module never calls ``str.format``: a template is parsed once into literal text
and plain names, and a placeholder may be nothing but a name. Rendering looks
each name up in the block's inputs and turns the value into text under the
same :class:`~flowcore.blocks._template_budget.Budget` as a Jinja2 render, so
the size and time limits of :class:`~flowcore.blocks.templates.TemplateLimits`
hold for both formats.

The other direction is checked too: under Jinja2, a ``{placeholder}`` is plain
text that would reach the model unfilled, and under ``f-string`` a
``{{ name }}`` is an escaped brace pair; both are refused when the block is
defined, with the spelling that works.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2 import Environment

from flowcore.blocks._template_budget import Budget
from flowcore.blocks._template_env import finalize_output

__all__: list[str] = []

# ``{{`` and ``}}`` are literal braces; ``{...}`` without braces inside is a
# placeholder; any other brace is unmatched.
_TOKEN = re.compile(r"\{\{|\}\}|\{(?P<field>[^{}]*)\}|[{}]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# What a Jinja2 placeholder looks like, to catch it in an f-string template.
_JINJA_PLACEHOLDER = re.compile(r"\{\{-?\s*([A-Za-z_][A-Za-z0-9_.]*)\s*-?\}\}|\{%|\{#")
# What a seed 000 placeholder looks like, to catch it in a Jinja2 template's text.
_SINGLE_BRACE = re.compile(r"(?<!\{)\{[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\}(?!\})")


class FStringError(ValueError):
    """An f-string template cannot be parsed or filled; ``line`` says where."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One ``{name}`` of a parsed template, with the line it is on (1-based)."""

    name: str
    line: int


Piece = str | Placeholder


def _line_of(source: str, offset: int) -> int:
    return source.count("\n", 0, offset) + 1


def _refuse_field(inner: str, line: int) -> FStringError:
    shown = "{" + inner + "}"
    if inner.startswith(("%", "#")):
        why = (
            f"{shown[:60]} is Jinja2 syntax, which an f-string template does not run; "
            "set template_format to 'jinja2' to use tags"
        )
    else:
        why = (
            f"{shown[:60]} is not a plain input name: f-string templates fill only "
            "{name} placeholders (no attributes, indexes, conversions or format specs); "
            "set template_format to 'jinja2' for expressions, or write {{ and }} for "
            "literal braces"
        )
    return FStringError(why, line)


@lru_cache(maxsize=256)
def parse_fstring(source: str) -> tuple[Piece, ...]:
    """Split ``source`` into literal text and placeholders, refusing anything else.

    Raises :class:`FStringError` for an unmatched brace, a placeholder that is
    not a plain name, or a Jinja2 placeholder (``{{ name }}``) that would come
    out as literal braces.
    """
    jinja = _JINJA_PLACEHOLDER.search(source)
    if jinja is not None:
        name = jinja.group(1)
        line = _line_of(source, jinja.start())
        if name is None:
            raise FStringError(
                f"{jinja.group(0)} starts a Jinja2 tag or comment, which an f-string template "
                "does not run; set template_format to 'jinja2'",
                line,
            )
        fix = f"write {{{name}}}" if "." not in name else "use input names only"
        raise FStringError(
            f"{jinja.group(0)[:60]} is a Jinja2 placeholder, but this template's format is "
            f"'f-string' (where {{{{ is a literal brace); {fix}, or set template_format "
            "to 'jinja2'",
            line,
        )
    pieces: list[Piece] = []
    text: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(source):
        text.append(source[pos : match.start()])
        pos = match.end()
        token = match.group(0)
        if token in ("{{", "}}"):
            text.append(token[0])
            continue
        line = _line_of(source, match.start())
        inner = match.group("field")
        if inner is None:
            raise FStringError(
                f"a lone {token!r} has no partner; write {token * 2!r} for a literal brace",
                line,
            )
        name = inner.strip()
        if not _NAME.match(name):
            raise _refuse_field(inner, line)
        if text:
            pieces.append("".join(text))
            text = []
        pieces.append(Placeholder(name, line))
    text.append(source[pos:])
    if joined := "".join(text):
        pieces.append(joined)
    return tuple(pieces)


def render_fstring(source: str, inputs: dict[str, Any], budget: Budget) -> str:
    """Fill ``source``'s placeholders from ``inputs``, spending from ``budget``.

    A value becomes text as it would in a Jinja2 ``{{ name }}`` (``str()``),
    after its size was estimated against the render's limits.
    """
    out: list[str] = []
    size = 0
    for piece in parse_fstring(source):
        budget.tick()
        if isinstance(piece, Placeholder):
            if piece.name not in inputs:
                raise FStringError(
                    f"uses an input the block was not given ('{piece.name}' is undefined); "
                    "declare it in the block's input_schema and wire it into the node",
                    piece.line,
                )
            text = str(finalize_output(inputs[piece.name]))
        else:
            text = piece
        size += len(text)
        budget.fits(size, "the rendered prompt")
        out.append(text)
    return "".join(out)


def single_brace_placeholder(env: Environment, source: str) -> tuple[str, int] | None:
    """The first ``{name}`` a Jinja2 template leaves as plain text, with its line.

    Only the template's text counts: not strings inside ``{{ ... }}``, not
    comments, not ``{% raw %}`` blocks (where braces are meant literally).
    """
    in_raw = False
    for lineno, kind, value in env.lex(source):
        if kind in ("raw_begin", "raw_end"):
            in_raw = kind == "raw_begin"
        elif kind == "data" and not in_raw:
            match = _SINGLE_BRACE.search(value)
            if match is not None:
                return match.group(1), lineno + value.count("\n", 0, match.start())
    return None
