"""Escape payloads: block sources that try to get out of the sandbox.

Each defines ``execute(inputs, context)``. The inputs name the canaries the
test planted: ``secret`` (a 0600 file outside the sandbox's temp dir),
``port`` (a loopback listener that records connections), ``target`` (a
path outside the temp dir that must never be created), ``env`` (a host
environment variable holding a token) and ``marker`` (a string a spawned
process would carry in its argv).
"""

from __future__ import annotations

PAYLOADS: dict[str, str] = {
    "subclass walk from ().__class__": """
def execute(inputs, context):
    for cls in ().__class__.__bases__[0].__subclasses__():
        if cls.__name__ == "catch_warnings":
            opener = cls()._module.__builtins__["open"]
            return {"got": opener(inputs["secret"]).read()}
    return {"got": None}
""",
    "builtins through a frame": """
import sys
def execute(inputs, context):
    frame = sys._getframe()
    return {"got": frame.f_builtins["open"](inputs["secret"]).read()}
""",
    "builtins through function globals": """
def execute(inputs, context):
    opener = execute.__globals__["__builtins__"]["open"]
    return {"got": opener(inputs["secret"]).read()}
""",
    "format-string attribute access": """
def execute(inputs, context):
    leaked = "{0.__globals__}".format(execute)
    return {"got": leaked}
""",
    "getattr with a computed name": """
def execute(inputs, context):
    name = "__" + "class" + "__"
    return {"got": str(getattr((), name).__bases__[0].__subclasses__())}
""",
    "importlib": """
import importlib
def execute(inputs, context):
    os = importlib.import_module("os")
    return {"got": os.popen("cat " + inputs["secret"]).read()}
""",
    "__import__ builtin": """
def execute(inputs, context):
    return {"got": __import__("os").popen("cat " + inputs["secret"]).read()}
""",
    "os.system writes outside": """
import os
def execute(inputs, context):
    os.system("echo escaped > " + inputs["target"])
    return {"got": None}
""",
    "subprocess reads the secret": """
import subprocess
def execute(inputs, context):
    done = subprocess.run(["cat", inputs["secret"]], capture_output=True)
    return {"got": done.stdout.decode()}
""",
    "sys.modules lookup": """
import sys
def execute(inputs, context):
    return {"got": sys.modules["os"].popen("cat " + inputs["secret"]).read()}
""",
    "read environment variables": """
import os
def execute(inputs, context):
    return {"got": os.environ.get(inputs["env"]), "all": dict(os.environ)}
""",
    "open the 0600 canary file": """
def execute(inputs, context):
    return {"got": open(inputs["secret"]).read()}
""",
    "read /etc/shadow": """
def execute(inputs, context):
    return {"got": open("/etc/shadow").read()}
""",
    "connect to the loopback canary": """
import socket
def execute(inputs, context):
    conn = socket.create_connection(("127.0.0.1", inputs["port"]), timeout=1)
    conn.sendall(b"escaped")
    return {"got": "connected"}
""",
    "http to the loopback canary": """
import urllib.request
def execute(inputs, context):
    url = "http://127.0.0.1:" + str(inputs["port"]) + "/"
    return {"got": urllib.request.urlopen(url, timeout=1).read().decode()}
""",
    "write outside the temp dir": """
def execute(inputs, context):
    with open(inputs["target"], "w") as f:
        f.write("escaped")
    return {"got": "written"}
""",
    "exec of hidden code": """
def execute(inputs, context):
    scope = {}
    exec("import os; result = os.listdir('/')", scope)
    return {"got": scope["result"]}
""",
    "eval of hidden code": """
def execute(inputs, context):
    return {"got": eval("open('" + inputs["secret"] + "').read()")}
""",
    "ctypes system call": """
import ctypes
def execute(inputs, context):
    ctypes.CDLL(None).system(("echo escaped > " + inputs["target"]).encode())
    return {"got": None}
""",
    "escape to root with setuid": """
import os
def execute(inputs, context):
    os.setuid(0)
    return {"got": open(inputs["secret"]).read()}
""",
    "background process outlives the block": """
import subprocess
def execute(inputs, context):
    subprocess.Popen(["sleep", "30", inputs["marker"]], start_new_session=True)
    return {"got": "spawned"}
""",
    "infinite loop": """
def execute(inputs, context):
    while True:
        pass
""",
    "memory bomb": """
def execute(inputs, context):
    hog = []
    while True:
        hog.append("x" * 10_000_000)
""",
    "fork bomb": """
import os
def execute(inputs, context):
    while True:
        os.fork()
""",
    "huge output": """
def execute(inputs, context):
    return {"got": "A" * 5_000_000}
""",
    "file size bomb": """
def execute(inputs, context):
    with open("big.bin", "wb") as f:
        for _ in range(100):
            f.write(b"0" * 1_000_000)
    return {"got": "written"}
""",
    "stdout flood": """
import os
def execute(inputs, context):
    while True:
        os.write(1, b"A" * 65536)
""",
}
