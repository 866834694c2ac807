"""The adversarial payloads per layer and per jail: refused / contained / escaped.

    python bench/sandbox_adversarial.py                          # policy alone, bubblewrap alone
    python bench/sandbox_adversarial.py --jails bubblewrap,unshare,rlimits

Runs every payload of tests/sandbox/payloads_adversarial.py with the policy
alone (``isolation="none"``: a plain subprocess of this user, no jail), with
each named jail alone (``policy=False``, full builtins) and with the
policy on top of each jail (what a block gets, and what an operator who
opts into a weaker jail gets). Outcomes come from the same canaries as the tests: the
0600 secret's token in the outputs, the loopback listener, files outside
the sandbox (one in the host's /tmp), a host process of uid 65534, leftover
processes and the disk budget. A weaker jail alone is expected to let some
through: that is why blocks fail closed without bubblewrap.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import pathlib
import sys
import tempfile
from types import ModuleType

from flowcore.sandbox import PythonSandbox

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load(name: str) -> ModuleType:
    # The tests directory is not a package on sys.path; load the two files by path.
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests/sandbox" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def measure(jails: list[str]) -> dict[str, dict[str, str]]:
    canary = load("conftest")
    payloads: dict[str, str] = load("payloads_adversarial").PAYLOADS
    layers: dict[str, PythonSandbox] = {
        "policy alone": PythonSandbox(limits=canary.LIMITS, isolation="none")
    }
    for jail in jails:
        layers[f"{jail} alone"] = PythonSandbox(limits=canary.LIMITS, isolation=jail, policy=False)
    for jail in jails:
        layers[f"policy + {jail}"] = PythonSandbox(limits=canary.LIMITS, isolation=jail)
    table: dict[str, dict[str, str]] = {}
    for name, source in sorted(payloads.items()):
        for layer, sandbox in layers.items():
            with tempfile.TemporaryDirectory(prefix="flowcore-bench-") as workdir:
                async with canary.planted(pathlib.Path(workdir), os.environ.__setitem__) as found:
                    result, _ = await canary.outcome(sandbox, source, found)
            table.setdefault(name, {})[layer] = result
    return table


def print_table(table: dict[str, dict[str, str]]) -> None:
    layers = list(next(iter(table.values())))
    width = max(len(name) for name in table)
    print(f"| {'payload':<{width}} | {' | '.join(layers)} |")
    print(f"|{'-' * (width + 2)}|{'|'.join('-' * (len(layer) + 2) for layer in layers)}|")
    for name, row in table.items():
        cells = " | ".join(row[layer].ljust(len(layer)) for layer in layers)
        print(f"| {name:<{width}} | {cells} |")
    print()
    for layer in layers:
        counts = [row[layer] for row in table.values()]
        tally = ", ".join(f"{counts.count(k)} {k}" for k in ("refused", "contained", "escaped"))
        print(f"{layer}: {tally}")


def must_hold(layer: str) -> bool:
    """Whether an escape through ``layer`` is a defect, not a documented weakness.

    A weaker jail alone is allowed to leak (blocks fail closed without
    bubblewrap for that reason); the policy layer on any jail, the policy
    alone and bubblewrap alone are not.
    """
    return layer.startswith("policy") or layer == "bubblewrap alone"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jails", default="bubblewrap", help="comma-separated jails to run")
    args = parser.parse_args()
    table = asyncio.run(measure(args.jails.split(",")))
    print_table(table)
    broken = sorted(
        f"{name} ({layer})"
        for name, row in table.items()
        for layer, result in row.items()
        if result == "escaped" and must_hold(layer)
    )
    if broken:
        print(f"ESCAPED where the sandbox must hold: {', '.join(broken)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
