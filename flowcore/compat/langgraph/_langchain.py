"""LangChain's modules, used only once the app itself has loaded LangChain.

flowcore depends on no LangChain package and never loads one on its own:
importing flowcore or running a graph leaves LangChain unloaded. But an app
that hands a compat graph LangChain objects (callback handlers, tools,
runnables) or asks for LangChain's formats (``astream_events``) has loaded
``langchain_core`` already; then the parts of it that behaviour needs (its
callback managers, its event-stream handler...) are taken from that same
installation. :func:`langchain_module` is the one place that does so.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["langchain_loaded", "langchain_module", "require_langchain_module"]

_ROOT = "langchain_core"


def langchain_loaded() -> bool:
    """Whether the app has loaded ``langchain_core``.

    Example:
        >>> isinstance(langchain_loaded(), bool)
        True
    """
    return _ROOT in sys.modules


def langchain_module(submodule: str) -> ModuleType | None:
    """``langchain_core.<submodule>`` when the app has loaded LangChain, else None.

    Example:
        >>> # langchain_module("callbacks.manager").AsyncCallbackManager
    """
    if _ROOT not in sys.modules:
        return None
    return importlib.import_module(f"{_ROOT}.{submodule}")


def require_langchain_module(submodule: str, feature: str) -> ModuleType:
    """``langchain_core.<submodule>``; ImportError naming ``feature`` if LangChain is not loaded.

    Example:
        >>> # require_langchain_module("tracers.event_stream", "astream_events")
    """
    module = langchain_module(submodule)
    if module is None:
        raise ImportError(
            f"{feature} uses LangChain's own implementation: install langchain-core and "
            "import it (e.g. `import langchain_core`) before calling it; flowcore never "
            "loads LangChain by itself"
        )
    return module
