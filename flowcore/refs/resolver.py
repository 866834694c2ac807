"""Compile and resolve ``<<namespace.path>>`` references inside node inputs.

A value is compiled once into a :class:`ValueTemplate`: every string inside it
is split into literal pieces and :class:`Reference` pieces with one regex, so
resolving it per node execution only walks paths and joins strings. Values
without references compile to a static template that hands back the original
object without copying it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from flowcore._shown import shown
from flowcore.errors import ReferenceResolutionError, ReferenceSyntaxError

__all__ = [
    "Reference",
    "ValueTemplate",
    "extract_references",
    "lookup_path",
    "resolve_references",
]

_SEGMENT: Final = r"[A-Za-z0-9_-]+"
# One pass over a string: an escaped ``\<<``, a valid reference, or a candidate
# ``<<...>>`` (up to the next ``>>`` on the line, without another ``<<``) that
# did not match as valid and is therefore a syntax error.
_TOKEN_RE: Final = re.compile(
    rf"""
      (?P<escape>\\<<)
    | <<[ \t]*(?P<path>{_SEGMENT}(?:\.{_SEGMENT})*)[ \t]*>>
    | <<(?P<bad>(?:(?!<<)[^\r\n])*?)>>
    """,
    re.VERBOSE,
)
_SEGMENT_CHARS: Final = frozenset(string.ascii_letters + string.digits + "_-")
_MAX_LISTED: Final = 10
_MISSING: Final = object()
# Deeper inputs are refused when compiled rather than left to hit Python's recursion limit.
_MAX_DEPTH: Final = 100
# An index of more digits than this addresses nothing that fits in memory.
_MAX_INDEX_DIGITS: Final = 18


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``<<namespace.path>>`` reference as written in a value.

    Attributes:
        namespace: The first segment: a node id or a namespace such as ``input``.
        path: The segments after the namespace (may be empty).
        text: The original reference text, brackets and whitespace included.

    Example:
        >>> ref = Reference("n1", ("items", "0"), "<<n1.items.0>>")
        >>> ref.dotted()
        'n1.items.0'
    """

    namespace: str
    path: tuple[str, ...]
    text: str

    def dotted(self) -> str:
        """Return the namespace and path joined with ``.``, without brackets.

        Example:
            >>> Reference("state", (), "<< state >>").dotted()
            'state'
        """
        return ".".join((self.namespace, *self.path))


_Part = str | Reference


# Compiled plans. Each builds the resolved form of one (sub)value.
@dataclass(frozen=True, slots=True)
class _Const:
    value: object

    def resolve(self, namespaces: Mapping[str, object], node: str | None) -> object:
        return self.value


@dataclass(frozen=True, slots=True)
class _Whole:
    ref: Reference

    def resolve(self, namespaces: Mapping[str, object], node: str | None) -> object:
        return _resolve_reference(self.ref, namespaces, node)


@dataclass(frozen=True, slots=True)
class _Interpolate:
    parts: tuple[_Part, ...]

    def resolve(self, namespaces: Mapping[str, object], node: str | None) -> object:
        out: list[str] = []
        for part in self.parts:
            got = part if isinstance(part, str) else _resolve_reference(part, namespaces, node)
            out.append(got if isinstance(got, str) else _to_text(got))
        return "".join(out)


@dataclass(frozen=True, slots=True)
class _Dict:
    items: tuple[tuple[object, _Plan], ...]

    def resolve(self, namespaces: Mapping[str, object], node: str | None) -> object:
        return {key: plan.resolve(namespaces, node) for key, plan in self.items}


@dataclass(frozen=True, slots=True)
class _Sequence:
    build: Callable[[list[object]], object]
    plans: tuple[_Plan, ...]

    def resolve(self, namespaces: Mapping[str, object], node: str | None) -> object:
        return self.build([plan.resolve(namespaces, node) for plan in self.plans])


_Plan = _Const | _Whole | _Interpolate | _Dict | _Sequence


