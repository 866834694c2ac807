"""``<<namespace.path>>`` references: wire upstream outputs into node inputs.

Compile a node's ``inputs`` once with :meth:`ValueTemplate.compile`, then call
:meth:`ValueTemplate.resolve` with the namespaces (node outputs, ``input``,
``state``, ``memory``, ``user``) on every execution. A string that is exactly
one reference yields the raw value; mixed text interpolates; ``\\<<`` is a
literal ``<<``.
"""

from .resolver import (
    Reference,
    ValueTemplate,
    extract_references,
    lookup_path,
    resolve_references,
)

__all__ = [
    "Reference",
    "ValueTemplate",
    "extract_references",
    "lookup_path",
    "resolve_references",
]
