"""Spec for flowcore's public surface: what is exported, documented, typed and imported."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.resources
import inspect
import json
import pathlib
import subprocess
import sys
import tomllib
import types
from typing import Any

import pytest

import flowcore

PACKAGE_DIR = pathlib.Path(flowcore.__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
PUBLIC_MODULES = [
    "flowcore",
    "flowcore.graph",
    "flowcore.state",
    "flowcore.refs",
    "flowcore.scheduler",
    "flowcore.runtime",
    "flowcore.checkpoint",
    "flowcore.blocks",
    "flowcore.llm",
    "flowcore.tools",
    "flowcore.memory",
    "flowcore.sandbox",
    "flowcore.pipeline",
    "flowcore.schedules",
    "flowcore.history",
    "flowcore.cli",
    "flowcore.compat.langgraph",
    "flowcore.port",
    "flowcore.testing",
    "flowcore.secrets",
    "flowcore.tracing",
    "flowcore.budgets",
    "flowcore.server",
    "flowcore.search",
    "flowcore.queue",
]
FORBIDDEN_IMPORTS = ("langgraph", "langchain")


def isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps ``__all__`` in: CONSTANTS, then Classes, then the rest."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def public_attributes(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def has_own_docstring(obj: Any) -> bool:
    doc = obj.__doc__
    if not doc or not doc.strip():
        return False
    # @dataclass fills in "Name(field: type, ...)" when a class has no docstring.
    return not (inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("))


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_dunder_all_is_sorted_and_unique(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    assert len(names) == len(set(names)), f"{module_name}.__all__ has duplicates"
    assert names == sorted(names, key=isort_key)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_name_in_dunder_all_exists(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_no_public_attribute_is_missing_from_dunder_all(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert public_attributes(module) - set(module.__all__) == set()


def test_star_import_gives_exactly_dunder_all() -> None:
    namespace: dict[str, Any] = {}
    exec("from flowcore import *", namespace)
    namespace.pop("__builtins__")
    assert set(namespace) == set(flowcore.__all__)


@pytest.mark.parametrize(
    ("subpackage", "names"),
    [
        ("flowcore.graph", ["END", "START", "CompiledGraph", "Graph", "RetryPolicy", "RunStream"]),
        ("flowcore.state", ["Reducer", "StateSchema", "append", "merge", "replace"]),
        ("flowcore.scheduler", ["DEFAULT_RECURSION_LIMIT", "NodeContext", "RunOptions"]),
        (
            "flowcore.refs",
            ["Reference", "ValueTemplate", "extract_references", "resolve_references"],
        ),
    ],
)
def test_top_level_reexports_are_the_subpackage_objects(subpackage: str, names: list[str]) -> None:
    module = importlib.import_module(subpackage)
    for name in names:
        assert getattr(flowcore, name) is getattr(module, name), name


def test_every_public_class_and_function_has_a_docstring() -> None:
    undocumented = [
        name
        for name in flowcore.__all__
        if (inspect.isclass(obj := getattr(flowcore, name)) or inspect.isfunction(obj))
        and not has_own_docstring(obj)
    ]
    assert undocumented == []


def test_every_public_method_of_a_public_class_has_a_docstring() -> None:
    undocumented = []
    for name in flowcore.__all__:
        cls = getattr(flowcore, name)
        if not inspect.isclass(cls):
            continue
        for attr, value in vars(cls).items():
            if attr.startswith("_"):
                continue
            if isinstance(value, property):
                func = value.fget
            elif isinstance(value, classmethod | staticmethod):
                func = value.__func__
            elif inspect.isfunction(value):
                func = value
            else:
                continue
            if not (getattr(func, "__doc__", None) or "").strip():
                undocumented.append(f"{name}.{attr}")
    assert undocumented == []


def test_the_package_docstring_shows_how_to_use_it() -> None:
    assert flowcore.__doc__
    assert "Graph(" in flowcore.__doc__


def test_version_matches_the_installed_distribution() -> None:
    assert flowcore.__version__ == importlib.metadata.version("flowcore")


def test_the_package_ships_py_typed() -> None:
    marker = importlib.resources.files("flowcore") / "py.typed"
    assert marker.is_file()
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["flowcore"]


def test_the_error_tree_has_one_root_and_a_code_per_error() -> None:
    errors = [
        obj
        for name in flowcore.__all__
        if inspect.isclass(obj := getattr(flowcore, name)) and issubclass(obj, BaseException)
    ]
    assert all(issubclass(err, flowcore.FlowcoreError) for err in errors)
    codes = [err.code for err in errors]
    assert len(codes) == len(set(codes)), "two errors share a code"
    assert all(code and code == code.lower() for code in codes)


# ------------------------------------------------------- forbidden imports


def imported_modules(path: pathlib.Path) -> list[str]:
    """Absolute module names a source file imports (relative imports stay in flowcore)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return found


def test_no_flowcore_source_imports_langgraph_or_langchain() -> None:
    sources = sorted(PACKAGE_DIR.rglob("*.py"))
    assert sources, "no flowcore sources found"
    offenders = [
        f"{path.relative_to(REPO_ROOT)}: {module}"
        for path in sources
        for module in imported_modules(path)
        if module.split(".")[0].startswith(FORBIDDEN_IMPORTS)
    ]
    assert offenders == []


_PROBE = """
import importlib, json, pkgutil, sys
import flowcore
after_import = sorted(sys.modules)
for info in pkgutil.walk_packages(flowcore.__path__, "flowcore."):
    importlib.import_module(info.name)
from typing import Annotated, TypedDict
from flowcore import END, START, Graph, append

class State(TypedDict):
    log: Annotated[list[str], append]

graph = Graph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
graph.add_edge("a", END)
assert graph.compile().run_sync({}).state == {"log": ["a"]}
print(json.dumps({"after_import": after_import, "after_run": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def loaded_modules() -> dict[str, list[str]]:
    """sys.modules of a fresh interpreter after `import flowcore`, and after a run."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_importing_and_running_flowcore_never_loads_langgraph_or_langchain(
    loaded_modules: dict[str, list[str]],
) -> None:
    loaded = [
        name
        for name in loaded_modules["after_run"]
        if name.split(".")[0].startswith(FORBIDDEN_IMPORTS)
    ]
    assert loaded == []


def test_importing_flowcore_does_not_load_the_llm_provider_sdks(
    loaded_modules: dict[str, list[str]],
) -> None:
    # The README promises openai and anthropic are imported only when used.
    loaded = [
        name
        for name in loaded_modules["after_import"]
        if name.split(".")[0] in ("openai", "anthropic")
    ]
    assert loaded == []


def test_the_api_reference_documents_every_public_name() -> None:
    reference = (REPO_ROOT / "docs" / "api.md").read_text()
    headings = [line for line in reference.splitlines() if line.startswith("#")]
    undocumented = [
        name for name in flowcore.__all__ if not any(f"`{name}`" in heading for heading in headings)
    ]
    assert undocumented == []
