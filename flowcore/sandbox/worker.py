"""The program that runs inside the jail: one block call, then exit.

It is run as ``python -I -S -c <this file's text>`` so that it imports only
the standard library and RestrictedPython, never flowcore. It reads one JSON
request from stdin, drops to the unprivileged user when it starts as root,
sets its resource limits, runs ``execute(inputs, context)`` and writes one
JSON reply after a marker on stdout. Everything after the limits are set
counts against them, block code included.
"""

import errno
import json
import os
import resource
import signal
import sys
import types
from typing import Any

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


def drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


# SWITCH-OVER (helper A, policy): module_view and restricted_globals below are the
# old guards, which show every public name of a module (functools.update_wrapper
# included). Their replacements live in guards.py, which runs here unchanged. To
# switch: the runner sends guards.py's text ahead of this file's
# (_WORKER = guards text + "\n" + worker text), run() compiles with
# `code, problems = compile_block(source)` instead of compile_restricted_exec
# (so await is accepted), and these two functions are deleted (guards.py
# defines restricted_globals). Until then policy.py keeps `os` out of the
# allowlist and lowers await-free `async def` to `def`.
def module_view(module: types.ModuleType) -> types.SimpleNamespace:
    # Only the module's public, non-module names: json.codecs.open must not exist.
    names = getattr(module, "__all__", None) or [n for n in dir(module) if n[:1] != "_"]
    view = types.SimpleNamespace()
    for name in names:
        value = getattr(module, name, None)
        if not name.startswith("_") and not isinstance(value, types.ModuleType):
            setattr(view, name, value)
    return view


def restricted_globals(allowed: set[str]) -> dict[str, Any]:
    import operator

    from RestrictedPython.Eval import default_guarded_getitem, default_guarded_getiter
    from RestrictedPython.Guards import (
        full_write_guard,
        guarded_iter_unpack_sequence,
        guarded_unpack_sequence,
        safe_builtins,
        safer_getattr,
    )
    from RestrictedPython.PrintCollector import PrintCollector

    def guarded_import(
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> types.SimpleNamespace:
        if level or name.split(".")[0] not in allowed or "." in name:
            raise ImportError(f"import of {name!r} is not allowed in a sandboxed block")
        return module_view(__import__(name))

    ops: dict[str, Any] = {
        "+=": operator.iadd,
        "-=": operator.isub,
        "*=": operator.imul,
        "/=": operator.itruediv,
        "//=": operator.ifloordiv,
        "%=": operator.imod,
        "**=": operator.ipow,
        "|=": operator.ior,
        "&=": operator.iand,
        "^=": operator.ixor,
    }

    def inplacevar(op: str, x: Any, y: Any) -> Any:
        if op not in ops:
            raise SyntaxError(f"operator {op} is not allowed")
        return ops[op](x, y)

    builtins = dict(safe_builtins)
    for name in (
        "list",
        "dict",
        "tuple",
        "set",
        "frozenset",
        "sorted",
        "min",
        "max",
        "sum",
        "enumerate",
        "zip",
        "map",
        "filter",
        "any",
        "all",
        "reversed",
        "iter",
        "next",
        "bytes",
        "format",
        "ascii",
    ):
        builtins[name] = getattr(__import__("builtins"), name)
    builtins["__import__"] = guarded_import
    builtins["getattr"] = safer_getattr
    for name in ("setattr", "delattr"):
        builtins.pop(name, None)
    return {
        "__builtins__": builtins,
        "__name__": "block",
        "__metaclass__": type,
        "_getattr_": safer_getattr,
        "_getitem_": default_guarded_getitem,
        "_getiter_": default_guarded_getiter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": full_write_guard,
        "_print_": PrintCollector,
        "_inplacevar_": inplacevar,
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
    }


def run(request: dict[str, Any]) -> dict[str, Any]:
    source = request["source"]
    namespace: dict[str, Any]
    if request["policy"]:
        from RestrictedPython.compile import compile_restricted_exec

        compiled = compile_restricted_exec(source)
        if compiled.errors or compiled.code is None:
            raise PolicyRefused(list(compiled.errors))
        namespace = restricted_globals(set(request["allowed_imports"]))
        exec(compiled.code, namespace)
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
        for name in ("RestrictedPython.compile", *request["allowed_imports"]):
            __import__(name)
    if request.get("drop_uid") is not None:
        drop_privileges(request["drop_uid"])
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
