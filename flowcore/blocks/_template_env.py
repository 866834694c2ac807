"""The Jinja2 environment prompt templates render in, with every cost metered.

A thread cannot be killed, so a runaway template has to stop itself. Every
place where compiled template code does work goes through this environment:
operators (``intercepted_binops``), calls, attribute and item lookups, every
``{% for %}`` (rewritten to iterate through :meth:`BoundedEnvironment.bounded_iter`),
``~`` concatenation (rewritten to :meth:`BoundedEnvironment.bounded_concat`),
every filter and every ``{{ output }}`` (``finalize``). Each of those spends
from the current render's :class:`Budget`, which raises
:class:`LimitExceededError` once its time, steps, iterations, depth or size
are used up, or once the waiting coroutine has gone away.

Sizes are estimated BEFORE the work where Python would otherwise allocate in
one C call (``'a' * 10**9``, ``7 ** 7 ** 9``, ``center(10**9)``,
``'%0999999999d' % 1``); everything a render builds is also charged after
the fact against a total, so many medium strings cannot add up to gigabytes.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import math
import re
import string
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from jinja2 import StrictUndefined, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

if TYPE_CHECKING:
    from jinja2.runtime import Context

    from flowcore.blocks.templates import TemplateLimits

__all__: list[str] = []

# Python's compiler warns about constructs such as ``1[0]`` in the code Jinja
# generates for a template; for an untrusted template that is noise on the
# host's stderr (the template fails when it runs instead). Only warnings
# attributed to Jinja's "<template>" code are silenced.
warnings.filterwarnings("ignore", category=SyntaxWarning, module="<template>$")


class LimitExceededError(Exception):
    """A render ran out of one of its limits; the message says which and how to fix it."""


class RefusedTemplateError(Exception):
    """The template uses a construct prompts may not use (include, import, extends)."""

    def __init__(self, message: str, lineno: int) -> None:
        super().__init__(message)
        self.lineno = lineno


class Budget:
    """What one render may still spend; shared by every hook while that render runs."""

    def __init__(self, limits: TemplateLimits, deadline: float, stop: threading.Event) -> None:
        self.limits = limits
        self.deadline = deadline
        self.stop = stop
        self.steps = 0
        self.iterations = 0
        self.built = 0
        self.depth = 0

    def tick(self) -> None:
        self.steps += 1
        # The clock and the stop flag are read every few steps: a step is
        # microseconds, and this runs on every operation of the template.
        if self.steps & 15 == 0 or self.steps > self.limits.max_steps:
            self.check()

    def check(self) -> None:
        if self.steps > self.limits.max_steps:
            raise LimitExceededError(
                f"the template did more than {self.limits.max_steps} operations "
                "(TemplateLimits.max_steps); simplify it or raise the limit"
            )
        if self.stop.is_set():
            raise LimitExceededError("the render was cancelled (its block timed out)")
        if time.monotonic() > self.deadline:
            raise LimitExceededError(
                "the template ran past its time limit; simplify it, or raise the block's "
                "timeout_seconds (or TemplateLimits.max_seconds)"
            )

    def iterate(self, body_chars: int) -> None:
        self.iterations += 1
        if self.iterations > self.limits.max_iterations:
            raise LimitExceededError(
                f"the template's loops ran more than {self.limits.max_iterations} iterations "
                "in all (TemplateLimits.max_iterations); loop over less data"
            )
        self.tick()
        self.spend(body_chars)

    def fits(self, size: int, what: str) -> None:
        """Refuse, before it is built, a value larger than one render may hold."""
        if size > self.limits.max_output_chars:
            raise LimitExceededError(
                f"{what} would be about {size} characters or items long, more than a prompt "
                f"may hold (TemplateLimits.max_output_chars={self.limits.max_output_chars})"
            )

    def spend(self, size: int) -> None:
        self.built += size
        if self.built > self.limits.max_total_chars:
            raise LimitExceededError(
                f"the template built more than {self.limits.max_total_chars} characters of "
                "values in all (TemplateLimits.max_total_chars); it is growing values in a loop"
            )

    def charge(self, value: object) -> None:
        size = size_of(value)
        if size:
            self.fits(size, "a value")
            self.spend(size)


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "flowcore_template_budget", default=None
)


def current_budget() -> Budget:
    budget = _CURRENT.get()
    if budget is None:  # pragma: no cover - every entry point installs one
        raise RuntimeError("a bounded template ran outside flowcore.blocks.templates")
    return budget


def install_budget(budget: Budget) -> contextvars.Token[Budget | None]:
    return _CURRENT.set(budget)


def remove_budget(token: contextvars.Token[Budget | None]) -> None:
    _CURRENT.reset(token)


def size_of(value: object) -> int:
    """A value's size in the units limits use: characters, items, or bytes of a number."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        return len(value)
    if isinstance(value, int):
        return value.bit_length() // 8
    return 0


