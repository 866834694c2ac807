"""The OS jail: how a worker process is started, and which jails this machine has.

``bubblewrap`` (the default, and the only jail flowcore picks on its own):
fresh mount, PID, network, IPC and UTS namespaces (plus a user namespace
when flowcore is not root). The root filesystem holds only, read-only: the
system libraries under ``/usr``, the host's own interpreter binary and its
``libpython`` at their real paths, the standard library (its
``site-packages`` covered by an empty read-only mount), and the directories
of the packages a block may import under ``/fc/site``. ``/tmp`` is a private
tmpfs capped at ``SandboxLimits.tmp_mb`` and 16,384 files (the file count
only when flowcore is root: bubblewrap 0.8 cannot cap it, so the worker
mounts that tmpfs itself before dropping to nobody) and the only writable
place; there is no network unless the block declares it,
and the worker's whole process tree dies with it. When flowcore runs as
root the worker drops to uid 65534 (nobody) itself before any block code
runs.

The weaker jails run only when the operator opts in (see
``PythonSandbox(weaker_isolation=...)``), and are logged as a warning once:

``unshare``: PID (with its own ``/proc``), mount, network, IPC and UTS
namespaces from util-linux ``unshare``; a private tmpfs on ``/tmp`` capped
in size and files, and empty read-only mounts over ``/home``, ``/root``,
``/run/user``, ``/var/tmp`` and ``/dev/shm`` (with just the Python runtime's
files bound back, when it lives there). Without root the worker is root of
its own user namespace and sheds every capability, so it cannot unmount
those covers. It does NOT hide the rest of the host's filesystem: every file
elsewhere that the worker's user may read stays readable (as root flowcore
the worker is nobody, so world-readable files; as another user, that user's
own files too, e.g. a project directory outside ``/home``), and the whole
virtualenv is importable.

``rlimits``: a plain subprocess with resource limits, a new session and,
under root, the unprivileged uid. Every worker sets ``no_new_privs``, so no
setuid program of the host gives block code more rights. It does NOT protect
the network (loopback included), other processes of the same uid, files the
uid may read or write, or the disk: its temp dir is on the host's ``/tmp``
and only each file's size is capped.

``none`` (tests only, never a fallback): ``rlimits`` without the uid drop.
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from flowcore.sandbox.runtime import python_runtime

__all__ = [
    "Isolation",
    "JailCommand",
    "WeakerIsolation",
    "available_isolation",
    "bubblewrap_available",
    "jail_command",
]

Isolation = Literal["bubblewrap", "unshare", "rlimits", "none"]
"""Which jail a block ran in, strongest first.