class ValueTemplate:
    """An immutable, compiled value whose references can be resolved many times.

    Strings, dict values (keys are left alone), lists and tuples are searched
    for references; any other value is kept as is. A string that is exactly
    one reference resolves to the raw value; mixed text resolves to a string.
    A static template (no references) resolves to the original object itself,
    or to one unescaped copy built at compile time if it held ``\\<<``.
    ``ValueTemplate(value)`` is the same as ``ValueTemplate.compile(value)``.

    Example:
        >>> tpl = ValueTemplate.compile({"q": "<<input.question>>", "n": 3})
        >>> tpl.resolve({"input": {"question": "why?"}})
        {'q': 'why?', 'n': 3}
    """

    __slots__ = ("_constant", "_plan", "_references", "_static", "_value")

    _constant: object
    _plan: _Plan
    _references: tuple[Reference, ...]
    _static: bool
    _value: object

    def __init__(self, value: object) -> None:
        refs: list[Reference] = []
        plan = _compile(value, refs, ())
        for name, attr in [
            ("_plan", plan),
            ("_references", tuple(refs)),
            ("_static", isinstance(plan, _Const)),
            ("_constant", plan.value if isinstance(plan, _Const) else None),
            ("_value", value),
        ]:
            object.__setattr__(self, name, attr)

    @classmethod
    def compile(cls, value: object) -> ValueTemplate:
        """Parse every string inside ``value`` into a reusable template.

        Raises:
            ReferenceSyntaxError: A ``<<...>>`` in ``value`` is malformed.

        Example:
            >>> ValueTemplate.compile(["<<n1.x>>", "<<n2>>"]).references[1].namespace
            'n2'
        """
        return cls(value)

    @property
    def references(self) -> tuple[Reference, ...]:
        """Every reference in document order (depth-first, dict insertion order).

        Example:
            >>> [r.dotted() for r in ValueTemplate.compile({"a": "<<x.y>> <<z>>"}).references]
            ['x.y', 'z']
        """
        return self._references

    @property
    def is_static(self) -> bool:
        """Whether the value holds no references, so resolving it is a no-op.

        Example:
            >>> ValueTemplate.compile({"a": [1, "two"]}).is_static
            True
        """
        return self._static

    def resolve(self, namespaces: Mapping[str, object], *, node: str | None = None) -> object:
        """Build the value with every reference replaced by what it points to.

        Args:
            namespaces: Each namespace (node id, ``input``, ``state``, ...) to its root.
            node: The node being resolved for; named in error messages.

        Raises:
            ReferenceResolutionError: A namespace or path segment does not exist.

        Example:
            >>> ValueTemplate.compile("n=<<n1.n>>").resolve({"n1": {"n": 2}})
            'n=2'
        """
        if self._static:
            return self._constant
        return self._plan.resolve(namespaces, node)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({shown(self._value)})"


def extract_references(value: object) -> tuple[Reference, ...]:
    """Return every reference in ``value`` in document order.

    Raises:
        ReferenceSyntaxError: A ``<<...>>`` in ``value`` is malformed.

    Example:
        >>> [r.namespace for r in extract_references({"a": "<<n1.x>>", "b": ["<<input>>"]})]
        ['n1', 'input']
    """
    return ValueTemplate.compile(value).references


def resolve_references(
    value: object, namespaces: Mapping[str, object], *, node: str | None = None
) -> object:
    """Compile ``value`` and resolve it once (see :class:`ValueTemplate`).

    Raises:
        ReferenceSyntaxError: A ``<<...>>`` in ``value`` is malformed.
        ReferenceResolutionError: A reference cannot be resolved.

    Example:
        >>> resolve_references("<<n1.items.-1>>", {"n1": {"items": [1, 2, 3]}})
        3
    """
    return ValueTemplate.compile(value).resolve(namespaces, node=node)