def text_size(value: object, cap: int) -> int:
    """About ``len(str(value))``, counted only until it passes ``cap`` so it stays cheap.

    A list holding a million references to one long string is small in
    memory but enormous as text; this is what refuses it before ``str()``.
    """
    if isinstance(value, str | bytes):
        return len(value)
    total = 0
    stack = [value]
    while stack and total <= cap:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            if total <= cap:
                stack.extend(item.keys())
                stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + 2 * len(item)
            if total <= cap:
                stack.extend(item)
        else:
            total += len(str(item))
    return total


def _str_len(value: object) -> int:
    return text_size(value, current_budget().limits.max_output_chars)


# -------------------------------------------------------------- formatting
_PERCENT_SPEC = re.compile(
    r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[diouxXeEfFgGcrsab%]"
)
_DIGITS = re.compile(r"\d+")


def _format_args(args: Iterable[object]) -> list[object]:
    flat: list[object] = []
    for arg in args:
        if isinstance(arg, Mapping):
            flat.extend(arg.values())
        elif isinstance(arg, tuple):
            flat.extend(arg)
        else:
            flat.append(arg)
    return flat


def check_format(budget: Budget, fmt: str | bytes, args: Iterable[object], style: str) -> None:
    """Refuse a ``%`` or ``str.format`` call whose result would be too large.

    The result is at most the literal text plus, per field, the widest
    width/precision named and the longest argument, so that bound is checked.
    """
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    values = _format_args(args)
    fields = 0
    widths = [0]
    from_args = False
    if style == "%":
        for match in _PERCENT_SPEC.finditer(text):
            fields += 1
            for part in match.groups():
                if part == "*":
                    from_args = True
                elif part:
                    widths.append(int(part) if len(part) < 12 else 10**12)
    else:
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError:
            return  # malformed: str.format raises on its own, cheaply
        for _literal, field, spec, _conversion in parsed:
            if field is None:
                continue
            fields += 1
            if spec and "{" in spec:
                from_args = True
            widths.extend(int(d) if len(d) < 12 else 10**12 for d in _DIGITS.findall(spec or ""))
    if from_args:
        widths.extend(abs(v) for v in values if isinstance(v, int))
    widest = max(widths)
    budget.fits(widest, "a format width")
    longest = max((_str_len(v) for v in values), default=0)
    budget.fits(len(text) + fields * (widest + longest), "the formatted string")


# ------------------------------------------------------------- str methods
def _check_str_method(
    budget: Budget, name: str, owner: str | bytes, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """Estimate what a str/bytes method would build; returns the (possibly listed) args."""
    size = len(owner)
    if name in ("ljust", "rjust", "center", "zfill") and args and isinstance(args[0], int):
        budget.fits(args[0], f"str.{name}()'s result")
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tab, int):
            tabs = owner.count("\t" if isinstance(owner, str) else b"\t")  # type: ignore[arg-type]
            budget.fits(size + tabs * max(tab, 0), "str.expandtabs()'s result")
    elif name == "join" and args:
        items = list(args[0])
        total = sum(_str_len(i) for i in items) + max(len(items) - 1, 0) * size
        budget.fits(total, "str.join()'s result")
        args = (items, *args[1:])
    elif name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        hits = owner.count(old) if old else size + 1
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        budget.fits(size + hits * len(new), "str.replace()'s result")
    elif name == "translate" and args:
        table = args[0]
        longest = 1
        if isinstance(table, Mapping):
            longest = max((_str_len(v) for v in table.values() if v is not None), default=1)
        budget.fits(size * max(longest, 1), "str.translate()'s result")
    return args


