"""``PythonSandbox``: run one untrusted Python block behind the policy layer and the jail."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from flowcore.sandbox import jail
from flowcore.sandbox.errors import (
    SandboxExecutionError,
    SandboxResourceError,
    SandboxTimeoutError,
    SandboxUnavailableError,
    SandboxViolation,
)
from flowcore.sandbox.jail import (
    INSTALL_HINT,
    Isolation,
    JailCommand,
    WeakerIsolation,
    jail_command,
    warn_once,
)
from flowcore.sandbox.policy import ALLOWED_IMPORTS, NETWORK_IMPORTS, prepare_source
from flowcore.sandbox.runtime import package_paths

__all__ = ["WEAKER_ISOLATION_SETTING", "PythonSandbox", "SandboxLimits", "SandboxResult"]

WEAKER_ISOLATION_SETTING = "FLOWCORE_WEAKER_ISOLATION"
"""The environment variable front doors read for ``PythonSandbox(weaker_isolation=...)``."""

# The worker cannot import flowcore: it runs the guards' text, then its own.
_WORKER = "\n".join(
    (Path(__file__).parent / name).read_text() for name in ("guards.py", "worker.py")
)
_MARK = b"\x00flowcore-result\x00"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIGNALS_CPU = {-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL}


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resource limits of one block call (per worker process).

    ``tmp_mb`` caps the jail's private ``/tmp`` (a tmpfs, so in memory, never
    on the host's disk) under bubblewrap and unshare; ``file_size_mb`` caps
    each file the block writes.

    Example:
        >>> SandboxLimits(memory_mb=128).cpu_seconds
        5.0
    """

    cpu_seconds: float = 5.0
    memory_mb: int = 256
    file_size_mb: int = 16
    processes: int = 16
    output_bytes: int = 1_000_000
    tmp_mb: int = 64


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """What one call returned, the jail it ran in, and how long it took (spawn included).

    Example:
        >>> SandboxResult({"n": 1}, "bubblewrap", 0.05).isolation
        'bubblewrap'
    """

    outputs: Mapping[str, Any]
    isolation: Isolation
    duration: float


def _packages(network: bool) -> tuple[Path, ...]:
    # Only what a block may import (and what that needs) is shown to the worker.
    return package_paths(["RestrictedPython", *(NETWORK_IMPORTS if network else ())])


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    chosen = dict(env or {})
    for name, value in chosen.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ValueError(f"environment variable name {name!r} is not a valid name")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"environment variable {name} must be a string without NUL")
    return chosen


def _prepare(
    isolation: Isolation, tmp: Path | None, packages: tuple[Path, ...], network: bool, tmp_mb: int
) -> JailCommand:
    # Looks at the filesystem (tools on PATH, runtime paths): off the event loop.
    command = jail_command(isolation, tmp, packages, network=network, tmp_mb=tmp_mb)
    if tmp is not None:
        if command.drop_uid is not None:
            os.chown(tmp, command.drop_uid, command.drop_uid)
        os.chmod(tmp, 0o700)
    return command


def _unavailable() -> SandboxUnavailableError:
    return SandboxUnavailableError(
        "untrusted Python blocks run only in a bubblewrap jail, and bubblewrap cannot run "
        "here (no 'bwrap' on PATH, or it cannot create namespaces); install it with: "
        f"{INSTALL_HINT}. To run blocks anyway in a weaker jail, opt in with "
        f"PythonSandbox(weaker_isolation='unshare') or 'rlimits' ({WEAKER_ISOLATION_SETTING}"
        "=unshare for the CLI); docs/blocks.md#without-bubblewrap-the-weaker-isolation-setting "
        "says what each does not protect"
    )


async def _read_capped(
    stream: asyncio.StreamReader | None, cap: int, on_flood: Callable[[], None]
) -> tuple[bytes, bool]:
    if stream is None:
        return b"", False
    chunks: list[bytes] = []
    size = 0
    flooded = False
    while chunk := await stream.read(65536):
        size += len(chunk)
        if size > cap and not flooded:
            flooded = True
            on_flood()
        if not flooded:
            chunks.append(chunk)
    # Read to the end even after a flood: the pipe must close before the
    # process counts as finished, and the kill makes the end come quickly.
    return b"".join(chunks), flooded


async def _drain(stream: asyncio.StreamReader | None) -> None:
    # asyncio counts a process as finished only once its pipes are closed.
    if stream is not None:
        while await stream.read(65536):
            pass


