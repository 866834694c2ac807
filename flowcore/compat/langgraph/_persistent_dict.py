"""``PersistentDict``: a dict kept in memory and written to one file on ``sync`` or ``close``.

LangGraph users hand it to ``InMemorySaver(factory=partial(PersistentDict,
filename=...))`` so that a saver's threads outlive the process (LangGraph's
own test fixture does). It behaves as LangGraph documents its
``PersistentDict``: a ``defaultdict`` (so ``PersistentDict(list, filename=...)``
works), nothing touches the disk until :meth:`PersistentDict.sync` (or
:meth:`~PersistentDict.close`, or leaving a ``with`` block), the file is a
pickle of the plain dict, and :meth:`~PersistentDict.load` merges a file's
contents back in. A write goes to a sibling temporary file first and then
replaces the old one, so a crash mid-write leaves the previous file whole.

The file is a pickle: load only files this process (or one you trust) wrote.
"""

from __future__ import annotations

import os
import pickle
from collections import defaultdict
from types import TracebackType
from typing import Any, Self

__all__ = ["PersistentDict"]

# Protocol 4 holds every value a saver stores (bytes, tuples, slotted objects) and
# reads back on every Python this package supports.
_PROTOCOL = 4


class PersistentDict(defaultdict[Any, Any]):
    """A ``defaultdict`` that writes itself to ``filename`` on :meth:`sync` or :meth:`close`.

    Args:
        *args: What ``defaultdict`` takes: a default factory, then initial items.
        filename: The file :meth:`sync` writes and :meth:`load` reads.
        **kwargs: Initial items, as for ``dict``.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "threads.pickle")
        >>> with PersistentDict(list, filename=path) as data:
        ...     data["t1"].append("c1")
        >>> len(data)  # closing wrote the file, then emptied the dict
        0
        >>> again = PersistentDict(filename=path)
        >>> again.load()
        >>> dict(again)
        {'t1': ['c1']}
    """

    def __init__(self, *args: Any, filename: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filename = filename

    def sync(self) -> None:
        """Write the items to :attr:`filename` (replacing what it held), keeping them in memory.

        Example:
            >>> # data.sync()
        """
        temporary = self.filename + ".tmp"
        try:
            with open(temporary, "wb") as out:
                pickle.dump(dict(self), out, _PROTOCOL)
        except BaseException:
            # An unpicklable value: the old file stays as it was, with no stray twin.
            if os.path.exists(temporary):
                os.remove(temporary)
            raise
        os.replace(temporary, self.filename)

    def close(self) -> None:
        """:meth:`sync`, then empty the dict (what it held is in the file).

        Example:
            >>> # data.close()
        """
        self.sync()
        self.clear()

    def load(self) -> None:
        """Merge the items stored in :attr:`filename` into this dict; an empty file adds none.

        Example:
            >>> # data.load()
        """
        with open(self.filename, "rb") as source:
            try:
                stored = pickle.load(source)
            except EOFError:
                return  # a file made for us (e.g. by mkstemp) but never written
        self.update(stored)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __reduce__(self) -> Any:
        # defaultdict's own reduce drops the keyword-only filename.
        return (_rebuild, (self.default_factory, self.filename, dict(self)))


def _rebuild(factory: Any, filename: str, items: dict[Any, Any]) -> PersistentDict:
    made = PersistentDict(factory, filename=filename)
    made.update(items)
    return made
