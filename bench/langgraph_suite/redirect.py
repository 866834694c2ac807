"""The import hook of the flowcore run: LangGraph's module names answered from the table.

``install()`` puts a finder first on ``sys.meta_path``. For a ``langgraph`` module
the table (``table.py``) redirects, the finder builds a module holding exactly
the listed names of ``flowcore.compat.langgraph``; for one it calls missing, it
raises ``ModuleNotFoundError``; library modules load as usual, and so do the
table's data modules (literal values only), checked as they load by
``check_data_module``. A name a
redirected module lacks raises ``AttributeError`` (``ImportError`` under
``from ... import``), never a fall-back to real LangGraph.

Inside the upstream suite (modules of its ``tests`` package) a missing module or
name binds instead to a ``Placeholder`` (a placeholder module for a module),
which raises ``MissingName`` (an ``ImportError``) when it is called, read,
subclassed and instantiated, or used in ``isinstance``. So a file that imports
one name flowcore lacks still loads, and only the tests that use the name fail:
``plugin.py`` charges a test to a missing name when its error comes from one,
or when its code or its fixtures' code names one (``named_missing``). Code
outside the suite (libraries probing for LangGraph) gets the plain errors.

Example:
    >>> finder = install()
    >>> from langgraph.graph import StateGraph
    >>> StateGraph.__module__.startswith("flowcore.compat.langgraph")
    True
    >>> uninstall(finder)
"""

from __future__ import annotations

import dis
import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys
import types
from collections.abc import Sequence
from typing import Any

from langgraph_suite.table import DATA_MODULES, REDIRECTS, RUNTIME_DIRS, kind_of, packages

__all__ = [
    "MARK",
    "MissingName",
    "Placeholder",
    "RedirectFinder",
    "check_data_module",
    "install",
    "named_missing",
    "real_runtime_modules",
    "uninstall",
]

MARK = "[flowcore-suite]"
"""Tag in every error the hook raises, so the report can tell them from the code's own."""


class MissingName(ImportError):
    """A name flowcore does not provide, used by the suite's support code.

    Example:
        >>> str(MissingName("langgraph.constants.TASKS")).endswith("langgraph.constants.TASKS")
        True
    """

    def __init__(self, dotted: str) -> None:
        super().__init__(f"{MARK} flowcore.compat.langgraph does not provide {dotted}", name=dotted)
        self.dotted = dotted


class Placeholder:
    """What the suite's code gets for a name flowcore lacks: usable in annotations only.

    Calling it, reading an attribute of it, iterating it, reading it as a
    number, subclassing and instantiating it or using it in ``isinstance``
    raises ``MissingName``;
    subscripting it (``Durability[...]``, ``X | None``) gives it back, so type
    annotations still evaluate.

    Example:
        >>> p = Placeholder("langgraph.types.Durability")
        >>> p[int] is p
        True
    """

    def __init__(self, dotted: str) -> None:
        object.__setattr__(self, "_dotted", dotted)
        # pytest builds parametrize ids from __name__: the same ids as on LangGraph.
        object.__setattr__(self, "__name__", dotted.rsplit(".", 1)[-1])
        object.__setattr__(self, "__qualname__", dotted.rsplit(".", 1)[-1])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise MissingName(self._dotted)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise MissingName(f"{self._dotted}.{name}")

    def __getitem__(self, item: Any) -> Placeholder:
        return self

    def __instancecheck__(self, instance: Any) -> bool:
        raise MissingName(self._dotted)

    def __subclasscheck__(self, subclass: Any) -> bool:
        raise MissingName(self._dotted)

    def __iter__(self) -> Any:
        raise MissingName(self._dotted)

    # Read as a number (``int(DEFAULT_RECURSION_LIMIT)`` at a module's top): without
    # these the error would be a TypeError that names no LangGraph name.
    def __int__(self) -> int:
        raise MissingName(self._dotted)

    __float__ = __int__
    __index__ = __int__

    def __or__(self, other: Any) -> Placeholder:
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        dotted = self._dotted

        def refuse(*args: Any, **kwargs: Any) -> None:
            raise MissingName(dotted)

        return (type(f"Missing_{dotted.rsplit('.', 1)[-1]}", (), {"__init__": refuse}),)

    def __repr__(self) -> str:
        return f"<missing {self._dotted}>"


