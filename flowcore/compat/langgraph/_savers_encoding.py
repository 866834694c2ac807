"""Encoding each chat message once, though a saver stores it twice or more.

A message a node returns is stored in its task's pending write, again in
the checkpoint's tail of the messages list, and again whenever that list is
stored whole (see :mod:`~flowcore.compat.langgraph._savers_layout`).
Flowcore's JSON serializer encodes a pydantic model through Python-level
steps, so each of those copies cost as much as the rest of its record.
:class:`ReusingSerializer` encodes a message once and splices those bytes
into every record that holds it, byte for byte what the plain serializer
writes there.

Why reused bytes cannot be stale: they are keyed by what decides them, not
by the object. The key is the message's class and the ``marshal`` bytes of
its field and extra dicts, taken only when those hold nothing but exact
builtin data (``str``, ``int``, ``float``, ``bool``, ``None``, ``bytes``,
and dicts, lists and tuples of them), on which ``marshal`` tells apart
every value the serializer writes differently (``1``, ``1.0`` and
``True``; ``-0.0`` and ``0.0``; a list and a tuple). A message changed in
place since it was encoded has another key, so it is encoded again. Only
flowcore's own message classes are reused, whose pydantic dump is a
function of those dicts (no custom serializers); anything else is encoded
as usual.

How bytes are spliced: a record that is plain JSON apart from reusable
messages is walked once by the plain serializer's check (which asks about
each message) and handed to the C JSON encoder as it is; the encoder's
``default`` hook, called only for objects that are not JSON types, writes
a placeholder string holding a random token for each message, and each
placeholder is then swapped for the message's bytes. Any other record has
the messages under its ``"writes"`` replaced by placeholders in a copy,
which the wrapped serializer encodes (tagging what needs tags). The token
is drawn per serializer and never stored; if the encoded record holds it
anywhere else (a value that happens to contain it), the record is encoded
plainly instead. A message is encoded as if it sat :data:`SPLICE_DEPTH`
containers deep, and reused only that deep or shallower, so the
serializer's nesting limit refuses exactly what it refused before.

A store that encodes a batch of records in one go calls
:meth:`ReusingSerializer.dumps_many`: within that one call nothing can
change a message between two records, so a message object met again has
the bytes found the first time without its content being read again.
"""

from __future__ import annotations

import marshal
import secrets
from collections.abc import Sequence
from typing import Any

from flowcore.checkpoint import JsonSerializer, Serializer
from flowcore.checkpoint.plain_json import encoder_with, is_plain_json_or, to_json
from flowcore.compat.langgraph import _messages
from flowcore.compat.langgraph._local_classes import dumps_with_local_fields
from flowcore.compat.langgraph._messages import BaseMessage
from flowcore.errors import SerializationError

__all__ = ["MAX_REUSED_BYTES", "SPLICE_DEPTH", "ReusingSerializer", "reusing"]

SPLICE_DEPTH = 8
"""How many containers deep a reused message may sit in a record.

A pending write holds its messages 3 or 4 deep, a checkpoint record 5 or
6 (in a whole list) or 7 (in a tail).
"""

MAX_REUSED_BYTES = 8 * 1024 * 1024
"""Bytes of encoded messages (and their keys) a serializer keeps for reuse.

The oldest are dropped first; a message bigger than a sixteenth of this
is never kept.
"""

# Flowcore's own message classes: plain pydantic models, dumped field by field.
_REUSED: frozenset[type] = frozenset(
    kind
    for kind in vars(_messages).values()
    if isinstance(kind, type)
    and issubclass(kind, BaseMessage)
    and not kind.__pydantic_decorators__.field_serializers
    and not kind.__pydantic_decorators__.model_serializers
    and not kind.__pydantic_decorators__.computed_fields
)
_EXACT = frozenset({str, int, float, bool, type(None), bytes})
_EMPTY = frozenset({dict, list, tuple})
_WRITES = "writes"
# Deeper field values are not worth the walk: no chat message nests so deep.
_MAX_DEPTH = 32


