"""Spec: without bubblewrap, untrusted blocks refuse to run unless a weaker jail is opted into.

bubblewrap is made unavailable the way a fresh machine lacks it: the PATH
the sandbox searches has no ``bwrap`` (only ``unshare``, for the opt-in
cases). The weaker jails that then run are the real ones.
"""

from __future__ import annotations

import logging
import os
import pathlib

import pytest

from flowcore.sandbox import (
    WEAKER_ISOLATION_SETTING,
    PythonSandbox,
    SandboxUnavailableError,
    bubblewrap_available,
)
from flowcore.sandbox import jail as jail_module

from .conftest import LIMITS, Canaries

# Writes a file next to the secret, reads the secret, dials the listener: what a
# bypassed policy would try first. policy=False hands it full builtins.
PROBE = """
import os

def execute(inputs, context):
    seen = {"uid": os.getuid(), "secret": None, "dialed": False, "wrote": False}
    try:
        seen["secret"] = open(inputs["secret"]).read()
    except OSError:
        pass
    try:
        open(inputs["target"], "w").write("escaped")
        seen["wrote"] = True
    except OSError:
        pass
    try:
        import socket  # under rlimits as root, the stdlib may be unreadable to nobody

        socket.create_connection(("127.0.0.1", inputs["port"]), timeout=1).sendall(b"hi")
        seen["dialed"] = True
    except (ImportError, OSError):
        pass
    return seen
"""


@pytest.fixture
def no_bwrap(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A PATH holding ``unshare`` but no ``bwrap``, and a fresh warn-once record."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    unshare = jail_module.shutil.which("unshare")
    assert unshare is not None, "util-linux unshare is part of every CI image"
    (bin_dir / "unshare").symlink_to(unshare)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(jail_module, "_WARNED", set())
    return bin_dir


def test_the_probe_notices_a_path_without_bwrap(no_bwrap: pathlib.Path) -> None:
    assert not bubblewrap_available()


async def test_without_bubblewrap_a_block_refuses_to_run_and_says_how_to_install_it(
    no_bwrap: pathlib.Path, canaries: Canaries
) -> None:
    sandbox = PythonSandbox(limits=LIMITS, policy=False)

    with pytest.raises(SandboxUnavailableError) as refused:
        await sandbox.run(PROBE, canaries.inputs(), {})

    message = str(refused.value)
    assert "apt-get install bubblewrap" in message
    assert "weaker_isolation='unshare'" in message
    assert refused.value.code == "sandbox-unavailable"
    assert canaries.harm(None) == []  # nothing was started


async def test_asking_for_bubblewrap_by_name_refuses_even_with_a_weaker_opt_in(
    no_bwrap: pathlib.Path,
) -> None:
    sandbox = PythonSandbox(limits=LIMITS, isolation="bubblewrap", weaker_isolation="rlimits")

    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        await sandbox.isolation()


async def test_the_unshare_opt_in_runs_the_block_in_a_real_unshare_jail(
    no_bwrap: pathlib.Path, canaries: Canaries, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="flowcore.sandbox")
    sandbox = PythonSandbox(limits=LIMITS, weaker_isolation="unshare", policy=False)

    result = await sandbox.run(PROBE, canaries.inputs(), {})
    again = await PythonSandbox(limits=LIMITS, weaker_isolation="unshare", policy=False).run(
        PROBE, canaries.inputs(), {}
    )

    assert result.isolation == again.isolation == "unshare"
    # Its /tmp is private (the secret lives under the host's /tmp), there is
    # no network, and under root it runs as nobody.
    assert result.outputs == {
        "uid": 65534 if os.geteuid() == 0 else 0,
        "secret": None,
        "dialed": False,
        "wrote": False,
    }
    assert canaries.harm(result.outputs) == []
    warnings = [r.getMessage() for r in caplog.records if "WITHOUT bubblewrap" in r.getMessage()]
    assert len(warnings) == 1
    assert "unshare isolation only" in warnings[0]


async def test_the_rlimits_opt_in_runs_the_block_with_limits_and_the_unprivileged_user(
    no_bwrap: pathlib.Path, canaries: Canaries
) -> None:
    sandbox = PythonSandbox(limits=LIMITS, weaker_isolation="rlimits", policy=False)

    result = await sandbox.run(PROBE, canaries.inputs(), {})

    assert result.isolation == "rlimits"
    if os.geteuid() == 0:
        # What rlimits still gives: nobody cannot read a 0600 file or write
        # into the test's directory. The network stays open (documented).
        assert result.outputs["uid"] == 65534
        assert result.outputs["secret"] is None
        assert result.outputs["wrote"] is False


async def test_an_opted_in_jail_that_cannot_start_is_refused_too(
    no_bwrap: pathlib.Path, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    sandbox = PythonSandbox(limits=LIMITS, weaker_isolation="unshare")

    with pytest.raises(SandboxUnavailableError, match="'unshare' jail cannot start here"):
        await sandbox.isolation()


async def test_with_bubblewrap_present_the_weaker_opt_in_is_not_used() -> None:
    sandbox = PythonSandbox(limits=LIMITS, weaker_isolation="rlimits")

    assert await sandbox.isolation() == "bubblewrap"


async def test_the_test_only_none_isolation_runs_only_when_named(
    no_bwrap: pathlib.Path,
) -> None:
    named = PythonSandbox(limits=LIMITS, isolation="none", policy=False)
    source = "import os\ndef execute(inputs, context):\n    return {'uid': os.getuid()}"

    result = await named.run(source, {}, {})

    assert result.isolation == "none"
    assert result.outputs == {"uid": os.geteuid()}


def test_front_doors_read_the_weaker_isolation_setting_from_their_environment() -> None:
    assert PythonSandbox.from_environment({}).weaker_isolation is None
    chosen = PythonSandbox.from_environment({WEAKER_ISOLATION_SETTING: "rlimits"})
    assert chosen.weaker_isolation == "rlimits"
    with pytest.raises(SandboxUnavailableError, match="use 'unshare' or 'rlimits'"):
        PythonSandbox.from_environment({WEAKER_ISOLATION_SETTING: "none"})
