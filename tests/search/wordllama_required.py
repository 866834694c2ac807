"""Skip specs that need WordLlama when it is not installed, unless CI requires it.

``pip install -e '.[test]'`` installs it. CI sets ``FLOWCORE_REQUIRE_EMBED=1`` so
a missing package fails the run instead of skipping the semantic specs.
"""

from __future__ import annotations

import importlib.util
import os

import pytest


def require_wordllama() -> None:
    """Skip the calling spec without ``wordllama`` (fail instead under CI's flag)."""
    if importlib.util.find_spec("wordllama") is not None:
        return
    message = "wordllama is not installed (pip install -e '.[embed]')"
    if os.environ.get("FLOWCORE_REQUIRE_EMBED") == "1":
        pytest.fail(f"FLOWCORE_REQUIRE_EMBED=1 but {message}")
    pytest.skip(message)
