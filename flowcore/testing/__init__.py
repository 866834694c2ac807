"""Testing helpers shipped with flowcore: the ``GraphExecutorPort`` conformance kit.

:class:`ExecutorConformance` (in :mod:`flowcore.testing.kit`) is a base
class of pytest tests that any executor implementation must pass; subclass
it and provide an ``executor`` fixture::

    import pytest
    from flowcore.testing import ExecutorConformance

    class TestMyExecutor(ExecutorConformance):
        @pytest.fixture
        def executor(self):
            return MyExecutor()

The kit runs the graphs of :mod:`flowcore.testing.graphs` (also rebuildable
by name in another process); override the ``kit_targets`` fixture to run
your own equivalents. Importing this package does not import pytest: the
kit is loaded on first use of ``ExecutorConformance``.

Example:
    >>> from flowcore.testing import named_targets
    >>> named_targets().simple.target
    'kit.simple'
"""

import typing as _typing

from flowcore.testing.graphs import (
    KitTarget,
    KitTargets,
    build_kit_graphs,
    default_targets,
    named_targets,
)

if _typing.TYPE_CHECKING:
    from flowcore.testing.kit import ExecutorConformance

__all__ = [
    "ExecutorConformance",
    "KitTarget",
    "KitTargets",
    "build_kit_graphs",
    "default_targets",
    "named_targets",
]


def __getattr__(name: str) -> _typing.Any:
    # The kit imports pytest; load it only when someone asks for it.
    if name == "ExecutorConformance":
        from flowcore.testing.kit import ExecutorConformance

        return ExecutorConformance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
