"""Running untrusted Python blocks: a policy layer, then an OS jail (bubblewrap, fail closed)."""

from flowcore.sandbox.errors import (
    SandboxError,
    SandboxExecutionError,
    SandboxResourceError,
    SandboxTimeoutError,
    SandboxUnavailableError,
    SandboxViolation,
)
from flowcore.sandbox.jail import (
    Isolation,
    WeakerIsolation,
    available_isolation,
    bubblewrap_available,
)
from flowcore.sandbox.policy import ALLOWED_IMPORTS, NETWORK_IMPORTS, check_policy
from flowcore.sandbox.runner import (
    WEAKER_ISOLATION_SETTING,
    PythonSandbox,
    SandboxLimits,
    SandboxResult,
)

__all__ = [
    "ALLOWED_IMPORTS",
    "NETWORK_IMPORTS",
    "WEAKER_ISOLATION_SETTING",
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
    "WeakerIsolation",
    "available_isolation",
    "bubblewrap_available",
    "check_policy",
]