def reusing(serializer: Serializer | None) -> Serializer | None:
    """``serializer`` wrapped in a :class:`ReusingSerializer` where that is exact, else itself.

    Only flowcore's default JSON serializer without a redactor is wrapped
    (``None`` stands for it): other serializers may encode a message
    differently in different places.

    Example:
        >>> type(reusing(None)).__name__
        'ReusingSerializer'
    """
    if serializer is None:
        return ReusingSerializer(JsonSerializer())
    if type(serializer) is JsonSerializer and serializer.redactor is None:
        return ReusingSerializer(serializer)
    return serializer


class ReusingSerializer:
    """A JSON serializer that encodes each chat message once and reuses its bytes.

    What it writes is byte for byte what ``inner`` writes; see the module
    docstring for why.

    Args:
        inner: Flowcore's JSON serializer, without a redactor.
        max_bytes: Encoded bytes kept for reuse (see :data:`MAX_REUSED_BYTES`).

    Example:
        >>> from flowcore.compat.langgraph import AIMessage
        >>> s = ReusingSerializer(JsonSerializer())
        >>> row = {"writes": [{"value": [AIMessage("hi", id="1")]}]}
        >>> s.dumps(row) == JsonSerializer().dumps(row)
        True
    """

    __slots__ = ("_fragments", "_heads", "_kept", "_max", "_quoted", "_token", "inner")

    def __init__(self, inner: JsonSerializer, *, max_bytes: int = MAX_REUSED_BYTES) -> None:
        self.inner = inner
        self._max = max_bytes
        # Random, so no stored text holds it in practice (and if one does, the count of
        # placeholders found is off and the record is encoded plainly). ASCII: a
        # character outside Latin-1 would make the C encoder build the whole record
        # as wider text, which costs more than the rest of the splice.
        self._token = f"fc-splice-{secrets.token_hex(16)}:"
        self._quoted = b'"' + self._token.encode()
        self._fragments: dict[tuple[type, bytes], bytes] = {}
        self._kept = 0
        # Per message class: the bytes its encoding starts with (b"": encode it whole).
        self._heads: dict[type, bytes] = {}

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        """Encode ``value`` as ``inner`` does, reusing the bytes of the messages in it.

        Example:
            >>> ReusingSerializer(JsonSerializer()).dumps({"writes": []})
            b'{"writes":[]}'
        """
        try:
            return self._dumps(value, path, None)
        except SerializationError as refused:
            # LangGraph stores an object of a class defined in a function as its fields.
            return dumps_with_local_fields(self, value, path, refused)  # type: ignore[no-any-return]

    def dumps_many(self, values: Sequence[tuple[Any, str]]) -> list[bytes]:
        """:meth:`dumps` of each ``(value, path)``, looking at each message object once.

        A store that encodes a batch of records in one go (SQLite's
        ``put_many``) calls this: nothing runs between the records' encodings
        that could change a message, so a message object met again in a later
        record (a task's write, then the checkpoint's tail, then a whole copy
        of the list) has the bytes found the first time, without its content
        being read again. Each call starts afresh.

        Example:
            >>> from flowcore.compat.langgraph import AIMessage
            >>> s, m = ReusingSerializer(JsonSerializer()), AIMessage("hi", id="1")
            >>> rows = [({"writes": [{"value": [m]}]}, "w"), ({"tail": [m]}, "c")]
            >>> s.dumps_many(rows) == [JsonSerializer().dumps(row) for row, _ in rows]
            True
        """
        seen: dict[int, tuple[Any, bytes | None]] = {}
        try:
            return [self._dumps(value, path, seen) for value, path in values]
        except SerializationError:
            # One by one: a record holding local-class objects is stored as their fields
            # (see dumps); any other refusal is raised again by the record it comes from.
            return [self.dumps(value, path=path) for value, path in values]

    def _dumps(
        self, value: Any, path: str, seen: dict[int, tuple[Any, bytes | None]] | None
    ) -> bytes:
        # A redactor set on the serializer since must scrub messages too: no reuse then.
        if type(value) is dict and self.inner.redactor is None:
            encoded = self._in_one_pass(value, seen)
            if encoded is not None:
                return encoded
            writes = value.get(_WRITES)
            if type(writes) is list and writes:
                fragments: list[bytes] = []
                marked = self._marked(writes, fragments)
                if fragments:
                    spliced = self._spliced({**value, _WRITES: marked}, path, fragments)
                    if spliced is not None:
                        return spliced
        return self.inner.dumps(value, path=path)

    def loads(self, data: bytes) -> Any:
        """Decode what :meth:`dumps` wrote (as ``inner`` does).

        Example:
            >>> ReusingSerializer(JsonSerializer()).loads(b'[1]')
            [1]
        """
        return self.inner.loads(data)

    def forget(self) -> None:
        """Drop every kept encoding (they stay correct; this only frees memory).

        Example:
            >>> ReusingSerializer(JsonSerializer()).forget()
        """
        self._fragments.clear()
        self._kept = 0

    # ------------------------------------------------------------------ the one-pass path

    def _in_one_pass(
        self, value: dict[str, Any], seen: dict[int, tuple[Any, bytes | None]] | None
    ) -> bytes | None:
        """``value`` encoded in one walk and one C encoder pass; None: take the other path.

        The record is walked once, as the plain serializer's check walks it
        (:func:`~flowcore.checkpoint.plain_json.is_plain_json_or`), and each
        reusable message found no deeper than :data:`SPLICE_DEPTH` has its bytes
        looked up on the way. If everything else is plain JSON, the record goes
        to the C encoder as it is, whose ``default`` hook (called only for
        objects that are not JSON types: here the messages) writes a placeholder
        for each; the placeholders are then swapped for the bytes. No copy of the
        record is made. Anything else (a tuple, a date, an unknown message, a
        lone surrogate, a huge int, a NaN) answers None, and the record takes
        the path that copies it with placeholders, or the plain serializer,
        which writes or refuses it exactly as before. ``seen``: the bytes of
        the message objects met earlier in the same :meth:`dumps_many` call.
        """
        found: dict[int, bytes] = {}
        fragment_of = self._fragment

        def reusable(obj: Any, depth: int) -> bool:
            if depth > SPLICE_DEPTH or type(obj) not in _REUSED:
                return False
            if seen is None:
                fragment = fragment_of(obj)
            else:
                met = seen.get(id(obj))
                if met is not None and met[0] is obj:
                    fragment = met[1]
                else:
                    fragment = fragment_of(obj)
                    seen[id(obj)] = (obj, fragment)
            if fragment is None:
                return False
            found[id(obj)] = fragment
            return True

        if not is_plain_json_or(value, 0, reusable):
            return None
        if not found:
            try:
                return to_json(value).encode()
            except ValueError:  # an int too long to write, or a lone surrogate
                return None
        token = self._token
        placed: list[int] = []

        def placeholder(obj: Any) -> str:
            key = id(obj)
            if key not in found:  # cannot happen after the walk; refuse rather than guess
                raise TypeError(f"unexpected {type(obj).__name__}")
            placed.append(key)
            return f"{token}{key}"

        encode = encoder_with(placeholder)
        if encode is None:
            return None
        try:
            encoded = encode(value).encode()
        except (TypeError, ValueError):
            return None
        pieces = encoded.split(self._quoted)
        if len(pieces) != len(placed) + 1:
            return None  # the token also sits in some value or key: encode plainly
        out = [pieces[0]]
        for key, piece in zip(placed, pieces[1:], strict=True):
            end = piece.find(b'"')
            if piece[:end] != str(key).encode():
                return None
            out.append(found[key])
            out.append(piece[end + 1 :])
        return b"".join(out)

    # ------------------------------------------------------------------ placing messages

    def _marked(self, writes: list[Any], fragments: list[bytes]) -> list[Any]:
        """A record's ``writes`` with reusable messages replaced by placeholders, their
        bytes appended to ``fragments``; ``writes`` itself if it holds none.

        Only where savers put values: a pending write's entries (``{..., "value": v}``,
        2 deep) and a checkpoint's groups of ``[name, {channel: v}]`` pairs (``v`` 5
        deep), ``v`` being a message, a list of them, or a tail (``{"items": [...]}``).
        A message anywhere else is encoded as usual.
        """
        out: list[Any] | None = None
        for at, item in enumerate(writes):
            kind = type(item)
            new: Any = item
            if kind is dict:
                value = item.get("value")
                marked = self._value(value, 3, fragments)
                if marked is not value:
                    new = {**item, "value": marked}
            elif kind is list:
                new = self._group(item, fragments)
            if new is not item:
                if out is None:
                    out = list(writes)
                out[at] = new
        return writes if out is None else out

    def _group(self, group: list[Any], fragments: list[bytes]) -> list[Any]:
        """A checkpoint's group of ``[name, {channel: value}]`` pairs, marked."""
        out: list[Any] | None = None
        for at, pair in enumerate(group):
            if type(pair) is not list or len(pair) != 2 or type(pair[1]) is not dict:
                continue
            values: dict[str, Any] = pair[1]
            marked: dict[str, Any] | None = None
            for channel, value in values.items():
                kind = type(value)
                if kind is dict and type(value.get("items")) is list:  # a tail
                    items = value["items"]
                    new_items = self._value(items, 6, fragments)
                    new: Any = value if new_items is items else {**value, "items": new_items}
                elif kind is list or kind in _REUSED:
                    new = self._value(value, 5, fragments)
                else:
                    continue
                if new is not value:
                    if marked is None:
                        marked = dict(values)
                    marked[channel] = new
            if marked is not None:
                if out is None:
                    out = list(group)
                out[at] = [pair[0], marked]
        return group if out is None else out

    def _value(self, value: Any, depth: int, fragments: list[bytes]) -> Any:
        """``value`` (``depth`` deep) marked if it is a message or a list holding some."""
        kind = type(value)
        if kind in _REUSED:
            return self._placeholder(value, fragments)
        if kind is not list or depth >= SPLICE_DEPTH:
            return value
        out: list[Any] | None = None
        for at, item in enumerate(value):
            if type(item) in _REUSED:
                new = self._placeholder(item, fragments)
                if new is not item:
                    if out is None:
                        out = list(value)
                    out[at] = new
        return value if out is None else out

    def _placeholder(self, message: BaseMessage, fragments: list[bytes]) -> Any:
        """The placeholder standing for ``message``'s bytes (``message`` if it has none)."""
        fragment = self._fragment(message)
        if fragment is None:
            return message
        fragments.append(fragment)
        return f"{self._token}{len(fragments) - 1}"

    def _spliced(self, marked: Any, path: str, fragments: list[bytes]) -> bytes | None:
        """``marked`` encoded with each placeholder swapped for its bytes; None if it cannot be."""
        try:
            encoded = self.inner.dumps(marked, path=path)
        except Exception:
            return None  # the plain encoding raises what it should, with its own path
        pieces = encoded.split(self._quoted)
        if len(pieces) != len(fragments) + 1:
            return None  # the token also sits in some value: encode plainly
        out = [pieces[0]]
        for piece in pieces[1:]:
            end = piece.find(b'"')
            try:
                out.append(fragments[int(piece[:end])])
            except (ValueError, IndexError):  # not a placeholder after all
                return None
            out.append(piece[end + 1 :])
        return b"".join(out)

    # ------------------------------------------------------------------ encoding a message once

    def _fragment(self, message: BaseMessage) -> bytes | None:
        """The bytes ``inner`` writes for ``message``, reused when its content is known."""
        fields = message.__dict__
        extra = message.__pydantic_extra__
        # An empty extra dict (most messages') is exact: no walk for it.
        if not _exact(fields, 0) or (extra and not _exact(extra, 0)):
            return None
        try:
            key = (type(message), marshal.dumps((fields, extra), 2))
        except ValueError:  # nested past marshal's own limit
            return None
        fragment = self._fragments.get(key)
        if fragment is not None:
            return fragment
        try:
            fragment = self._encoded(message)
        except Exception:
            return None  # unstorable as it is: the plain encoding says why
        size = len(fragment) + len(key[1])
        if size <= self._max // 16:
            self._fragments[key] = fragment
            self._kept += size
            try:
                while self._kept > self._max:
                    old_key, old = next(iter(self._fragments.items()))
                    del self._fragments[old_key]
                    self._kept -= len(old) + len(old_key[1])
            except (RuntimeError, KeyError, StopIteration):
                self.forget()  # another thread's store call evicted too (a migration)
        return fragment

    def _encoded(self, message: BaseMessage) -> bytes:
        """``message`` as ``inner`` writes it :data:`SPLICE_DEPTH` containers deep.

        The serializer writes a model as ``{"__fc__": "model", "cls": ..., "v": ...}``
        around its pydantic dump, and reaches the dump through Python-level steps
        that build an error path per field. Writing the head once per class and
        the dump (plain data here) as the serializer writes plain data gives the
        same bytes at a fraction of the cost; the first message of each class is
        encoded both ways, and a class whose bytes differ is always encoded whole.
        """
        kind = type(message)
        head = self._heads.get(kind)
        if head is None:
            head = self._heads[kind] = self._head(message)
        if head:
            return head + _nested_dumps(self.inner, message.model_dump(mode="python"), 1) + b"}"
        return _nested_dumps(self.inner, message, 0)

    def _head(self, message: BaseMessage) -> bytes:
        """What every encoding of ``message``'s class starts with, or b"" if it is not so.

        Checked on a copy of ``message`` (so the message itself is dumped once),
        encoded both ways.
        """
        kind = type(message)
        ref = self.inner.dumps(f"{kind.__module__}:{kind.__qualname__}")
        head = b'{"__fc__":"model","cls":' + ref + b',"v":'
        probe = message.model_copy(update={"id": "flowcore-encoding-probe"})
        try:
            whole = _nested_dumps(self.inner, probe, 0)
            dump = probe.model_dump(mode="python")
            composed = head + _nested_dumps(self.inner, dump, 1) + b"}"
        except Exception:
            return b""
        return head if composed == whole else b""


