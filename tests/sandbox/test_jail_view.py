"""Spec: the bubblewrap jail shows the host's own interpreter, the stdlib and the allowed
packages, nothing else, and gives the block a size-capped private /tmp in memory.

Most blocks here run with the policy layer off (full builtins), as a block
that got past the policy would: what they report is what the jail lets any
code see.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any, Literal

import pytest

from flowcore.sandbox import (
    PythonSandbox,
    SandboxExecutionError,
    SandboxLimits,
    SandboxResourceError,
)
from flowcore.sandbox.jail import jail_command
from flowcore.sandbox.runtime import package_paths, python_runtime

from .conftest import Canaries

LOOK = """
import os, sys

def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return exc.__class__.__name__

def execute(inputs, context):
    maps = open("/proc/self/maps").read()
    return {
        "root": listing("/"),
        "home": listing(inputs["home"]),
        "site": listing("/fc/site"),
        "stdlib_site": listing(inputs["stdlib_site"]),
        "venv": os.path.exists(inputs["venv"]),
        "tmp": listing("/tmp"),
        "version": sys.version,
        "libpython": sorted({l.split()[-1] for l in maps.splitlines() if "libpython" in l}),
    }
"""

# Writes 1 GB in files of 4 MB, each under the file-size limit: only a cap on
# the whole of /tmp can stop it.
FILL = """
def execute(inputs, context):
    chunk = b"x" * (4 * 1024 * 1024)
    for i in range(256):
        with open(f"/tmp/fill-{i}", "wb") as f:
            f.write(chunk)
    return {"written_mb": 1024}
"""

TIGHT = SandboxLimits(cpu_seconds=5, memory_mb=256, file_size_mb=8, tmp_mb=32)


def _look_inputs(venv_package: pathlib.Path) -> dict[str, str]:
    runtime = python_runtime()
    return {
        "home": str(pathlib.Path.home()),
        "stdlib_site": str(runtime.stdlib / "site-packages"),
        "venv": str(venv_package),
    }


def _other_venv_package() -> pathlib.Path:
    # A package installed next to RestrictedPython that no block may import.
    spec = importlib.util.find_spec("jinja2")
    assert spec is not None
    assert spec.origin is not None
    return pathlib.Path(spec.origin).parent


async def test_the_jail_shows_the_runtime_the_allowed_packages_and_nothing_else(
    jail_only: PythonSandbox,
) -> None:
    other = _other_venv_package()

    seen = (await jail_only.run(LOOK, _look_inputs(other), {})).outputs

    runtime = python_runtime()
    runtime_tops = {p.parts[1] for p in (runtime.executable, runtime.stdlib, *runtime.libraries)}
    system = {"usr", "bin", "lib", "lib32", "lib64", "sbin"}
    assert set(seen["root"]) <= system | runtime_tops | {"fc", "proc", "dev", "tmp"}
    assert "etc" not in seen["root"]
    assert "work" not in seen["root"]
    assert seen["site"] == sorted(p.name for p in package_paths(["RestrictedPython"]))
    assert seen["venv"] is False  # the virtualenv's other packages are not there
    assert seen["stdlib_site"] == []  # the installation's site-packages is covered
    assert seen["tmp"] == []


async def test_a_network_block_also_sees_httpx_and_what_it_depends_on(
    jail_only: PythonSandbox,
) -> None:
    seen = (
        await jail_only.run(LOOK, _look_inputs(_other_venv_package()), {}, network=True)
    ).outputs

    expected = sorted(p.name for p in package_paths(["RestrictedPython", "httpx"]))
    assert seen["site"] == expected
    assert {"httpx", "httpcore", "h11", "anyio", "idna", "certifi"} <= set(expected)
    assert seen["venv"] is False


async def test_the_home_directory_shows_at_most_the_path_to_the_runtime(
    jail_only: PythonSandbox,
) -> None:
    seen = (await jail_only.run(LOOK, _look_inputs(_other_venv_package()), {})).outputs

    home = pathlib.Path.home()
    runtime = python_runtime()
    on_the_way = {
        p.relative_to(home).parts[0]
        for p in (runtime.executable, runtime.stdlib)
        if home in p.parents
    }
    if home.parts[1] in seen["root"]:
        assert set(seen["home"]) == on_the_way
    else:
        assert seen["home"] == "FileNotFoundError"


async def test_the_jail_runs_the_host_interpreter_with_its_own_libpython(
    jail_only: PythonSandbox,
) -> None:
    seen = (await jail_only.run(LOOK, _look_inputs(_other_venv_package()), {})).outputs

    assert seen["version"] == sys.version
    assert seen["libpython"] == [str(p) for p in python_runtime().libraries]


async def test_a_package_outside_the_allowlist_cannot_be_imported(
    jail_only: PythonSandbox,
) -> None:
    source = "def execute(inputs, context):\n    import jinja2\n    return {}"

    with pytest.raises(SandboxExecutionError, match="No module named 'jinja2'"):
        await jail_only.run(source, {}, {})


async def test_the_host_temp_dir_is_not_visible(
    canaries: Canaries, jail_only: PythonSandbox
) -> None:
    source = (
        "import os\ndef execute(inputs, context):\n"
        "    return {'there': os.path.exists(inputs['secret'])}"
    )

    result = await jail_only.run(source, canaries.inputs(), {})

    assert result.outputs == {"there": False}


@pytest.mark.parametrize("isolation", ["bubblewrap", "unshare"])
async def test_filling_the_private_tmp_is_a_disk_error_and_the_host_disk_is_untouched(
    isolation: Literal["bubblewrap", "unshare"], monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = PythonSandbox(limits=TIGHT, isolation=isolation, policy=False)
    host_dirs: list[str] = []
    make_dir = tempfile.mkdtemp

    def recorded(*args: Any, **kwargs: Any) -> str:
        host_dirs.append(make_dir(*args, **kwargs))
        return host_dirs[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)

    with pytest.raises(SandboxResourceError) as full:
        await sandbox.run(FILL, {}, {}, timeout=30)

    assert full.value.kind == "disk"
    assert "private /tmp is full" in str(full.value)
    assert host_dirs == []  # no host directory was ever made for it to fill


@pytest.mark.parametrize("isolation", ["bubblewrap", "unshare"])
async def test_the_private_tmp_is_a_tmpfs_of_the_configured_size(
    isolation: Literal["bubblewrap", "unshare"],
) -> None:
    sandbox = PythonSandbox(limits=TIGHT, isolation=isolation, policy=False)
    source = """
