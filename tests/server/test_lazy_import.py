"""The server is an optional extra: ``import flowcore`` (and the CLI) never load its stack."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
import flowcore, flowcore.cli, flowcore.server
from flowcore.server import ApiKeys, ServerSettings
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("fastapi", "starlette", "uvicorn"))
print(",".join(loaded))
"""


def test_importing_flowcore_its_cli_and_the_server_package_loads_no_web_framework() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == ""