def lookup_path(
    root: object, path: Sequence[str], *, reference: str, node: str | None = None
) -> object:
    """Walk ``path`` from ``root`` one segment at a time.

    Mappings are indexed by key (then by ``int`` key for segments like ``"0"``),
    sequences other than ``str``/``bytes`` by integer index (negative allowed),
    anything else by attribute; ``_``-prefixed attributes are never looked up.

    Args:
        root: The value to start from.
        path: The segments to follow.
        reference: The reference text, for error messages.
        node: The node being resolved for, for error messages.

    Raises:
        ReferenceResolutionError: A segment does not exist in the value reached.

    Example:
        >>> lookup_path({"a": [{"b": 5}]}, ["a", "0", "b"], reference="<<n.a.0.b>>")
        5
    """
    current = root
    for segment in path:
        found: object = _MISSING
        if isinstance(current, (dict, Mapping)):
            found = current.get(segment, _MISSING)
            if found is _MISSING and (index := _as_int(segment)) is not None:
                found = current.get(index, _MISSING)
            if found is _MISSING:
                reason = f"is not a key of the mapping ({_available(current)})"
        elif isinstance(current, (list, tuple)) or (
            isinstance(current, Sequence) and not isinstance(current, (str, bytes, bytearray))
        ):
            index = _as_int(segment)
            if index is not None and -len(current) <= index < len(current):
                found = current[index]
            elif index is None:
                reason = f"is not an integer index into a {type(current).__name__}"
            else:
                reason = f"is out of range for a {type(current).__name__} of length {len(current)}"
        elif segment.startswith("_"):
            reason = "starts with '_' (private attributes are never looked up)"
        else:
            try:
                found = getattr(current, segment, _MISSING)
            except Exception as exc:
                reason = f"of {type(current).__name__} raised {type(exc).__name__}: {exc}"
                raise ReferenceResolutionError(
                    reference, segment=segment, reason=reason, node=node
                ) from exc
            if found is _MISSING:
                reason = _missing_attribute(current)
        if found is _MISSING:
            raise ReferenceResolutionError(reference, segment=segment, reason=reason, node=node)
        current = found
    return current


def _missing_attribute(obj: object) -> str:
    reason = f"is not an attribute of {type(obj).__name__}"
    fields = _public_fields(obj)
    return reason + (f" (available: {_listing(fields)})" if fields else "")


def _public_fields(obj: object) -> list[object]:
    if dataclasses.is_dataclass(obj):
        return [f.name for f in dataclasses.fields(obj)]
    model_fields = getattr(type(obj), "model_fields", None)  # pydantic v2 models
    if isinstance(model_fields, dict):
        return list(model_fields)
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        return [name for name in attrs if not str(name).startswith("_")]
    return []


def _available(mapping: Mapping[Any, object]) -> str:
    return f"available: {_listing(list(mapping))}" if mapping else "the mapping is empty"


def _listing(names: Sequence[object]) -> str:
    # shown() for keys that are not strings: str() of an int of 5000 digits raises.
    listed = sorted(name if isinstance(name, str) else shown(name) for name in names)
    extra = len(listed) - _MAX_LISTED
    text = ", ".join(listed[:_MAX_LISTED])
    return text + (f", ... ({extra} more)" if extra > 0 else "")


def _as_int(segment: str) -> int | None:
    digits = segment[1:] if segment.startswith("-") else segment
    if digits.isascii() and digits.isdigit() and len(digits) <= _MAX_INDEX_DIGITS:
        return int(segment)
    return None


def _resolve_reference(
    ref: Reference, namespaces: Mapping[str, object], node: str | None
) -> object:
    root = namespaces.get(ref.namespace, _MISSING)
    if root is _MISSING:
        known = f"known: {_listing(list(namespaces))}" if namespaces else "none are known"
        reason = f"is not a known node or namespace ({known})"
        raise ReferenceResolutionError(ref.text, segment=ref.namespace, reason=reason, node=node)
    if not ref.path:
        return root
    return lookup_path(root, ref.path, reference=ref.text, node=node)