def _kill(process: asyncio.subprocess.Process) -> None:
    # The worker leads its own process group; the jail's PID namespace (or
    # the group kill, without one) takes every process the block started.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


class PythonSandbox:
    """Runs untrusted ``execute(inputs, context)`` code: policy check, then a jailed worker.

    The jail is bubblewrap. When bubblewrap cannot run here, the sandbox
    fails closed: every call raises :class:`SandboxUnavailableError` saying
    how to install it, unless the operator opted into a weaker jail with
    ``weaker_isolation="unshare"`` or ``"rlimits"`` (used only when
    bubblewrap is missing, and logged as a warning once). Naming a jail in
    ``isolation`` forces it, for tests and benchmarks: ``"none"`` (no jail,
    the host's user) exists to test the policy layer alone.
    ``policy=False`` skips the policy layer and gives the code full builtins:
    **for testing the jail only**, never for real blocks.

    Example:
        >>> sandbox = PythonSandbox(limits=SandboxLimits(cpu_seconds=2))
        >>> # result = await sandbox.run("def execute(inputs, context):\\n"
        >>> #                            "    return {'n': len(inputs['text'])}",
        >>> #                            {"text": "hello"}, {})
        >>> # result.outputs == {"n": 5}
    """

    def __init__(
        self,
        *,
        limits: SandboxLimits | None = None,
        isolation: Literal["auto", "bubblewrap", "unshare", "rlimits", "none"] = "auto",
        weaker_isolation: WeakerIsolation | None = None,
        policy: bool = True,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self._isolation = isolation
        self.weaker_isolation = weaker_isolation
        self.policy = policy
        self._resolved: Isolation | None = None

    @classmethod
    def from_environment(
        cls, env: Mapping[str, str], *, limits: SandboxLimits | None = None
    ) -> PythonSandbox:
        """The sandbox an application's front door configures from its environment.

        ``FLOWCORE_WEAKER_ISOLATION=unshare`` (or ``rlimits``) is the
        operator's opt-in to a weaker jail when bubblewrap is missing; unset,
        blocks run under bubblewrap or not at all.

        Example:
            >>> PythonSandbox.from_environment({"FLOWCORE_WEAKER_ISOLATION": "unshare"}
            ...                                ).weaker_isolation
            'unshare'
        """
        value = env.get(WEAKER_ISOLATION_SETTING, "").strip()
        if value == "":
            return cls(limits=limits)
        weaker: dict[str, WeakerIsolation] = {"unshare": "unshare", "rlimits": "rlimits"}
        if value in weaker:
            return cls(limits=limits, weaker_isolation=weaker[value])
        raise SandboxUnavailableError(
            f"{WEAKER_ISOLATION_SETTING}={value!r} is not a weaker jail flowcore knows: "
            "use 'unshare' or 'rlimits', or unset it to require bubblewrap"
        )

    async def isolation(self) -> Isolation:
        """The jail this sandbox uses (probing the machine on first call).

        Raises :class:`SandboxUnavailableError` when bubblewrap cannot run
        and no weaker jail was opted into.

        Example:
            >>> # await PythonSandbox().isolation()  # 'bubblewrap', or an error saying why not
        """
        if self._resolved is None:
            resolved = await asyncio.to_thread(self._resolve)
            warn_once(resolved)
            self._resolved = resolved
        return self._resolved

    def _resolve(self) -> Isolation:
        requested: Isolation
        choice = self._isolation
        if choice == "auto" or choice == "bubblewrap":
            if jail.bubblewrap_available():
                return "bubblewrap"
            if choice == "bubblewrap" or self.weaker_isolation is None:
                raise _unavailable()
            requested = self.weaker_isolation
        else:
            requested = choice
        if not jail._works(requested):
            raise SandboxUnavailableError(
                f"the {requested!r} jail cannot start here ({requested} is missing or "
                f"cannot create namespaces); install bubblewrap with: {INSTALL_HINT}"
            )
        return requested

    async def run(
        self,
        source: str,
        inputs: Mapping[str, Any],
        context: Mapping[str, Any],
        *,
        network: bool = False,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> SandboxResult:
        """Run the block's ``execute(inputs, context)`` and return the dict it returned.

        ``env`` is the whole process environment the block sees (nothing of
        the host's is passed on); its values travel over the worker's stdin,
        never on a command line. Raises :class:`SandboxUnavailableError`
        (no jail, see the class docs), :class:`SandboxViolation` (refused by
        the policy, or stopped by the jail), :class:`SandboxResourceError`,
        :class:`SandboxTimeoutError` or :class:`SandboxExecutionError`.

        Example:
            >>> # result = await PythonSandbox().run(source, {"text": "hi"}, {"run_id": "r1"})
        """
        started = time.perf_counter()
        if self.policy:
            tree, problems = prepare_source(source, network=network)
            if problems:
                raise SandboxViolation(problems, layer="policy")
            source = ast.unparse(tree)  # exactly what the policy checked
        try:
            payload = json.dumps(
                {"inputs": dict(inputs), "context": dict(context), "env": _env(env)}
            )
        except (TypeError, ValueError) as exc:
            raise SandboxExecutionError(
                "TypeError", f"inputs, context and env must be JSON values ({exc})"
            ) from None
        isolation = await self.isolation()
        packages = await asyncio.to_thread(_packages, network)
        if self.policy and not any(p.name == "RestrictedPython" for p in packages):
            raise SandboxUnavailableError(
                "Python blocks need RestrictedPython; install it with: "
                "pip install 'flowcore[sandbox]'"
            )
        tmp: Path | None = None
        if isolation in ("rlimits", "none"):  # no private /tmp: a host dir instead
            tmp = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="flowcore-block-"))
        try:
            command = await asyncio.to_thread(
                _prepare, isolation, tmp, packages, network, self.limits.tmp_mb
            )
            reply = await self._spawn(source, payload, command, network, timeout)
        finally:
            if tmp is not None:
                await asyncio.to_thread(shutil.rmtree, tmp, True)
        return SandboxResult(reply, isolation, time.perf_counter() - started)

    async def _spawn(
        self,
        source: str,
        payload: str,
        command: JailCommand,
        network: bool,
        timeout: float,
    ) -> dict[str, Any]:
        allowed = sorted(ALLOWED_IMPORTS | NETWORK_IMPORTS if network else ALLOWED_IMPORTS)
        request = json.dumps(
            {
                "source": source,
                "policy": self.policy,
                "allowed_imports": allowed,
                "limits": asdict(self.limits),
                "drop_uid": command.drop_uid,
                "tmp_mount": command.tmp_mount,
                "drop_capabilities": command.drop_capabilities,
                "workdir": command.workdir,
                "paths": list(command.paths),
            }
        )
        request = request[:-1] + ", " + payload[1:]  # inputs and context, already JSON
        process = await asyncio.create_subprocess_exec(
            *command.argv,
            _WORKER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={},  # the block's own variables travel in the request
            cwd=command.workdir if not command.private_tmp else "/",
            start_new_session=True,
        )
        cap = self.limits.output_bytes + 4096
        try:
            async with asyncio.timeout(timeout):
                assert process.stdin is not None
                process.stdin.write(request.encode())
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    await process.stdin.drain()
                process.stdin.close()
                flood = functools.partial(_kill, process)
                (out, flooded), (err, _) = await asyncio.gather(
                    _read_capped(process.stdout, cap, flood),
                    _read_capped(process.stderr, 65536, flood),
                )
                if flooded:
                    raise SandboxResourceError("output", f"more than {cap} bytes written")
                code = await process.wait()
        except TimeoutError:
            raise SandboxTimeoutError(timeout) from None
        finally:
            _kill(process)  # a no-op for a worker that exited, but its group goes too
            await asyncio.gather(_drain(process.stdout), _drain(process.stderr))
            await process.wait()
        return self._reply(out, err, code)

    def _reply(self, out: bytes, err: bytes, code: int) -> dict[str, Any]:
        if _MARK not in out:
            if code in _SIGNALS_CPU:
                raise SandboxResourceError("cpu", f"over {self.limits.cpu_seconds}s of CPU")
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            raise SandboxExecutionError(
                "WorkerDied", f"the worker exited with status {code}: {' | '.join(tail)}"
            )
        reply: dict[str, Any] = json.loads(out.rsplit(_MARK, 1)[1])
        if reply.get("ok"):
            outputs: dict[str, Any] = reply["outputs"]
            return outputs
        kind = reply.get("kind")
        if kind == "policy":
            raise SandboxViolation(reply["problems"], layer="policy")
        if kind == "jail":
            raise SandboxViolation([reply["detail"]], layer="jail")
        if kind == "resource":
            raise SandboxResourceError(reply["resource"], reply["detail"])
        raise SandboxExecutionError(reply.get("type", "Error"), reply.get("detail", ""))
