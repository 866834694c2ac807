"""Estimates of what an operation would build, checked before Python builds it.

One call into C (``'a' * 10**9``, ``'x'.ljust(10**9)``, ``7 ** 7 ** 9``,
``'%0999999999d' % 1``) or a filter looping in Python (``slice(10**9)``,
``wordwrap(1)`` of one long word) cannot be interrupted once started, so
each is sized from its arguments first and refused when the result would
pass a limit.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import string
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flowcore.blocks._template_budget import Budget, LimitExceededError, current_budget, text_len

__all__: list[str] = []


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
    longest = max((text_len(v) for v in values), default=0)
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
        total = sum(text_len(i) for i in items) + max(len(items) - 1, 0) * size
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
            longest = max((text_len(v) for v in table.values() if v is not None), default=1)
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
    # Lengths, not text sizes: these run on every operator (a list grown in a
    # loop would be walked each time). A list of many references to one long
    # string is cheap to hold; turning it into text is what is checked, where
    # that happens (output, ~, join, format, the filters that stringify).
    elif op == "*":
        seq, times = (left, right) if isinstance(left, _SEQUENCES) else (right, left)
        if isinstance(seq, _SEQUENCES) and isinstance(times, int) and times > 0:
            budget.fits(len(seq) * times, "the repeated sequence")
    elif op == "+" and isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
        budget.fits(len(left) + len(right), "the joined sequence")
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
    size = text_len(value)
    if name in _STRINGIFYING:
        budget.fits(size, f"{name}()'s input as text")
        value = value if isinstance(value, str) else str(value)
    if name == "center":
        width = _arg(bound, "width", 80)
        if isinstance(width, int):
            budget.fits(width, "center()'s width")
    elif name == "indent":
        width = _arg(bound, "width", 4)
        pad = width if isinstance(width, int) else text_len(width)
        lines = value.count("\n") + 1
        budget.fits(size + lines * max(pad, 0), "indent()'s result")
    elif name == "wordwrap":
        width = _arg(bound, "width", 79)
        wrap = _arg(bound, "wrapstring", None)
        wrap_len = text_len(wrap) if wrap is not None else 1
        if isinstance(width, int) and width > 0:
            breaks = size // width + value.count("\n") + 1
            budget.fits(size + breaks * wrap_len, "wordwrap()'s result")
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
        total = sum(text_len(i) for i in items) + max(len(items) - 1, 0) * text_len(sep)
        if _arg(bound, "attribute", None) is None:
            budget.fits(total, "join()'s result")
        args = tuple(items if a is value else a for a in args)
    elif name == "replace":
        old, new = _arg(bound, "old", ""), _arg(bound, "new", "")
        count = _arg(bound, "count", None)
        hits = value.count(str(old)) if old else size + 1
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        budget.fits(size + hits * text_len(new), "replace()'s result")
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


def guarded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
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
            budget.fits(text_len(args[value_at]), f"{name}()'s input as text")
        result = func(*args, **kwargs)
        budget.charge(result)
        return result

    return run
