"""The ``flowcore`` command line: run pipelines and task plans, manage blocks and runs.

Example::

    flowcore run examples/lunch_order/plan.json --user ada
    flowcore resume THREAD --value '"Chicken burrito bowl"'
    flowcore runs list --user ada
"""

from flowcore.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