def _nested_dumps(serializer: Serializer, value: Any, deeper: int) -> bytes:
    """``value`` as ``serializer`` writes it ``SPLICE_DEPTH + deeper`` containers deep.

    The serializer's nesting limit counts from where a value sits, so it is
    encoded that deep (inside lists, stripped again) to be refused exactly
    where it would be refused in a record.
    """
    depth = SPLICE_DEPTH + deeper
    if type(serializer) is JsonSerializer:
        # Flowcore's own serializer encodes at a depth directly: no lists to wrap and strip.
        return serializer.dumps_nested(value, depth)
    for _ in range(depth):
        value = [value]
    return serializer.dumps(value)[depth:-depth]


def _exact(value: Any, depth: int) -> bool:
    """True if ``value`` holds only exact builtin data, which ``marshal`` tells apart exactly.

    Past :data:`_MAX_DEPTH` levels it says False: such a message is encoded as usual.
    """
    kind = type(value)
    if kind is dict or kind is tuple or kind is list:
        if depth >= _MAX_DEPTH:
            return False
        depth += 1
        items = value.items() if kind is dict else enumerate(value)
        for k, v in items:
            if type(k) not in _EXACT:
                return False
            # Empty containers (most of a message's fields) need no call.
            if type(v) not in _EXACT and (v or type(v) not in _EMPTY) and not _exact(v, depth):
                return False
        return True
    return kind in _EXACT