def check_builtin_call(
    budget: Budget, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """Guard calls into C code, where one call could allocate without coming back."""
    if not isinstance(func, types.BuiltinMethodType | types.MethodWrapperType):
        return args
    owner = getattr(func, "__self__", None)
    if isinstance(owner, str | bytes):
        args = _check_str_method(budget, func.__name__, owner, args, kwargs)
    # Any other builtin taking a huge count (int.to_bytes(10**9), ...) is refused outright.
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool):
            budget.fits(abs(value), f"{func.__name__}()'s numeric argument")
    return args


# ------------------------------------------------------------------ binops
_SEQUENCES = (str, bytes, list, tuple)


def check_binop(budget: Budget, op: str, left: Any, right: Any) -> None:
    limit_bits = budget.limits.max_int_bits
    ints = isinstance(left, int) and isinstance(right, int)
    if op == "**" and ints and right > 0 and abs(left) > 1:
        bits = math.ceil(right * math.log2(abs(left)))
        if bits > limit_bits:
            raise LimitExceededError(
                f"{left} ** {right} would be a number of about {bits} bits, more than "
                f"TemplateLimits.max_int_bits ({limit_bits})"
            )
    elif op == "*" and ints:
        bits = left.bit_length() + right.bit_length()
        if bits > limit_bits:
            raise LimitExceededError(
                f"a product of about {bits} bits is more than TemplateLimits.max_int_bits "
                f"({limit_bits})"
            )
    elif op == "*":
        seq, times = (left, right) if isinstance(left, _SEQUENCES) else (right, left)
        if isinstance(seq, _SEQUENCES) and isinstance(times, int) and times > 0:
            budget.fits(_str_len(seq) * times, "the repeated sequence")
    elif op == "+" and isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
        budget.fits(_str_len(left) + _str_len(right), "the joined sequence")
    elif op == "%" and isinstance(left, str | bytes):
        check_format(budget, left, right if isinstance(right, tuple) else (right,), "%")


# ----------------------------------------------------------------- filters
# Work a filter may do in Python code no check can interrupt, in multiples of
# max_output_chars (character copies; about 10 ms per 50 million).
_QUADRATIC_WORK = 50

_PASSED_ARGS = frozenset({"eval_ctx", "environment", "context"})


@functools.cache
def _signature(func: Callable[..., Any]) -> tuple[inspect.Signature, bool]:
    signature = inspect.signature(func)
    first = next(iter(signature.parameters), None)
    # Jinja passes the context/environment first; a wrapper made by
    # ``async_variant`` takes it without showing it in its signature.
    hidden = getattr(func, "jinja_pass_arg", None) is not None and first not in _PASSED_ARGS
    return signature, hidden


