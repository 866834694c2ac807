"""``python -m flowcore`` is the ``flowcore`` command."""

import sys

from flowcore.cli import main

if __name__ == "__main__":
    sys.exit(main())
