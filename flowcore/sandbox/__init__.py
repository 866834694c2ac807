"""Running untrusted Python blocks: a policy layer, then an OS jail."""

from flowcore.sandbox.errors import (
    SandboxError,
    SandboxExecutionError,
    SandboxResourceError,
    SandboxTimeoutError,
    SandboxUnavailableError,
    SandboxViolation,
)
from flowcore.sandbox.jail import Isolation, available_isolation
from flowcore.sandbox.policy import ALLOWED_IMPORTS, NETWORK_IMPORTS, check_policy
from flowcore.sandbox.runner import PythonSandbox, SandboxLimits, SandboxResult

__all__ = [
    "ALLOWED_IMPORTS",
    "NETWORK_IMPORTS",
    "Isolation",
    "PythonSandbox",
    "SandboxError",
    "SandboxExecutionError",
    "SandboxLimits",
    "SandboxResourceError",
    "SandboxResult",
    "SandboxTimeoutError",
    "SandboxUnavailableError",
    "SandboxViolation",
    "available_isolation",
    "check_policy",
]