def execute(inputs, context):
    for line in open("/proc/self/mounts"):
        device, where, kind, options = line.split()[:4]
        if where == "/tmp":
            found = {"kind": kind, "options": options.split(",")}
    return found
"""

    result = await sandbox.run(source, {}, {})

    # The last mount on /tmp is the one the block writes to: in memory, capped.
    assert result.outputs["kind"] == "tmpfs"
    assert f"size={TIGHT.tmp_mb * 1024}k" in result.outputs["options"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the file cap needs flowcore to run as root")
async def test_as_root_the_private_tmp_also_caps_its_number_of_files(
    jail_only: PythonSandbox,
) -> None:
    # Empty files cost kernel memory that the size cap does not count.
    source = """
import os
def execute(inputs, context):
    made = 0
    try:
        while made < 100_000:
            os.close(os.open(f"/tmp/{made}", os.O_CREAT | os.O_WRONLY))
            made += 1
    except OSError as exc:
        return {"made": made, "error": exc.__class__.__name__}
    return {"made": made, "error": None}
"""

    result = await jail_only.run(source, {}, {}, timeout=30)

    assert result.outputs["error"] == "OSError"
    assert 16_000 <= result.outputs["made"] < 16_384


@pytest.mark.parametrize("isolation", ["bubblewrap", "unshare", "rlimits"])
async def test_block_code_holds_no_capabilities_and_cannot_gain_any(
    isolation: Literal["bubblewrap", "unshare", "rlimits"],
) -> None:
    sandbox = PythonSandbox(limits=TIGHT, isolation=isolation, policy=False)
    source = """
def execute(inputs, context):
    return {line.split(":")[0]: line.split()[1] for line in open("/proc/self/status")
            if line.startswith(("CapPrm", "CapEff", "CapAmb", "NoNewPrivs"))}
"""

    result = await sandbox.run(source, {}, {})

    # NoNewPrivs: no setuid program of the host runs with more than the block's rights.
    zero = "0" * 16
    assert result.outputs == {"CapPrm": zero, "CapEff": zero, "CapAmb": zero, "NoNewPrivs": "1"}


async def test_a_block_within_the_tmp_cap_can_use_its_tmp(jail_only: PythonSandbox) -> None:
    source = """
def execute(inputs, context):
    with open("/tmp/notes.txt", "w") as f:
        f.write("kept for the call")
    with open("/tmp/notes.txt") as f:
        return {"read": f.read()}
"""

    result = await jail_only.run(source, {}, {})

    assert result.outputs == {"read": "kept for the call"}


def test_the_unshare_jail_keeps_packages_that_live_under_the_host_tmp(
    tmp_path: pathlib.Path,
) -> None:
    # A checkout (and its virtualenv) under /tmp, as CI clones often are,
    # must survive the private /tmp that covers it, read-only, and leave no
    # staging directory behind in the host's /tmp.
    assert pathlib.Path("/tmp") in tmp_path.parents
    package = tmp_path / "fc_tmp_package"
    package.mkdir()
    (package / "__init__.py").write_text("ANSWER = 41 + 1\n")
    (tmp_path / "beside.txt").write_text("not needed, so not shown")
    before = set(pathlib.Path("/tmp").glob(".flowcore-jail-*"))
    command = jail_command("unshare", None, [package], network=False)
    code = (
        f"import sys, os; sys.path[:0] = {list(command.paths)!r}; import fc_tmp_package as p\n"
        f"try:\n    open({str(package / 'new.py')!r}, 'w')\n    ro = False\n"
        "except OSError:\n    ro = True\n"
        f"print(p.ANSWER, ro, os.path.exists({str(tmp_path / 'beside.txt')!r}))"
    )

    done = subprocess.run([*command.argv, code], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["42", "True", "False"]
    assert set(pathlib.Path("/tmp").glob(".flowcore-jail-*")) == before