def _importer() -> str:
    """The ``__name__`` of the module whose code is importing, past importlib's frames."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith("<frozen importlib") or "importlib" in filename):
            return str(frame.f_globals.get("__name__", ""))
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def _in_suite(module: str) -> bool:
    # The upstream suite is the `tests` package of its copy; nothing else is named so
    # in the suite's interpreter.
    return module == "tests" or module.startswith("tests.")


class _RedirectLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        compat = importlib.import_module("flowcore.compat.langgraph")
        offered = REDIRECTS.get(name, ())
        for attr in offered:
            setattr(module, attr, getattr(compat, attr))
        setattr(module, "__all__", list(offered))  # noqa: B010
        setattr(module, "__getattr__", _missing_attr(name))  # noqa: B010


class _PlaceholderLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__

        def every_name(attr: str) -> Any:
            if attr.startswith("__"):
                raise AttributeError(attr)
            return Placeholder(f"{name}.{attr}")

        setattr(module, "__getattr__", every_name)  # noqa: B010
        setattr(module, "__flowcore_missing__", name)  # noqa: B010


def _missing_attr(module: str) -> Any:
    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        dotted = f"{module}.{attr}"
        if _in_suite(_importer()):
            return Placeholder(dotted)
        raise AttributeError(
            f"module {module!r} has no attribute {attr!r} "
            f"{MARK} flowcore.compat.langgraph does not provide {dotted}",
            name=attr,
        )

    return __getattr__


# The packages a data module sits in (``langgraph._internal``): loaded for real with it,
# and held to the same check.
_DATA_PARENTS = frozenset(
    ".".join(name.split(".")[:i]) for name in DATA_MODULES for i in range(2, name.count(".") + 1)
)

_LITERALS = (str, bytes, int, float, bool, type(None))


def _is_literal(value: Any) -> bool:
    if isinstance(value, _LITERALS):
        return True
    if isinstance(value, tuple | list | set | frozenset):
        return all(_is_literal(v) for v in value)
    if isinstance(value, dict):
        return all(_is_literal(k) and _is_literal(v) for k, v in value.items())
    return False


def check_data_module(module: types.ModuleType, loaded_before: set[str]) -> None:
    """Refuse a data module that holds code of its own or pulled in LangGraph modules.

    Every name the module binds must be a literal (strings, numbers, and tuples,
    sets or dicts of them), a module, or something defined elsewhere and
    imported (``typing.cast``); importing it must have loaded no LangGraph
    module but itself and its packages.

    Example:
        >>> check_data_module(types.ModuleType("langgraph.x"), set())
    """
    name = module.__name__
    for attr, value in vars(module).items():
        if attr.startswith("__") or _is_literal(value) or isinstance(value, types.ModuleType):
            continue
        if getattr(value, "__module__", name) != name:
            continue
        raise ImportError(f"{MARK} {name}.{attr} is not a literal value: {name} is not data only")
    allowed = {name, *_DATA_PARENTS, "langgraph"}
    pulled = [
        m
        for m in sys.modules
        if (m == "langgraph" or m.startswith("langgraph."))
        and m not in loaded_before
        and m not in allowed
    ]
    if pulled:
        raise ImportError(f"{MARK} importing {name} loaded {sorted(pulled)}: not data only")


class _DataLoader(importlib.abc.Loader):
    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        before = set(sys.modules)
        self.real.exec_module(module)
        check_data_module(module, before)


class RedirectFinder(importlib.abc.MetaPathFinder):
    """Answers every ``langgraph`` module name from the table; see the module docstring.

    Example:
        >>> RedirectFinder().find_spec("json", None) is None
        True
    """

    def __init__(self) -> None:
        self.packages = packages()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "langgraph" and not fullname.startswith("langgraph."):
            return None
        kind = kind_of(fullname)
        if kind == "data" or fullname in _DATA_PARENTS:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
            spec.loader = _DataLoader(spec.loader)
            return spec
        if kind in ("library", "package"):
            return None
        if kind == "redirect":
            return importlib.machinery.ModuleSpec(
                fullname, _RedirectLoader(), is_package=fullname in self.packages
            )
        if _in_suite(_importer()):
            return importlib.machinery.ModuleSpec(fullname, _PlaceholderLoader(), is_package=True)
        raise ModuleNotFoundError(
            f"No module named {fullname!r} {MARK} flowcore.compat.langgraph has no counterpart",
            name=fullname,
        )


def install() -> RedirectFinder:
    """Put the finder first on ``sys.meta_path``, dropping LangGraph modules already loaded.

    Example:
        >>> uninstall(install())
    """
    for name in list(sys.modules):
        if (name == "langgraph" or name.startswith("langgraph.")) and kind_of(name) != "library":
            del sys.modules[name]
    finder = RedirectFinder()
    sys.meta_path.insert(0, finder)
    return finder


def uninstall(finder: RedirectFinder) -> None:
    """Take the finder off ``sys.meta_path`` and forget the modules it built.

    Example:
        >>> uninstall(install())
    """
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for name in list(sys.modules):
        if (name == "langgraph" or name.startswith("langgraph.")) and kind_of(name) != "library":
            del sys.modules[name]


def _missing_in(value: Any) -> str:
    if isinstance(value, Placeholder):
        return str(object.__getattribute__(value, "_dotted"))
    if isinstance(value, types.ModuleType):
        return str(value.__dict__.get("__flowcore_missing__", ""))
    return ""


def _globals_read(code: types.CodeType) -> set[str]:
    found: set[str] = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(
            instruction.argval, str
        ):
            found.add(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _globals_read(const)
    return found


def named_missing(functions: Sequence[Any]) -> list[str]:
    """The missing LangGraph names these functions' code reads as globals (placeholders).

    Example:
        >>> named_missing([named_missing])
        []
    """
    found: set[str] = set()
    for function in functions:
        function = inspect.unwrap(getattr(function, "__func__", function))
        code = getattr(function, "__code__", None)
        namespace = getattr(function, "__globals__", None)
        if code is None or namespace is None:
            continue
        for name in _globals_read(code):
            if dotted := _missing_in(namespace.get(name)):
                found.add(dotted)
    return sorted(found)


def real_runtime_modules() -> list[str]:
    """Loaded modules that come from LangGraph's own runtime files (none, in the flowcore run).

    Example:
        >>> isinstance(real_runtime_modules(), list)
        True
    """
    found = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("langgraph.") or name in DATA_MODULES or name in _DATA_PARENTS:
            continue
        filename = getattr(module, "__file__", None) or ""
        marker = "/site-packages/langgraph/"
        if marker not in filename:
            continue
        first = filename.split(marker, 1)[1].split("/", 1)[0]
        if first in RUNTIME_DIRS:
            found.append(name)
    return sorted(found)