def _bound(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The filter's arguments by parameter name, whichever way Jinja wraps it."""
    signature, hidden = _signature(func)
    if hidden:
        args = args[1:]
    try:
        return signature.bind(*args, **kwargs).arguments
    except TypeError:
        return None  # a wrong call: the filter itself raises, cheaply


def _arg(bound: Mapping[str, Any], name: str, default: Any) -> Any:
    return bound.get(name, default)


def _precheck_filter(
    budget: Budget, name: str, func: Callable[..., Any], args: Any, kw: Any
) -> Any:
    """Estimate the output of the filters whose arguments multiply their input."""
    bound = _bound(func, args, kw)
    if bound is None:
        return args
    value = bound.get("value", bound.get("s"))
    text_len = _str_len(value)
    if name in _STRINGIFYING:
        budget.fits(text_len, f"{name}()'s input as text")
        value = value if isinstance(value, str) else str(value)
    if name == "center":
        width = _arg(bound, "width", 80)
        if isinstance(width, int):
            budget.fits(width, "center()'s width")
    elif name == "indent":
        width = _arg(bound, "width", 4)
        pad = width if isinstance(width, int) else _str_len(width)
        lines = value.count("\n") + 1
        budget.fits(text_len + lines * max(pad, 0), "indent()'s result")
    elif name == "wordwrap":
        width = _arg(bound, "width", 79)
        wrap = _arg(bound, "wrapstring", None)
        wrap_len = _str_len(wrap) if wrap is not None else 1
        if isinstance(width, int) and width > 0:
            breaks = text_len // width + value.count("\n") + 1
            budget.fits(text_len + breaks * wrap_len, "wordwrap()'s result")
            # textwrap cuts a word longer than the width by slicing the rest
            # of it again for every piece: quadratic in the word's length.
            cutting = sum(len(w) ** 2 for w in value.split() if len(w) > width) // width
            if cutting > _QUADRATIC_WORK * budget.limits.max_output_chars:
                raise LimitExceededError(
                    f"wordwrap({width}) would cut words thousands of times its width long "
                    "into pieces, which takes time quadratic in their length; wrap at a "
                    "larger width or pass break_long_words=false"
                )
    elif name == "format":
        rest = bound.get("args", ()) + tuple((bound.get("kwargs") or {}).values())
        check_format(budget, value, rest, "%")
    elif name == "join" and value is not None and not isinstance(value, str):
        items = list(value)
        sep = _arg(bound, "d", "")
        total = sum(_str_len(i) for i in items) + max(len(items) - 1, 0) * _str_len(sep)
        if _arg(bound, "attribute", None) is None:
            budget.fits(total, "join()'s result")
        args = tuple(items if a is value else a for a in args)
    elif name == "replace":
        old, new = _arg(bound, "old", ""), _arg(bound, "new", "")
        count = _arg(bound, "count", None)
        hits = value.count(str(old)) if old else text_len + 1
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        budget.fits(text_len + hits * _str_len(new), "replace()'s result")
    elif name in ("batch", "slice"):
        count = _arg(bound, "linecount" if name == "batch" else "slices", 1)
        if isinstance(count, int) and count > budget.limits.max_iterations:
            # Both loop that many times in Python, out of reach of the loop checks.
            raise LimitExceededError(
                f"{name}() into {count} parts is more than TemplateLimits.max_iterations "
                f"({budget.limits.max_iterations})"
            )
    elif name == "tojson":
        indent = (bound.get("kwargs") or {}).get("indent", _arg(bound, "indent", None))
        wide = indent if isinstance(indent, int) else len(indent) if isinstance(indent, str) else 0
        if wide > 16:
            raise LimitExceededError("tojson(indent=...) may indent by at most 16 characters")
    elif name == "sum":
        start = _arg(bound, "start", 0)
        if not isinstance(start, int | float):
            raise LimitExceededError("sum() in a template adds numbers only (start must be one)")
    return args


# Filters that turn their value into text first: refused when that text alone
# would be too large (the value may be a list of many references to one string).
_STRINGIFYING = frozenset(
    {"capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower", "pprint"}
    | {"replace", "safe", "string", "striptags", "title", "tojson", "trim", "truncate", "upper"}
    | {"urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"}
)
_MULTIPLYING_FILTERS = frozenset(
    {"batch", "center", "format", "indent", "join", "replace", "slice", "sum", "tojson"}
    | {"wordwrap"}
)


def _guarded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    multiplying = name in _MULTIPLYING_FILTERS
    stringifying = name in _STRINGIFYING
    # The runtime passes one context/environment argument before the value.
    value_at = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.tick()
        if multiplying:
            args = _precheck_filter(budget, name, func, args, kwargs)
        elif stringifying and len(args) > value_at and not isinstance(args[value_at], str):
            budget.fits(_str_len(args[value_at]), f"{name}()'s input as text")
        result = func(*args, **kwargs)
        budget.charge(result)
        return result

    return run


# ----------------------------------------------------------------- globals
class BoundedRange:
    """``range`` for templates: its length is capped and iterating it costs budget."""

    def __init__(self, *args: int) -> None:
        self._range = range(*args)
        budget = current_budget()
        cap = budget.limits.max_iterations
        if len(self._range) > cap:
            raise LimitExceededError(
                f"range() of {len(self._range)} numbers is more than a template may loop over "
                f"(TemplateLimits.max_iterations={cap})"
            )

    def __iter__(self) -> Iterator[int]:
        budget = current_budget()
        for number in self._range:
            budget.iterate(0)
            yield number

    def __len__(self) -> int:
        return len(self._range)

    def __getitem__(self, index: Any) -> Any:
        return self._range[index]

    def __contains__(self, value: object) -> bool:
        return value in self._range

    def __reversed__(self) -> Iterator[int]:
        return iter(list(self)[::-1])

    def __repr__(self) -> str:
        return repr(self._range)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    budget = current_budget()
    budget.fits(abs(n) * abs(max) * 12, "lipsum()'s text")
    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


def _finalize(value: Any) -> Any:
    # Every ``{{ ... }}``, including those inside macros and {% set %} blocks
    # (which Python joins before our output loop sees them), is charged here.
    budget = current_budget()
    if isinstance(value, str):
        text = value
    elif isinstance(value, int | float) or value is None:
        text = str(value)
    else:
        budget.fits(_str_len(value), "an output expression")
        text = str(value)
    budget.fits(len(text), "an output expression")
    budget.spend(len(text))
    return text


# ----------------------------------------------------------------- the AST
_REFUSED: dict[type[nodes.Node], str] = {
    nodes.Include: "{% include %}",
    nodes.Import: "{% import %}",
    nodes.FromImport: "{% from ... import %}",
    nodes.Extends: "{% extends %}",
}


class _Meter(NodeTransformer):
    """Route every loop and ``~`` through the environment, refuse other templates."""

    def __init__(self, environment: BoundedEnvironment) -> None:
        self.environment = environment

    def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> nodes.Node:
        for kind, tag in _REFUSED.items():
            if isinstance(node, kind):
                raise RefusedTemplateError(
                    f"{tag} is not available: a prompt template is one self-contained "
                    "string; inline what it would load, or use a macro",
                    node.lineno,
                )
        return super().generic_visit(node, *args, **kwargs)

    def _call(self, name: str, args: list[nodes.Expr], lineno: int) -> nodes.Call:
        call = nodes.Call(nodes.EnvironmentAttribute(name), args, [], None, None, lineno=lineno)
        call.set_environment(self.environment)
        return call

    def visit_For(self, node: nodes.For) -> nodes.Node:
        visited = self.generic_visit(node)
        assert isinstance(visited, nodes.For)
        node = visited
        # Literal text of the body is copied into the output once per
        # iteration, which no hook sees: charge it per iteration instead.
        body = [*node.body, *node.else_]
        text = sum(len(d.data) for n in body for d in n.find_all(nodes.TemplateData))
        text += sum(
            len(c.value) for n in body for c in n.find_all(nodes.Const) if isinstance(c.value, str)
        )
        node.iter = self._call(
            "bounded_iter",
            [cast(nodes.Expr, node.iter), nodes.Const(text, lineno=node.lineno)],
            node.lineno,
        )
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        visited = self.generic_visit(node)
        assert isinstance(visited, nodes.Concat)
        node = visited
        return self._call("bounded_concat", list(node.nodes), node.lineno)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox with every operation charged to the current :class:`Budget`."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, finalize=_finalize)
        self.globals["range"] = BoundedRange
        self.globals["lipsum"] = _lipsum
        self.filters = {name: _guarded_filter(name, f) for name, f in self.filters.items()}

    def meter(self, template: nodes.Template) -> nodes.Template:
        metered = _Meter(self).visit(template)
        assert isinstance(metered, nodes.Template)
        return metered

    # Called by compiled template code -----------------------------------
    def bounded_iter(self, iterable: Iterable[Any], body_chars: int) -> Iterator[Any]:
        budget = current_budget()
        for item in iterable:
            budget.iterate(body_chars)
            yield item

    def bounded_concat(self, *parts: Any) -> str:
        budget = current_budget()
        budget.fits(sum(map(_str_len, parts)), "the ~ concatenation")
        texts = [p if isinstance(p, str) else str(p) for p in parts]
        budget.fits(sum(map(len, texts)), "the ~ concatenation")
        joined = "".join(texts)
        budget.spend(len(joined))
        return joined

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = current_budget()
        budget.tick()
        check_binop(budget, operator, left, right)
        result = self.binop_table[operator](left, right)
        budget.charge(result)
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        current_budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        current_budget().tick()
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt: str = value.__self__

        @functools.wraps(wrapped)
        def checked(*args: Any, **kwargs: Any) -> str:
            check_format(current_budget(), fmt, (*args, *kwargs.values()), "{}")
            return wrapped(*args, **kwargs)

        return checked

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.tick()
        args = check_builtin_call(budget, obj, args, kwargs)
        budget.depth += 1
        try:
            if budget.depth > budget.limits.max_depth:
                raise LimitExceededError(
                    f"calls nest more than {budget.limits.max_depth} deep "
                    "(TemplateLimits.max_depth); is a macro calling itself without end?"
                )
            result = super().call(context, obj, *args, **kwargs)
        finally:
            budget.depth -= 1
        budget.charge(result)
        return result
