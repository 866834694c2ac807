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
The budget lives in :mod:`._template_budget`, the estimates in
:mod:`._template_costs`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from jinja2 import StrictUndefined, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

from flowcore.blocks._template_budget import LimitExceededError, current_budget, text_len
from flowcore.blocks._template_costs import (
    check_binop,
    check_builtin_call,
    check_format,
    guarded_filter,
)

if TYPE_CHECKING:
    from jinja2.runtime import Context

__all__: list[str] = []

# Python's compiler warns about constructs such as ``1[0]`` in the code Jinja
# generates for a template; for an untrusted template that is noise on the
# host's stderr (the template fails when it runs instead). Only warnings
# attributed to Jinja's "<template>" code are silenced.
warnings.filterwarnings("ignore", category=SyntaxWarning, module="<template>$")


class RefusedTemplateError(Exception):
    """The template uses a construct prompts may not use (include, import, extends)."""

    def __init__(self, message: str, lineno: int) -> None:
        super().__init__(message)
        self.lineno = lineno


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
        budget.fits(text_len(value), "an output expression")
        text = str(value)
    budget.fits(len(text), "an output expression")
    budget.spend(len(text))
    return text


#: How a value becomes prompt text, charged to the current render (both template formats).
finalize_output = _finalize


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
        self.filters = {name: guarded_filter(name, f) for name, f in self.filters.items()}

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
        budget.fits(sum(map(text_len, parts)), "the ~ concatenation")
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