def _to_text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        # Non-string dict keys, circular or very deep containers, ints too long for text.
        pass
    try:
        return str(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} that cannot be shown as text>"


def _compile(value: object, refs: list[Reference], location: tuple[object, ...]) -> _Plan:
    if len(location) > _MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        where = "".join(f"[{shown(key)}]" for key in location[:5])
        raise ReferenceSyntaxError(
            f"the value at {where}... nests lists and dicts more than {_MAX_DEPTH} levels "
            "deep, too deep to search for <<references>>; flatten it, or pass it as a JSON "
            "string"
        )
    if isinstance(value, str):
        parts = _parse(value, location)
        found = [part for part in parts if isinstance(part, Reference)]
        if not found:
            text = "".join(part for part in parts if isinstance(part, str))
            return _Const(value if text == value else text)
        refs.extend(found)
        if len(parts) == 1:
            return _Whole(found[0])
        return _Interpolate(parts)
    if isinstance(value, dict):
        items = tuple((key, _compile(item, refs, (*location, key))) for key, item in value.items())
        consts = [(key, plan.value) for key, plan in items if isinstance(plan, _Const)]
        if len(consts) < len(items):
            return _Dict(items)
        if all(item is value[key] for key, item in consts):
            return _Const(value)
        return _Const(dict(consts))
    if isinstance(value, (list, tuple)):
        plans = tuple(_compile(item, refs, (*location, i)) for i, item in enumerate(value))
        build = _builder(value)
        values = [plan.value for plan in plans if isinstance(plan, _Const)]
        if len(values) < len(plans):
            return _Sequence(build, plans)
        if all(new is old for new, old in zip(values, value, strict=True)):
            return _Const(value)
        return _Const(build(values))
    return _Const(value)


def _builder(value: list[object] | tuple[object, ...]) -> Callable[[list[object]], object]:
    cls = type(value)
    if cls is list:
        return lambda items: items
    if cls is tuple:
        return tuple
    make = getattr(cls, "_make", None)  # namedtuple
    if callable(make):
        return cast("Callable[[list[object]], object]", make)
    return cls


def _parse(text: str, location: tuple[object, ...]) -> tuple[_Part, ...]:
    if "<<" not in text:
        return (text,)
    parts: list[_Part] = []
    literal: list[str] = []
    pos = 0
    for match in _TOKEN_RE.finditer(text):
        literal.append(text[pos : match.start()])
        pos = match.end()
        if match.group("escape") is not None:
            literal.append("<<")
            continue
        path = match.group("path")
        if path is None:
            raise ReferenceSyntaxError(
                _syntax_message(match.group(0), match.group("bad"), location)
            )
        if chunk := "".join(literal):
            parts.append(chunk)
        literal.clear()
        namespace, *rest = path.split(".")
        parts.append(Reference(namespace, tuple(rest), match.group(0)))
    literal.append(text[pos:])
    if chunk := "".join(literal):
        parts.append(chunk)
    return tuple(parts)


def _syntax_message(text: str, inner: str, location: tuple[object, ...]) -> str:
    segments = inner.strip(" \t").split(".")
    if segments == [""]:
        why = "the reference is empty"
    elif "" in segments:
        why = "it has an empty path segment (look for a leading, trailing or doubled '.')"
    else:
        bad = next(s for s in segments if not _SEGMENT_CHARS.issuperset(s))
        why = f"segment '{bad}' may only contain letters, digits, '_' and '-'"
        if "[" in bad:
            why += " (index lists with a dot: <<node.items.0>>)"
    where = f" at {''.join(f'[{shown(key)}]' for key in location)}" if location else ""
    return (
        f"malformed reference '{text}'{where}: {why}. Write a reference as "
        "<<namespace.path>> with dot-separated segments, e.g. <<node.field.0>>, "
        "and write \\<< for a literal '<<'."
    )
