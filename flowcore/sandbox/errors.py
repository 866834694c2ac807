"""What can go wrong running an untrusted Python block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from flowcore.errors import FlowcoreError

__all__ = [
    "ResourceKind",
    "SandboxError",
    "SandboxExecutionError",
    "SandboxResourceError",
    "SandboxTimeoutError",
    "SandboxUnavailableError",
    "SandboxViolation",
]

ResourceKind = Literal["cpu", "memory", "file_size", "disk", "processes", "output"]


class SandboxError(FlowcoreError):
    """Root of the sandbox's errors.

    Example:
        >>> issubclass(SandboxViolation, SandboxError)
        True
    """

    code = "sandbox"


class SandboxViolation(SandboxError, PermissionError):
    """Block code did something the sandbox forbids.

    ``layer`` says who stopped it: ``"policy"`` (refused before it ran) or
    ``"jail"`` (the operating system refused it while it ran).

    Example:
        >>> SandboxViolation(["line 1: import of 'os' is not allowed"]).layer
        'policy'
    """

    code = "sandbox-violation"

    def __init__(
        self, problems: Sequence[str], *, layer: Literal["policy", "jail"] = "policy"
    ) -> None:
        self.problems = tuple(problems)
        self.layer = layer
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"the Python block was refused by the sandbox's {layer} layer:\n{listed}\n"
            "Blocks may only compute on their inputs with the allowed modules; see "
            "docs/blocks.md#python-blocks-and-the-sandbox."
        )


class SandboxResourceError(SandboxError):
    """Block code hit a resource limit: CPU, memory, file size, disk, processes or output size.

    ``"disk"`` means the jail's private ``/tmp`` is full (``SandboxLimits.tmp_mb``).

    Example:
        >>> SandboxResourceError("memory", "over 256 MB").kind
        'memory'
    """

    code = "sandbox-resource"

    def __init__(self, kind: ResourceKind, detail: str) -> None:
        self.kind = kind
        super().__init__(
            f"the Python block exceeded its {kind.replace('_', ' ')} limit ({detail}); "
            "make it do less, or raise the limit in SandboxLimits"
        )


class SandboxTimeoutError(SandboxError, TimeoutError):
    """Block code ran longer than its wall-clock timeout and was killed.

    Example:
        >>> SandboxTimeoutError(2.0).seconds
        2.0
    """

    code = "sandbox-timeout"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(
            f"the Python block ran longer than {seconds}s and was killed with every "
            "process it started; make it faster or raise its timeout_seconds"
        )


class SandboxExecutionError(SandboxError, RuntimeError):
    """Block code raised an exception, or returned something that is not a dict of JSON.

    ``exc_type`` and ``detail`` come from the worker; no host traceback is shown.

    Example:
        >>> SandboxExecutionError("KeyError", "'text'").exc_type
        'KeyError'
    """

    code = "sandbox-execution"

    def __init__(self, exc_type: str, detail: str) -> None:
        self.exc_type = exc_type
        self.detail = detail
        super().__init__(f"the Python block raised {exc_type}: {detail}")


class SandboxUnavailableError(SandboxError):
    """The sandbox cannot run here: bubblewrap or RestrictedPython is missing.

    Untrusted blocks fail closed: without bubblewrap they refuse to run unless
    the operator opted into a weaker jail (``PythonSandbox(weaker_isolation=...)``).

    Example:
        >>> SandboxUnavailableError("RestrictedPython is not installed").code
        'sandbox-unavailable'
    """

    code = "sandbox-unavailable"
