"""The program that runs inside the jail: one block call, then exit.

It is run as ``python -I -S -c <guards.py's text, then this file's>`` so
that it imports only the standard library and RestrictedPython, never
flowcore: :func:`compile_block` and :func:`restricted_globals` come from
the guards text that precedes this one. It reads one JSON request from
stdin, sets ``no_new_privs``, mounts its capped ``/tmp`` when the jail asks
(bubblewrap as root), drops to the unprivileged user when it starts as root
(or sheds every capability as root of its own user namespace), empties its
environment down to the block's variables, sets its resource limits, runs
``execute(inputs, context)`` and writes one JSON reply after a marker on
stdout. Everything after the limits are set counts against them, block code
included.
"""

import errno
import json
import os
import resource
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the jail these are defined by guards.py's text, run just before
    from flowcore.sandbox.guards import compile_block, restricted_globals

__all__: list[str] = []

MARK = "\x00flowcore-result\x00"


class PolicyRefused(Exception):
    pass


def set_limits(limits: dict[str, Any]) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write raises EFBIG instead
    cpu = max(1, int(limits["cpu_seconds"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = limits["memory_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    size = limits["file_size_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def mount_tmp(where: str, options: str) -> None:
    # Still root with CAP_SYS_ADMIN inside bubblewrap's mount namespace; the
    # uid drop that follows clears every capability before block code runs.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    flags = 2 | 4 | 8  # MS_NOSUID | MS_NODEV | MS_NOEXEC
    if libc.mount(b"flowcore-tmp", where.encode(), b"tmpfs", flags, options.encode()) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot mount the private /tmp: {os.strerror(code)}")


def drop_capabilities() -> None:
    # For a worker that stays uid 0 of its own user namespace: empty its
    # bounding, permitted, effective and inheritable sets and forbid gaining
    # any back, so block code cannot unmount what hides the host's files.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
    libc.prctl(28, 0x2F, 0, 0, 0)  # PR_SET_SECUREBITS: noroot, no_setuid_fixup, locked
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Sets(ctypes.Structure):
        _fields_ = (
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        )

    empty = (Sets * 2)()
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), empty) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot drop capabilities: {os.strerror(code)}")


def no_new_privileges() -> None:
    # No setuid-root program of the host (unshare and rlimits see them all)
    # runs with more than the block's own rights; bubblewrap already sets it.
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "cannot set no_new_privs")


def drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def run(request: dict[str, Any]) -> dict[str, Any]:
    source = request["source"]
    namespace: dict[str, Any]
    if request["policy"]:
        # The same compiler the host's policy layer used, so both agree.
        code, problems = compile_block(source)
        if problems or code is None:
            raise PolicyRefused(problems)
        namespace = restricted_globals(set(request["allowed_imports"]))
        exec(code, namespace)
    else:
        # The jail alone, with full builtins: only used to test the jail.
        namespace = {"__name__": "block"}
        exec(compile(source, "<block>", "exec"), namespace)
    execute = namespace.get("execute")
    if not callable(execute):
        raise TypeError("the block defines no execute(inputs, context) function")
    result = execute(request["inputs"], request["context"])
    if hasattr(result, "__await__"):
        import asyncio

        result = asyncio.run(result)
    if not isinstance(result, dict):
        raise TypeError(f"execute must return a dict, got {type(result).__name__}")
    return result


def reply_for(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, PolicyRefused):
        return {"ok": False, "kind": "policy", "problems": exc.args[0]}
    if isinstance(exc, MemoryError):
        return {"ok": False, "kind": "resource", "resource": "memory", "detail": "out of memory"}
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        return {"ok": False, "kind": "resource", "resource": "file_size", "detail": str(exc)}
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        detail = f"the private /tmp is full: {exc}"
        return {"ok": False, "kind": "resource", "resource": "disk", "detail": detail}
    if isinstance(exc, OSError) and exc.errno == errno.EAGAIN:
        return {"ok": False, "kind": "resource", "resource": "processes", "detail": str(exc)}
    if isinstance(exc, PermissionError | OSError):
        return {"ok": False, "kind": "jail", "detail": f"{type(exc).__name__}: {exc}"[:500]}
    return {"ok": False, "kind": "error", "type": type(exc).__name__, "detail": str(exc)[:500]}


def main() -> None:
    request = json.loads(sys.stdin.read())
    result_fd = os.dup(1)
    sys.path.extend(request.get("paths", []))
    if request["policy"]:
        # Load what the block may use while the runtime is still readable: a
        # dropped uid may not be able to read the Python installation.
        restricted_globals(set())
        for name in (
            "RestrictedPython.compile",
            "RestrictedPython.transformer",
            *request["allowed_imports"],
        ):
            __import__(name)
    if "async" in request["source"]:
        import asyncio  # noqa: F401 - run() needs it for a coroutine, maybe after the drop
    no_new_privileges()  # first: ctypes may be unreadable once the uid is dropped
    if request.get("tmp_mount"):
        mount_tmp(request["workdir"], request["tmp_mount"])
    if request.get("drop_uid") is not None:
        drop_privileges(request["drop_uid"])
    if request.get("drop_capabilities"):
        drop_capabilities()
    os.chdir(request["workdir"])
    # The block's whole environment: the variables its definition names, nothing else.
    os.environ.clear()
    os.environ.update(request.get("env") or {})
    set_limits(request["limits"])
    try:
        reply = {"ok": True, "outputs": run(request)}
        text = json.dumps(reply)
    except BaseException as exc:  # the block's failure is the reply, whatever it is
        try:
            text = json.dumps(reply_for(exc))
        except MemoryError:
            text = '{"ok": false, "kind": "resource", "resource": "memory", "detail": "oom"}'
    if len(text) > request["limits"]["output_bytes"]:
        text = json.dumps(
            {"ok": False, "kind": "resource", "resource": "output", "detail": f"{len(text)} bytes"}
        )
    os.write(result_fd, (MARK + text).encode())
    os._exit(0)  # no atexit handlers or thread joins of block code


if __name__ == "__main__":
    main()