``"none"`` is a plain subprocess of the host's user with resource limits and
nothing else. It exists so that tests can run payloads against the policy
layer alone; nothing ever picks it unless it is asked for by name.
"""

WeakerIsolation = Literal["unshare", "rlimits"]
"""A jail weaker than bubblewrap that an operator may opt into; see the module docs."""

NOBODY = 65534
INSTALL_HINT = "apt-get install bubblewrap"
_LOG = logging.getLogger("flowcore.sandbox")
_WARNED: set[str] = set()
# Each file costs kernel memory outside a tmpfs's size; bwrap's --tmpfs cannot cap them.
_TMP_INODES = 16384
_HIDDEN_BY_UNSHARE = ("/home", "/root", "/run/user", "/var/tmp", "/dev/shm")
_NETWORK_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
)


@dataclass(frozen=True, slots=True)
class JailCommand:
    """The argv that starts a worker, and what the worker must do itself.

    ``private_tmp`` says the jail mounts its own ``/tmp``; otherwise the
    runner creates ``workdir`` on the host. ``tmp_mount`` holds tmpfs
    options the worker mounts on its ``/tmp`` itself, before it drops to
    nobody (bubblewrap as root: bubblewrap 0.8 cannot cap a tmpfs's number
    of files, and each file costs kernel memory outside its size).

    Example:
        >>> cmd = jail_command("bubblewrap", None, (), network=False, tmp_mb=8)
        >>> (cmd.workdir, cmd.private_tmp)
        ('/tmp', True)
    """

    argv: tuple[str, ...]
    workdir: str  # the worker's writable directory, as the worker sees it
    paths: tuple[str, ...]  # import paths, as the worker sees them
    drop_uid: int | None
    private_tmp: bool
    tmp_mount: str | None = None
    drop_capabilities: bool = False  # root of its own user namespace: shed every capability


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args


def _parents(paths: Sequence[Path], made: set[Path]) -> list[str]:
    # bwrap makes missing parents of a bind target 0700: unreadable once the
    # worker is nobody, so every parent is made explicitly, world-traversable.
    args: list[str] = []
    for path in paths:
        for parent in reversed(path.parents):
            if parent != Path("/") and parent not in made and not _under_usr(parent):
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _under_usr(path: Path) -> bool:
    return path == Path("/usr") or Path("/usr") in path.parents


def _runtime_binds() -> list[str]:
    runtime = python_runtime()
    files = [runtime.executable, *runtime.libraries]
    made: set[Path] = set()
    args = _parents([*files, runtime.stdlib], made)
    for path in (*files, runtime.stdlib):
        if not _under_usr(path):
            args += ["--ro-bind", str(path), str(path)]
    for hidden in runtime.hidden:
        if _under_usr(hidden) or runtime.stdlib in (hidden, *hidden.parents):
            args += ["--tmpfs", str(hidden), "--remount-ro", str(hidden)]
    return args


def _tmp_options(tmp_mb: int) -> str:
    return f"size={tmp_mb}m,nr_inodes={_TMP_INODES},mode=1777"  # mount flags add noexec


def _bubblewrap(
    packages: Sequence[Path], *, network: bool, tmp_mb: int, root: bool
) -> tuple[list[str], list[str]]:
    argv = [
        shutil.which("bwrap") or "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
    ]
    argv += ["--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        argv.append("--unshare-net")
    if root:
        # No user namespace: it would map the sandbox to root outside. The worker
        # mounts its capped /tmp and drops to nobody itself (which clears every
        # capability), so it keeps just the rights to do that: bwrap run by
        # root would otherwise hand it all of root's.
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        argv += ["--cap-add", "CAP_SYS_ADMIN"]
    else:
        argv += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    argv += _system_binds()
    argv += _runtime_binds()
    argv += ["--perms", "0755", "--dir", "/fc", "--perms", "0755", "--dir", "/fc/site"]
    for package in packages:
        argv += ["--ro-bind", str(package), f"/fc/site/{package.name}"]
    if network:
        for name in _NETWORK_FILES:
            if Path(name).exists():
                argv += ["--ro-bind", name, name]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "1777", "--size", str(tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    # An empty environment: in the C locale Python runs in UTF-8 mode anyway.
    argv += ["--remount-ro", "/", "--chdir", "/tmp", "--clearenv", "--"]
    return argv, ["/fc/site"] if packages else []


def _unshare(
    packages: Sequence[Path], *, network: bool, tmp_mb: int, root: bool
) -> tuple[list[str], list[str]]:
    argv = [
        shutil.which("unshare") or "unshare",
        "--fork",
        "--kill-child",
        "--pid",
        "--mount-proc",
        "--mount",
    ]
    argv += ["--propagation", "private", "--ipc", "--uts"]
    if not network:
        argv.append("--net")
    if not root:
        argv += ["--user", "--map-root-user"]
    argv += ["--", shutil.which("sh") or "/bin/sh", "-c", _unshare_script(packages, tmp_mb)]
    paths = list(dict.fromkeys(str(p.parent) for p in packages))
    return argv, paths


def _unshare_script(packages: Sequence[Path], tmp_mb: int) -> str:
    """Shell run as root of the new mount namespace, before it execs the worker.

    It mounts the private /tmp, then covers each home-like directory with an
    empty read-only tmpfs. Runtime files inside one (a pyenv Python under
    /root) are bind-mounted aside first and moved back onto the cover, so the
    worker can still reach them once it is nobody.
    """
    runtime = python_runtime()
    needed = [runtime.executable, runtime.stdlib, *runtime.libraries, *packages]
    q = shlex.quote
    mount = q(shutil.which("mount") or "/bin/mount")
    lines = ["set -e", "umask 022", *_private_tmp_lines(mount, needed, tmp_mb)]
    lines.append("mkdir /tmp/.fc-stage")
    kept: list[tuple[Path, str]] = []
    for hidden in map(Path, _HIDDEN_BY_UNSHARE):
        if not hidden.is_dir() or hidden.is_symlink():
            continue
        inside = [p for p in needed if hidden in p.parents]
        for path in inside:
            stage = f"/tmp/.fc-stage/{len(kept)}"
            lines.append(f"mkdir {stage}" if path.is_dir() else f": > {stage}")
            lines.append(f"{mount} --bind {q(str(path))} {stage}")
            kept.append((path, stage))
        lines.append(f"{mount} -t tmpfs -o size=64k,mode=0755 hidden {q(str(hidden))}")
        for path, stage in kept[len(kept) - len(inside) :]:
            target = q(str(path))
            make = f"mkdir -p {target}" if path.is_dir() else f"mkdir -p {q(str(path.parent))}"
            lines.append(make if path.is_dir() else f"{make}; : > {target}")
            lines.append(f"{mount} --move {stage} {target}")
        lines.append(f"{mount} -o remount,ro hidden {q(str(hidden))}")
    lines.append("rm -rf /tmp/.fc-stage")
    lines.append('exec "$0" "$@"')
    return "; ".join(lines)


def _private_tmp_lines(mount: str, needed: Sequence[Path], tmp_mb: int) -> list[str]:
    """Shell that puts a private tmpfs on /tmp, keeping what the worker needs from under it.

    A project or virtualenv checked out under /tmp (as CI clones often are)
    would vanish under the new tmpfs. So the tmpfs is mounted aside first,
    each needed path under /tmp is bound into it read-only at the same place,
    and only then is it moved onto /tmp; the host's /tmp stays reachable
    just long enough to remove the empty directory the tmpfs was staged on.
    """
    q = shlex.quote
    opts = f"nosuid,nodev,noexec,{_tmp_options(tmp_mb)}"
    lines = ["s=$(mktemp -d /tmp/.flowcore-jail-XXXXXX)", f'{mount} -t tmpfs -o {opts} fc "$s"']
    for path in needed:
        if Path("/tmp") not in path.parents:
            continue
        target = '"$s"/' + q(str(path.relative_to("/tmp")))
        if path.is_dir():
            lines.append(f"mkdir -p {target}")
        else:
            lines.append(f'mkdir -p "$(dirname {target})"; : > {target}')
        lines.append(f"{mount} --bind {q(str(path))} {target}")
        lines.append(f"{mount} -o remount,bind,ro {target}")
    lines += [
        'mkdir "$s/.fc-host"',
        f'{mount} --bind /tmp "$s/.fc-host"',
        f'{mount} --move "$s" /tmp',
        'rmdir "/tmp/.fc-host/${s#/tmp/}"',
        f"{q(shutil.which('umount') or '/bin/umount')} /tmp/.fc-host",
        "rmdir /tmp/.fc-host",
    ]
    return lines


def jail_command(
    isolation: Isolation,
    tmpdir: Path | None,
    packages: Sequence[Path],
    *,
    network: bool,
    tmp_mb: int = 64,
) -> JailCommand:
    """How to start the worker under ``isolation``.

    ``packages`` are the package directories (or module files) the worker
    may import; ``tmpdir`` is the host directory that becomes the worker's
    writable place under ``rlimits`` and ``none``, which have no private
    ``/tmp`` of their own.

    Example:
        >>> cmd = jail_command("rlimits", Path("/tmp/x"), (), network=False)
        >>> cmd.argv[-3:], cmd.workdir
        (('-I', '-S', '-c'), '/tmp/x')
    """
    executable = str(python_runtime().executable)
    root = os.geteuid() == 0
    python = (executable, "-I", "-S", "-c")
    if isolation in ("none", "rlimits"):
        if tmpdir is None:
            raise ValueError(f"isolation {isolation!r} needs a host temp dir")
        drop = NOBODY if root and isolation == "rlimits" else None
        sites = tuple(dict.fromkeys(str(p.parent) for p in packages))
        return JailCommand(python, str(tmpdir), sites, drop, private_tmp=False)
    build = _bubblewrap if isolation == "bubblewrap" else _unshare
    argv, paths = build(packages, network=network, tmp_mb=tmp_mb, root=root)
    return JailCommand(
        (*argv, *python),
        "/tmp",
        tuple(paths),
        NOBODY if root else None,
        private_tmp=True,
        tmp_mount=_tmp_options(tmp_mb) if root and isolation == "bubblewrap" else None,
        # Without root, unshare's worker is root of a user namespace that owns
        # the covering mounts: with capabilities it could unmount them.
        drop_capabilities=not root and isolation == "unshare",
    )


def _probe(argv: Sequence[str]) -> bool:
    try:
        done = subprocess.run(list(argv), capture_output=True, timeout=10, check=False, env={})
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == b"ok"


@functools.cache
def _probe_once(isolation: Isolation, tool: str) -> bool:
    # Keyed by the tool's path as well, so a PATH without it is noticed.
    if not tool:
        return False
    cmd = jail_command(isolation, None, (), network=False, tmp_mb=1)
    return _probe([*cmd.argv, "print('ok')"])


def _works(isolation: Isolation) -> bool:
    if isolation in ("rlimits", "none"):
        return True
    tool = "bwrap" if isolation == "bubblewrap" else "unshare"
    return _probe_once(isolation, shutil.which(tool) or "")


def bubblewrap_available() -> bool:
    """Whether bubblewrap is on PATH and can start a jailed interpreter here.

    Probed once per process (and again if PATH changes which ``bwrap`` it finds).

    Example:
        >>> bubblewrap_available() in (True, False)
        True
    """
    return _works("bubblewrap")


def available_isolation() -> Isolation:
    """The strongest jail this machine supports (for reports; nothing falls back on it).

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
    what = {
        "unshare": "namespaces and a private /tmp, but the host's files stay readable",
        "rlimits": "resource limits and an unprivileged user, no namespaces",
        "none": "resource limits only, as the host's user: for tests",
    }[isolation]
    _LOG.warning(
        "flowcore sandbox: untrusted Python blocks run WITHOUT bubblewrap, with %s "
        "isolation only (%s). Install bubblewrap (%s) for a private filesystem, "
        "network and PID namespaces.",
        isolation,
        what,
        INSTALL_HINT,
    )
