"""Print how many Postgres backend tests ran and passed, per backend, from a JUnit XML report.

Usage: python .ci/pg_counts.py REPORT.xml   (exit 1 if any failed or none ran)
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

# Which backend each spec module checks (the Postgres variants of the SQLite twins' suites).
BACKENDS = {
    "tests.checkpoint.test_contract": "checkpointer contract (PostgresCheckpointer)",
    "tests.history.test_contract": "run-history contract (PostgresRunHistory)",
    "tests.memory.test_store": "memory store spec (PostgresStore)",
    "tests.memory.test_postgres_store": "memory store spec (PostgresStore)",
    "tests.blocks.test_store": "block store spec (PostgresBlockStore)",
    "tests.conformance.test_checkpointer_conformance": "LangGraph conformance (AsyncPostgresSaver)",
    "tests.cli.test_postgres": "CLI on FLOWCORE_DATABASE_URL",
    "tests.test_storage": "open_backends",
}


def main(path: str) -> int:
    counts: dict[str, list[int]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "")
        label = next((v for k, v in BACKENDS.items() if module.startswith(k)), module)
        ran = counts.setdefault(label, [0, 0, 0])
        if case.find("failure") is not None or case.find("error") is not None:
            ran[1] += 1
        elif case.find("skipped") is not None:
            ran[2] += 1
        else:
            ran[0] += 1
    for label, (passed, failed, skipped) in sorted(counts.items()):
        print(f"  {label:48} passed {passed:4}  failed {failed:3}  skipped {skipped:3}")
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    print(f"  {'total':48} passed {total[0]:4}  failed {total[1]:3}  skipped {total[2]:3}")
    return 0 if total[0] and not total[1] and not total[2] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
