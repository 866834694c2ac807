"""What a jailed worker needs from the host: its Python runtime and a few packages.

The bubblewrap jail shows the worker nothing else, so these functions name
exactly the paths to bind: the host's own interpreter binary and the
``libpython`` it was linked against (at their real paths, since the binary
finds the library through an absolute ``RUNPATH``), the standard library,
and the directories of the packages a block may import together with the
packages those depend on. The installation's ``site-packages`` directories
are listed too, so that the jail can cover them with an empty read-only
mount: the standard library directory holds one.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import site
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PythonRuntime", "package_paths", "python_runtime"]

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True, slots=True)
class PythonRuntime:
    """The files of the running interpreter that a jailed copy of it needs.

    Example:
        >>> runtime = python_runtime()
        >>> runtime.executable.name.startswith("python")
        True
    """

    executable: Path  # the real binary, symlinks resolved
    libraries: tuple[Path, ...]  # its shared libpython, when it has one outside /usr
    stdlib: Path  # the standard library directory, lib-dynload included
    hidden: tuple[Path, ...]  # site-packages directories inside what is bound


@functools.cache
def python_runtime() -> PythonRuntime:
    """Where the running interpreter, its libpython and its standard library live.

    Example:
        >>> (python_runtime().stdlib / "os.py").exists()
        True
    """
    executable = Path(os.path.realpath(sys.executable))
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    stdlib = Path(os.path.realpath(paths["stdlib"]))
    libraries: list[Path] = []
    libdir = sysconfig.get_config_var("LIBDIR")
    for name in {sysconfig.get_config_var("INSTSONAME"), sysconfig.get_config_var("LDLIBRARY")}:
        if libdir and isinstance(name, str) and ".so" in name:  # not a static build
            path = Path(os.path.realpath(Path(libdir) / name))
            if path.is_file() and path not in libraries:
                libraries.append(path)
    hidden = [
        Path(os.path.realpath(p))
        for p in (*site.getsitepackages([sys.base_prefix]), paths["purelib"], paths["platlib"])
    ]
    return PythonRuntime(
        executable,
        tuple(libraries),
        stdlib,
        tuple(dict.fromkeys(p for p in hidden if p.is_dir())),
    )


def _distributions_of(module: str) -> list[str]:
    return list(importlib.metadata.packages_distributions().get(module, [module]))


def _requirements(dist: importlib.metadata.Distribution) -> list[str]:
    names = []
    for line in dist.requires or []:
        requirement, _, marker = line.partition(";")
        if "extra" in marker:
            continue  # optional features are never installed into the jail's view
        match = _REQUIREMENT.match(requirement)
        if match:
            names.append(match.group(1))
    return names


def _top_level(dist: importlib.metadata.Distribution) -> list[Path]:
    found: dict[str, Path] = {}
    for file in dist.files or []:
        first = file.parts[0]
        if first in ("..", "__pycache__") or first.endswith((".dist-info", ".egg-info", ".pth")):
            continue
        if len(file.parts) == 1 and not first.endswith((".py", ".so")):
            continue
        found.setdefault(first, Path(os.path.realpath(str(dist.locate_file(first)))))
    return [path for path in found.values() if path.exists()]


@functools.cache
def _closure(modules: tuple[str, ...]) -> tuple[Path, ...]:
    queue = [name for module in modules for name in _distributions_of(module)]
    seen: set[str] = set()
    paths: list[Path] = []
    while queue:
        name = queue.pop(0)
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a requirement for another Python version, not installed here
        paths += [p for p in _top_level(dist) if p not in paths]
        queue += _requirements(dist)
    return tuple(paths)


def package_paths(modules: Iterable[str]) -> tuple[Path, ...]:
    """The top-level package directories (and module files) that ``modules`` need.

    Follows each distribution's requirements (optional extras excluded), so
    ``httpx`` brings ``httpcore``, ``h11``, ``anyio``, ``idna`` and
    ``certifi``. Standard-library modules and modules that are not
    installed contribute nothing.

    Example:
        >>> sorted(p.name for p in package_paths(["RestrictedPython"]))
        ['RestrictedPython']
    """
    wanted = tuple(sorted({m for m in modules if m not in sys.stdlib_module_names}))
    return _closure(wanted)
