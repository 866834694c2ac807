"""Private, exact copies of stored values for the in-memory store.

The in-memory store keeps values serialized so that what a caller gets back
is never the object it saved, and so that a value the SQLite store would
refuse is refused here too. JSON does both, but costs more than the rest of
an in-memory checkpoint put together. The bytes never leave the process, so
any exact encoding will do: values made only of exact builtin types
(``None``, bools, ints, floats, strings, bytes, bytearrays, and dicts,
lists, tuples, sets and frozensets of them) are pickled by the C pickler,
which handles exactly those types itself. Every other object (a subclass,
an enum, a model, a date, anything JSON could not hold) reaches the
pickler's ``reducer_override`` hook, which refuses it: such values go through
the JSON serializer instead, so they are tagged, or refused, exactly as
SQLite would.

The pickler runs in "fast" mode (no memo): like JSON, an object that
appears twice in a value comes back as two copies, and a value that
contains itself is refused.
"""

from __future__ import annotations

import io
import pickle
import threading
from typing import Any

from flowcore.checkpoint.serde import JsonSerializer

__all__ = ["CopyCodec"]

# Protocol 4, not 5: protocol 5 would also take PickleBuffer objects, which
# JSON refuses. Every pickle starts with the PROTO opcode, 0x80, a byte no JSON
# document starts with: that is how loads tells the two apart.
_PROTOCOL = 4
_PICKLED = b"\x80"[0]


class _NotBuiltin(Exception):
    """The value holds an object the C pickler would have to reduce."""


class _BuiltinsOnly(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # Called for every object that is not an exact builtin scalar or container.
        raise _NotBuiltin


def _pickler(buffer: io.BytesIO) -> pickle.Pickler:
    pickler = _BuiltinsOnly(buffer, _PROTOCOL)
    pickler.fast = True  # no memo: nothing is shared between values or dumps
    return pickler


class CopyCodec:
    """The in-memory store's default serializer: pickle where it is exact, JSON otherwise.

    Example:
        >>> codec = CopyCodec()
        >>> codec.loads(codec.dumps({"pair": (1, 2), "ids": {3}}))
        {'pair': (1, 2), 'ids': {3}}
    """

    def __init__(self) -> None:
        self._json = JsonSerializer()
        self._buffer = io.BytesIO()
        self._pickler = _pickler(self._buffer)
        # The pickler writes into one buffer: a second thread dumping at the same
        # time takes a pickler of its own instead of waiting.
        self._busy = threading.Lock()

    def dumps(self, value: Any, *, path: str = "") -> bytes:
        """Encode ``value``; ``path`` names it in the serializer's error messages."""
        if not self._busy.acquire(blocking=False):
            buffer = io.BytesIO()
            return self._dump(_pickler(buffer), buffer, value, path)
        try:
            buffer = self._buffer
            buffer.seek(0)
            buffer.truncate()
            # _dump inlined: this runs for every record an in-memory saver keeps.
            try:
                self._pickler.dump(value)
            except Exception:
                return self._json.dumps(value, path=path)
            return buffer.getvalue()
        finally:
            self._busy.release()

    def _dump(self, pickler: pickle.Pickler, buffer: io.BytesIO, value: Any, path: str) -> bytes:
        try:
            pickler.dump(value)
        except Exception:
            # Not made of builtins only (or cyclic): the serializer decides,
            # and names what it cannot store.
            return self._json.dumps(value, path=path)
        return buffer.getvalue()

    def loads(self, data: bytes) -> Any:
        """Decode what :meth:`dumps` produced."""
        if data and data[0] == _PICKLED:
            return pickle.loads(data)
        return self._json.loads(data)
