"""The OS jail: how a worker process is started, by what this machine allows.

``bubblewrap``: fresh mount, PID, network, IPC and UTS namespaces (plus a
user namespace when flowcore is not root), a root filesystem holding only
read-only system libraries and the Python runtime, a private per-call
``/tmp`` as the only writable place, no network, and the worker's whole
process tree dies with it. When flowcore runs as root the worker drops to
uid 65534 (nobody) itself before any block code runs, so file permissions
and the process-count limit apply to an unprivileged user.

``unshare``: PID, network, IPC and UTS namespaces from util-linux
``unshare``, without a private filesystem: files are protected only by the
unprivileged uid. ``rlimits``: a plain subprocess with resource limits and
the unprivileged uid only. Both fallbacks are logged as a warning once.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Isolation", "JailCommand", "available_isolation", "jail_command"]

Isolation = Literal["bubblewrap", "unshare", "rlimits", "none"]
"""Which jail a block ran in, strongest first.

``"none"`` is a plain subprocess of the host's user with resource limits and
nothing else. It exists so that tests can run payloads against the policy
layer alone; it is never picked by ``"auto"``.
"""

NOBODY = 65534
_LOG = logging.getLogger("flowcore.sandbox")
_WARNED: set[str] = set()


@dataclass(frozen=True, slots=True)
class JailCommand:
    """The argv that starts a worker, and what the worker must do itself."""

    argv: tuple[str, ...]
    workdir: str  # the worker's private writable directory, as the worker sees it
    paths: tuple[str, ...]  # extra import paths, as the worker sees them
    drop_uid: int | None


def _python() -> tuple[Path, Path]:
    prefix = Path(os.path.realpath(sys.base_prefix))
    executable = Path(os.path.realpath(sys.executable))
    return prefix, executable


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args


def _probe(argv: Sequence[str]) -> bool:
    try:
        done = subprocess.run(list(argv), capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == b"ok"


@functools.cache
def _works(isolation: Isolation) -> bool:
    if isolation in ("rlimits", "none"):
        return True
    probe = ("-I", "-S", "-c", "print('ok')")
    if isolation == "bubblewrap":
        if shutil.which("bwrap") is None:
            return False
        cmd = jail_command("bubblewrap", Path("/tmp"), (), network=False)
        return _probe([*cmd.argv[: cmd.argv.index("--")], "--", *cmd.argv[-4:-3], *probe])
    if shutil.which("unshare") is None:
        return False
    cmd = jail_command("unshare", Path("/tmp"), (), network=False)
    return _probe([*cmd.argv[: cmd.argv.index("--")], "--", *cmd.argv[-4:-3], *probe])


def available_isolation() -> Isolation:
    """The strongest jail this machine supports (probed once per process).

    Example:
        >>> available_isolation() in ("bubblewrap", "unshare", "rlimits")
        True
    """
    order: tuple[Isolation, ...] = ("bubblewrap", "unshare", "rlimits")
    for isolation in order:
        if _works(isolation):
            return isolation
    raise AssertionError("unreachable: rlimits always works")  # pragma: no cover


def warn_once(isolation: Isolation) -> None:
    """Say loudly, once per process, that blocks run in a weaker jail than bubblewrap."""
    if isolation == "bubblewrap" or isolation in _WARNED:
        return
    _WARNED.add(isolation)
    _LOG.warning(
        "flowcore sandbox: untrusted Python blocks run WITHOUT bubblewrap, with %s "
        "isolation only (%s). Install bubblewrap (apt-get install bubblewrap) for a private "
        "filesystem and network and PID namespaces.",
        isolation,
        "PID/network namespaces, no private filesystem"
        if isolation == "unshare"
        else "resource limits and an unprivileged user, no namespaces",
    )


def jail_command(
    isolation: Isolation, tmpdir: Path, site_dirs: Sequence[Path], *, network: bool
) -> JailCommand:
    """How to start the worker under ``isolation``; ``tmpdir`` becomes its only writable place.

    Example:
        >>> cmd = jail_command("rlimits", Path("/tmp/x"), (), network=False)
        >>> cmd.argv[-3:-1]
        ('-I', '-S')
    """
    prefix, executable = _python()
    root = os.geteuid() == 0
    drop = NOBODY if root else None
    if isolation == "none":
        return JailCommand(
            (str(executable), "-I", "-S", "-c"), str(tmpdir), tuple(map(str, site_dirs)), None
        )
    if isolation == "rlimits":
        return JailCommand(
            (str(executable), "-I", "-S", "-c"), str(tmpdir), tuple(map(str, site_dirs)), drop
        )
    if isolation == "unshare":
        argv = ["unshare", "--fork", "--kill-child", "--pid", "--mount-proc", "--ipc", "--uts"]
        if not network:
            argv.append("--net")
        if not root:
            argv += ["--user", "--map-root-user"]
        return JailCommand(
            (*argv, "--", str(executable), "-I", "-S", "-c"),
            str(tmpdir),
            tuple(map(str, site_dirs)),
            drop,
        )
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    argv += ["--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        argv.append("--unshare-net")
    if root:
        # No user namespace: it would map the sandbox to root outside. The worker
        # drops to nobody itself, so it keeps just the right to do that.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    argv += _system_binds()
    argv += ["--perms", "0755", "--dir", "/fc"]
    if str(prefix).startswith("/usr/"):
        python = str(executable)
    else:
        argv += ["--ro-bind", str(prefix), "/fc/python"]
        python = "/fc/python/" + str(executable.relative_to(prefix))
    paths = []
    for i, site in enumerate(site_dirs):
        argv += ["--ro-bind", str(site), f"/fc/site{i}"]
        paths.append(f"/fc/site{i}")
    if network:
        for name in ("/etc/resolv.conf", "/etc/hosts", "/etc/ssl", "/etc/ca-certificates"):
            if Path(name).exists():
                argv += ["--ro-bind", name, name]
    argv += ["--proc", "/proc", "--dev", "/dev", "--bind", str(tmpdir), "/tmp"]
    argv += ["--chdir", "/tmp", "--clearenv", "--setenv", "HOME", "/tmp"]
    return JailCommand((*argv, "--", python, "-I", "-S", "-c"), "/tmp", tuple(paths), drop)
