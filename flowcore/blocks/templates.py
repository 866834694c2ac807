"""Rendering prompt templates with bounded time, memory and output.

Templates are Jinja2 rendered in an immutable sandbox with ``StrictUndefined``:
a template sees only the block's validated inputs (never the run config,
environment or provider keys), cannot reach attributes such as
``__class__`` or ``__globals__``, cannot mutate what it is given, and a
missing input is an error rather than an empty string in the prompt.

On top of the sandbox, every render is metered against
:class:`TemplateLimits` (time, operations, loop iterations, call depth, the
size of any value and of the output, the size of integers). A template that
runs past a limit stops itself: the check sits in the template's own loops,
calls and operators, so a render running in a worker thread ends as soon as
its limit is reached or its caller stops waiting, instead of being left to
burn a core. Every failure, from a syntax error to ``{{ 1/0 }}``, is a
:class:`TemplateRenderError` naming the template line and the cause.

A template may instead be written in seed 000's ``{placeholder}`` format
(``template_format="f-string"``): it is parsed by flowcore, never handed to
``str.format``, so a placeholder can only be a plain input name, and the same
limits apply. Each format refuses what looks like the other's placeholders,
which would otherwise reach the model as unfilled text.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from functools import lru_cache
from types import TracebackType
from typing import Any, Literal

from jinja2 import Template, TemplateSyntaxError, UndefinedError, nodes
from jinja2.exceptions import SecurityError

from flowcore.blocks._template_budget import (
    Budget,
    LimitExceededError,
    install_budget,
    remove_budget,
)
from flowcore.blocks._template_env import BoundedEnvironment, RefusedTemplateError
from flowcore.blocks._template_fstring import (
    FStringError,
    parse_fstring,
    render_fstring,
    single_brace_placeholder,
)
from flowcore.errors import FlowcoreError

__all__ = [
    "MAX_CONCURRENT_RENDERS",
    "TemplateFormat",
    "TemplateLimits",
    "TemplateRenderError",
    "active_renders",
    "arender_prompt",
    "check_template",
    "render_prompt",
]

TemplateFormat = Literal["jinja2", "f-string"]
"""How a prompt template is written: Jinja2 ``{{ name }}`` (the default) or seed 000's
``{name}`` (``"f-string"``: plain input names only, filled without ``str.format``)."""

_FORMATS: tuple[TemplateFormat, ...] = ("jinja2", "f-string")

#: Renders running at once in the worker threads of :func:`arender_prompt`;
#: more wait their turn (their time limit runs while they wait).
MAX_CONCURRENT_RENDERS = 4

# How long a cancelled render may take to notice; a check runs at least once
# per loop iteration, call, operator and output, so this is generous.
_STOP_GRACE = 1.0
_MAX_CAUSE = 500


@dataclass(frozen=True, slots=True)
class TemplateLimits:
    """What one prompt template render may spend. Sizes count characters (or items).

    ``max_template_nodes`` caps the parsed template's size (compiling it is
    one call into Python's compiler, which no check can interrupt).
    ``max_output_chars`` also caps any single value the template builds;
    ``max_total_chars`` caps everything it builds along the way, so growing a
    string in a loop stops long before it fills memory. ``max_seconds``
    applies when the caller gives no shorter timeout.

    Example:
        >>> TemplateLimits(max_output_chars=10_000).max_iterations
        100000
    """

    max_template_chars: int = 100_000
    max_template_nodes: int = 2_000
    max_output_chars: int = 1_000_000
    max_total_chars: int = 20_000_000
    max_iterations: int = 100_000
    max_steps: int = 1_000_000
    max_depth: int = 40
    max_int_bits: int = 4096
    max_seconds: float = 10.0

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(
                    f"TemplateLimits.{spec.name} must be a positive number, got {value!r}"
                )


class TemplateRenderError(FlowcoreError, ValueError):
    """A prompt template could not be rendered; ``line`` and ``cause`` say where and why.

    The block executor reports it as a ``BlockInputError`` of the block.

    Example:
        >>> err = TemplateRenderError("division by zero", line=3)
        >>> str(err), err.code
        ('prompt_template line 3: division by zero', 'template-render')
    """

    code = "template-render"

    def __init__(self, cause: str, *, line: int | None = None) -> None:
        self.cause = cause
        self.line = line
        where = "prompt_template" if line is None else f"prompt_template line {line}"
        super().__init__(f"{where}: {cause}")


_ENV = BoundedEnvironment()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_active = 0


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(
                max_workers=MAX_CONCURRENT_RENDERS, thread_name_prefix="flowcore-template"
            )
        return _POOL


def active_renders() -> int:
    """How many template renders are running right now, in any thread.

    A render whose caller gave up (its block timed out) stops within a
    moment, so this drops back to zero; useful in health checks and tests.

    Example:
        >>> active_renders()
        0
    """
    return _active


def _check_length(source: str, limits: TemplateLimits) -> None:
    if len(source) > limits.max_template_chars:
        raise TemplateRenderError(
            f"the template is {len(source)} characters long, more than "
            f"TemplateLimits.max_template_chars ({limits.max_template_chars})"
        )


def _check_format(template_format: str) -> None:
    if template_format not in _FORMATS:
        raise TemplateRenderError(
            f"unknown template_format {template_format!r}; use 'jinja2' ({{{{ name }}}}) "
            "or 'f-string' ({name})"
        )


def _parsed(source: str, limits: TemplateLimits) -> nodes.Template:
    _check_length(source, limits)
    ast = _ENV.parse(source)
    size = sum(1 for _ in ast.find_all(nodes.Node))
    if size > limits.max_template_nodes:
        raise TemplateRenderError(
            f"the template has {size} tags, expressions and text parts, more than "
            f"TemplateLimits.max_template_nodes ({limits.max_template_nodes}); shorten it"
        )
    found = single_brace_placeholder(_ENV, source)
    if found is not None:
        name, line = found
        raise TemplateRenderError(
            f"{{{name}}} is a seed 000 placeholder, which Jinja2 leaves as plain text; "
            f"write {{{{ {name} }}}}, or set template_format to 'f-string'",
            line=line,
        )
    return _ENV.meter(ast)


@lru_cache(maxsize=128)
def _compiled(source: str, limits: TemplateLimits) -> Template:
    # ``limits`` is part of the key: constants folded at compile time were
    # checked against the limits of the render that compiled them.
    code = _ENV.compile(_parsed(source, limits))
    return _ENV.template_class.from_code(_ENV, code, _ENV.make_globals(None))


def _template_line(tb: TracebackType | None) -> int | None:
    # Jinja rewrites tracebacks so frames of template code carry template lines.
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _render_error(exc: Exception) -> TemplateRenderError:
    line = _template_line(exc.__traceback__)
    if isinstance(exc, TemplateSyntaxError):
        return TemplateRenderError(f"syntax error: {exc.message}", line=exc.lineno)
    if isinstance(exc, RefusedTemplateError):
        return TemplateRenderError(str(exc), line=exc.lineno)
    if isinstance(exc, UndefinedError) and "is undefined" in str(exc.message):
        cause = (
            f"uses an input the block was not given ({exc.message}); declare it in the "
            "block's input_schema and wire it into the node"
        )
    elif isinstance(exc, UndefinedError):
        cause = (
            f"looks up something its inputs do not have ({exc.message}); check the "
            "template against the block's input_schema"
        )
    elif isinstance(exc, SecurityError):
        cause = (
            f"tried an operation the template sandbox forbids ({exc}); templates may only "
            "read their inputs"
        )
    elif isinstance(exc, LimitExceededError):
        cause = str(exc)
    elif isinstance(exc, RecursionError | MemoryError):
        cause = (
            f"nests too deeply or grows too large ({type(exc).__name__}); "
            "simplify the template or its inputs"
        )
    else:
        cause = f"failed with {type(exc).__name__}: {exc}"
    if len(cause) > _MAX_CAUSE:
        # Messages can quote values (a key looked up, an argument): keep
        # a megabyte of input out of the error, its logs and its events.
        cause = cause[: _MAX_CAUSE - 3] + "..."
    return TemplateRenderError(cause, line=line)


def _render(
    template: str,
    inputs: dict[str, Any],
    limits: TemplateLimits,
    deadline: float,
    stop: threading.Event,
    template_format: TemplateFormat = "jinja2",
) -> str:
    global _active
    budget = Budget(limits, deadline, stop)
    token = install_budget(budget)
    with _POOL_LOCK:
        _active += 1
    try:
        budget.check()  # a render whose caller already left never starts
        if template_format == "f-string":
            _check_length(template, limits)
            return render_fstring(template, inputs, budget)
        chunks: list[str] = []
        size = 0
        stream = _compiled(template, limits).generate(inputs)
        assert isinstance(stream, Generator)
        try:
            for chunk in stream:
                size += len(chunk)
                if size > limits.max_output_chars:
                    budget.fits(size, "the rendered prompt")
                chunks.append(chunk)
        finally:
            stream.close()
        return "".join(chunks)
    except TemplateRenderError:
        raise
    except FStringError as exc:
        raise TemplateRenderError(str(exc), line=exc.line) from None
    except Exception as exc:
        raise _render_error(exc) from None
    finally:
        with _POOL_LOCK:
            _active -= 1
        remove_budget(token)


def check_template(
    template: str,
    *,
    limits: TemplateLimits | None = None,
    template_format: TemplateFormat = "jinja2",
) -> None:
    """Check, without rendering it, that ``template`` parses and is within ``limits``.

    For definition time: a syntax error, a template too long or too large,
    nesting too deep to parse, or ``{% include %}``/``{% import %}``/
    ``{% extends %}`` raise :class:`TemplateRenderError` naming the line.
    So does a placeholder of the other format: ``{name}`` in a Jinja2
    template's text (it would reach the model unfilled), ``{{ name }}`` or a
    tag in an ``"f-string"`` template, and any f-string placeholder that is
    not a plain name (``{x.attr}``, ``{x[0]}``, ``{x!r}``, ``{x:>9}``).

    Example:
        >>> check_template("Hello {{ name }}")
        >>> try:
        ...     check_template("a\\n{% include 'x' %}")
        ... except TemplateRenderError as exc:
        ...     exc.line
        2
        >>> check_template("Hi {name}", template_format="f-string")
    """
    _check_format(template_format)
    limits = limits or TemplateLimits()
    try:
        if template_format == "f-string":
            _check_length(template, limits)
            parse_fstring(template)
            return
        _parsed(template, limits)
    except TemplateRenderError:
        raise
    except FStringError as exc:
        raise TemplateRenderError(str(exc), line=exc.line) from None
    except Exception as exc:
        raise _render_error(exc) from None


def render_prompt(
    template: str,
    inputs: Mapping[str, Any],
    *,
    limits: TemplateLimits | None = None,
    template_format: TemplateFormat = "jinja2",
) -> str:
    """Render ``template`` with exactly ``inputs`` as its variables, in this thread.

    Bounded by ``limits`` (default :class:`TemplateLimits`); raises
    :class:`TemplateRenderError` (a ``ValueError``) naming the template line
    and the cause. From async code use :func:`arender_prompt`, which keeps
    the event loop free. ``template_format="f-string"`` fills seed 000's
    ``{name}`` placeholders instead.

    Example:
        >>> render_prompt("Summarize: {{ text }}", {"text": "a long story"})
        'Summarize: a long story'
        >>> render_prompt("Summarize: {text}", {"text": "a tale"}, template_format="f-string")
        'Summarize: a tale'
    """
    _check_format(template_format)
    limits = limits or TemplateLimits()
    deadline = time.monotonic() + limits.max_seconds
    return _render(template, dict(inputs), limits, deadline, threading.Event(), template_format)


async def arender_prompt(
    template: str,
    inputs: Mapping[str, Any],
    *,
    limits: TemplateLimits | None = None,
    timeout: float | None = None,
    template_format: TemplateFormat = "jinja2",
) -> str:
    """Render ``template`` in a worker thread, stopping it when it runs out of time.

    At most :data:`MAX_CONCURRENT_RENDERS` renders run at once. The render
    stops itself after ``timeout`` seconds (or ``limits.max_seconds``,
    whichever is shorter) with a :class:`TemplateRenderError`; if the awaiting
    task is cancelled first (an ``asyncio.timeout`` around it fired), the
    render is told to stop and this waits briefly for it to end before the
    cancellation goes on, so no abandoned render keeps a core busy.

    Example:
        >>> import asyncio
        >>> asyncio.run(arender_prompt("Hi {{ name }}", {"name": "Ada"}, timeout=2))
        'Hi Ada'
    """
    _check_format(template_format)
    limits = limits or TemplateLimits()
    seconds = limits.max_seconds if timeout is None else min(timeout, limits.max_seconds)
    # The clock starts now: time spent waiting for a free worker counts too.
    deadline = time.monotonic() + seconds
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(
        _pool(), _render, template, dict(inputs), limits, deadline, stop, template_format
    )
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        await asyncio.wait({future}, timeout=_STOP_GRACE)
        # Its outcome no longer matters; fetch it so asyncio does not log it.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        raise
