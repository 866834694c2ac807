"""The two virtual nodes every graph has: where a run enters and where it ends."""

from __future__ import annotations

from typing import Final

__all__ = ["END", "RESERVED_NAMES", "START"]

START: Final = "__start__"
"""Virtual entry node: ``add_edge(START, "first")`` says where a run begins."""

END: Final = "__end__"
"""Virtual exit node: an edge or a route to END ends that branch."""

RESERVED_NAMES: Final = frozenset({START, END, "input", "state", "memory", "user"})
"""Names no node may take: the virtual nodes and the ``<<ref>>`` namespaces."""
