"""Print one of the README's two fresh-machine commands: `main` (first) or `test` (second).

CI runs the README's own text, so the README cannot drift from what CI proves.
"""

import pathlib
import re
import sys

text = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
which = {"main": 0, "test": 1}[sys.argv[1]]
print(blocks[which].strip())
