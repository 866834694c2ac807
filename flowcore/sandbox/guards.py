"""What a Python block can reach while it runs: the allowlist and the guards around it.

This file works in two places. flowcore imports it on the host, where the
policy layer reads :data:`MODULE_ATTRIBUTES` and compiles blocks with
:func:`compile_block`; and the worker inside the jail runs the same text
(it cannot import flowcore), where :func:`restricted_globals` builds the
block's globals. So it imports only the standard library at module level,
and RestrictedPython only inside functions, once the worker has set up its
import path.

The rules, each closing a class of escape rather than one payload:

* Modules are never handed to a block. ``import json`` binds a
  :class:`ModuleView` holding the names of :data:`MODULE_ATTRIBUTES`, each
  reviewed on its own; nothing that takes attribute names as strings
  (``functools.update_wrapper``), evaluates strings (``singledispatch`` via
  ``typing.get_type_hints``, ``namedtuple``) or reaches other modules.
* Attribute, item and iteration access go through guards that refuse
  private names, the introspection names of frames, code, generators and
  tracebacks, ``str.format``, and any object that is (or whose class comes
  from) something other than the builtins, the allowed modules or the block.
  So a frame, code object, traceback, real module or a builtin such as
  ``eval`` cannot be held, and generators and coroutines show no attributes.
  Calls and builtins such as ``max`` are not guarded; what they can return
  is bounded by the allowlist, and a test walks everything reachable from
  it to check that no container there holds what the guards refuse.
* Writes reach only plain containers, the ``collections`` ones and
  instances of classes the block defined.
"""

import ast
import builtins as _builtins
import collections
import functools
import operator
import os
import types
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

__all__ = [
    "MODULE_ATTRIBUTES",
    "NETWORK_MODULES",
    "ModuleView",
    "compile_block",
    "restricted_globals",
]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


MODULE_ATTRIBUTES: dict[str, frozenset[str]] = {
    # Module -> the only names a block sees in it. Left out on purpose:
    # functools.update_wrapper/wraps (copy attributes named by strings,
    # __globals__ included), singledispatch (evaluates string annotations),
    # total_ordering, cached_property and partialmethod (descriptors);
    # collections.namedtuple (builds code with eval), UserDict & co.;
    # re.Scanner/template/DEBUG; random.getstate/setstate/SystemRandom;
    # anything that is itself a module (json.codecs, statistics.sys...).
    "json": _names("JSONDecodeError dumps loads"),
    "math": _names(
        "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees "
        "dist e erf erfc exp exp2 expm1 fabs factorial floor fmod frexp fsum gamma gcd "
        "hypot inf isclose isfinite isinf isnan isqrt lcm ldexp lgamma log log10 log1p "
        "log2 modf nan nextafter perm pi pow prod radians remainder sin sinh sqrt tan "
        "tanh tau trunc ulp"
    ),
    "statistics": _names(
        "NormalDist StatisticsError correlation covariance fmean geometric_mean "
        "harmonic_mean linear_regression mean median median_grouped median_high "
        "median_low mode multimode pstdev pvariance quantiles stdev variance"
    ),
    "collections": _names("ChainMap Counter OrderedDict defaultdict deque"),
    "itertools": _names(
        "accumulate chain combinations combinations_with_replacement compress count "
        "cycle dropwhile filterfalse groupby islice pairwise permutations product "
        "repeat starmap takewhile tee zip_longest"
    ),
    "functools": _names("cache cmp_to_key lru_cache partial reduce"),
    "re": _names(
        "A ASCII DOTALL I IGNORECASE M MULTILINE Match NOFLAG Pattern S U UNICODE VERBOSE "
        "X compile error escape findall finditer fullmatch match search split sub "
        "subn"
    ),
    "datetime": _names("MAXYEAR MINYEAR UTC date datetime time timedelta timezone"),
    "random": _names(
        "Random betavariate choice choices expovariate gammavariate gauss getrandbits "
        "lognormvariate normalvariate paretovariate randbytes randint random randrange "
        "sample seed shuffle triangular uniform vonmisesvariate weibullvariate"
    ),
    # Seed 003's "os (env vars only)": a read-only snapshot of the worker's
    # environment, which the jail fills with the variables the block lists.
    "os": frozenset({"environ", "getenv"}),
    # httpx's client API and its errors; no transports, mounts or proxies.
    "httpx": _names(
        "AsyncClient BasicAuth Client ConnectError ConnectTimeout DecodingError HTTPError "
        "HTTPStatusError Headers Limits NetworkError PoolTimeout QueryParams ReadTimeout "
        "Request RequestError Response Timeout TimeoutException TooManyRedirects "
        "TransportError URL WriteTimeout codes delete get head options patch post put "
        "request stream"
    ),
}
"""Every module a block may import, with the names it may use from each."""

NETWORK_MODULES = frozenset({"httpx"})
"""Modules of :data:`MODULE_ATTRIBUTES` only blocks that declare ``network=True`` may import."""

# Objects of classes from these modules may be read; anything else (asyncio,
# sockets, httpcore, os, the worker itself) is out of reach even when some
# allowed object holds a reference to it.
_TYPE_MODULES = frozenset(
    {"builtins", "block", "fractions", "decimal", *MODULE_ATTRIBUTES} - {"os"}
)
_NEVER_HELD = (
    types.ModuleType,
    types.FrameType,
    types.CodeType,
    types.TracebackType,
    types.CellType,
)
_NO_ATTRIBUTES = (
    *_NEVER_HELD,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
)
# Frames, code and their owners by name, on top of the type checks; mro()
# hands out `object`, where every subclass walk starts.
_INTROSPECTION = _names(
    "tb_frame tb_next f_back f_builtins f_code f_generator f_globals f_locals f_trace "
    "co_code gi_frame gi_code gi_yieldfrom cr_await cr_frame cr_code cr_origin ag_await "
    "ag_frame ag_code mro"
)
# What datetime's C code imports through the block's builtins (see guarded_import).
_C_IMPORTS = frozenset({"time", "_strptime"})
_WRITABLE = (
    dict,
    list,
    set,
    bytearray,
    collections.Counter,
    collections.OrderedDict,
    collections.defaultdict,
    collections.deque,
    collections.ChainMap,
)
_EXTRA_BUILTINS = _names(
    "list dict tuple set frozenset sorted min max sum enumerate zip map filter any all "
    "reversed next bytes format ascii"
)
_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "|=": operator.ior,
    "&=": operator.iand,
    "^=": operator.ixor,
}


class ModuleView:
    """The allowlisted, read-only face of one module that a block's ``import`` binds.

    Example:
        >>> import json
        >>> view = ModuleView("json", json, {"dumps"})
        >>> view.dumps([1]), hasattr(view, "codecs")
        ('[1]', False)
    """

    _module_name: str

    def __init__(
        self, name: str, module: types.ModuleType, names: frozenset[str] | set[str]
    ) -> None:
        object.__setattr__(self, "_module_name", name)
        if name == "os":
            # Never the real os.environ or os.getenv: a snapshot behind a read-only proxy.
            environ = types.MappingProxyType(dict(os.environ))
            object.__setattr__(self, "environ", environ)
            object.__setattr__(self, "getenv", _getenv(environ))
            return
        for attribute in sorted(names):
            if hasattr(module, attribute):
                object.__setattr__(self, attribute, getattr(module, attribute))

    def __getattr__(self, name: str) -> Any:
        allowed = ", ".join(sorted(n for n in vars(self) if not n.startswith("_")))
        raise AttributeError(
            f"{self._module_name}.{name} is not available in a sandboxed block; "
            f"{self._module_name} offers: {allowed}"
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"the sandboxed module {self._module_name!r} is read-only")

    def __repr__(self) -> str:
        return f"<module {self._module_name!r} (sandboxed)>"


def _getenv(environ: types.MappingProxyType[str, str]) -> Callable[..., str | None]:
    def getenv(key: str, default: str | None = None) -> str | None:
        """The environment variable ``key``, or ``default``; the block's listed variables only."""
        return environ.get(key, default)

    return getenv


def _module_ok(name: object) -> bool:
    return isinstance(name, str) and name.partition(".")[0] in _TYPE_MODULES


@functools.cache
def _block_transformer() -> type[Any]:
    from RestrictedPython.transformer import RestrictingNodeTransformer, copy_locations

    class BlockTransformer(RestrictingNodeTransformer):
        """RestrictedPython's checks, plus ``async``/``await`` under the same guards."""

        def visit_AsyncFunctionDef(self, node: Any) -> Any:
            return RestrictingNodeTransformer.visit_FunctionDef(self, node)

        def visit_Await(self, node: Any) -> Any:
            return self.node_contents_visit(node)

        def visit_AsyncWith(self, node: Any) -> Any:
            return RestrictingNodeTransformer.visit_With(self, node)

        def visit_AsyncFor(self, node: Any) -> Any:
            # RestrictedPython's guard for `for`, with an asynchronous iteration guard.
            node = self.node_contents_visit(node)
            if isinstance(node.target, ast.Tuple):
                target, unpack = self.gen_unpack_wrapper(node, node.target)
                node.target = target
                node.body.insert(0, unpack)
            guarded = ast.Call(
                func=ast.Name("_getaiter_", ast.Load()), args=[node.iter], keywords=[]
            )
            copy_locations(guarded, node.iter)
            node.iter = guarded
            return node

        def visit_comprehension(self, node: Any) -> Any:
            if node.is_async:
                self.error(
                    node.iter, "async comprehensions are not allowed; write an 'async for' loop"
                )
            return super().visit_comprehension(node)

        def visit_ClassDef(self, node: Any) -> Any:
            # Keywords go to the bases' __init_subclass__ and metaclass machinery.
            if any(keyword.arg != "metaclass" for keyword in node.keywords):
                self.error(node, "class keyword arguments are not allowed")
            return super().visit_ClassDef(node)

    return BlockTransformer


def compile_block(source: Any) -> tuple[types.CodeType | None, list[str]]:
    """Compile block source (text or a parsed module) under the policy; the code and problems.

    The policy layer on the host and the worker in the jail both compile
    with this, so they agree on what is allowed.

    Example:
        >>> code, problems = compile_block("async def execute(i, c):\\n    return await i")
        >>> problems
        []
    """
    from RestrictedPython.compile import compile_restricted_exec

    result = compile_restricted_exec(source, filename="<block>", policy=_block_transformer())
    return result.code, list(result.errors)


def restricted_globals(allowed: set[str]) -> dict[str, Any]:
    """The globals a compiled block runs with: guarded builtins, guards, and importable views.

    ``allowed`` names the modules ``import`` may bind (a subset of
    :data:`MODULE_ATTRIBUTES`).

    Example:
        >>> scope = restricted_globals({"json"})
        >>> scope["__builtins__"]["__import__"]("json").dumps({"a": 1})
        '{"a": 1}'
    """
    from RestrictedPython.Guards import (
        full_write_guard,
        guarded_iter_unpack_sequence,
        guarded_unpack_sequence,
        safe_builtins,
    )
    from RestrictedPython.PrintCollector import PrintCollector

    views: dict[str, ModuleView] = {}
    exposed: set[int] = set()
    for name in _C_IMPORTS:
        # Now, while the worker may still read the runtime: after it drops to
        # an unprivileged uid the installation can be out of its reach.
        __import__(name)

    def refuse(what: str) -> AttributeError:
        return AttributeError(f"{what} is not available in a sandboxed block")

    def readable(obj: object) -> bool:
        if isinstance(obj, ModuleView):
            return True
        if isinstance(obj, _NO_ATTRIBUTES):
            return False
        if isinstance(obj, type):
            return _module_ok(obj.__module__)
        return _module_ok(type(obj).__module__)

    def holdable(value: object) -> bool:
        if isinstance(value, ModuleView) or id(value) in exposed:
            return True
        if isinstance(value, _NEVER_HELD):
            return False
        if isinstance(value, type):
            return _module_ok(value.__module__)
        if isinstance(value, types.MethodType):
            return readable(value.__self__)
        if isinstance(value, types.BuiltinFunctionType | types.FunctionType):
            owner = getattr(value, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                return readable(owner)
            # A module-level function: the block's own, or one of an allowed
            # module; builtins only when they are in the block's builtins.
            module = value.__module__
            return _module_ok(module) and module != "builtins"
        return _module_ok(type(value).__module__)

    def checked(value: Any, where: str) -> Any:
        if not holdable(value):
            raise refuse(f"a value of type {type(value).__name__} (from {where})")
        return value

    def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
        if type(name) is not str:
            raise TypeError("attribute names must be str")
        if name.startswith("_") or name in _INTROSPECTION:
            raise refuse(f"the attribute {name!r}")
        if name in ("format", "format_map") and (
            isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))
        ):
            raise refuse("str.format (it reads attributes through format fields; use an f-string)")
        if not readable(obj):
            raise refuse(f"reading attributes of type {type(obj).__name__}")
        value = getattr(obj, name, *default)
        if isinstance(obj, ModuleView):
            return value
        return checked(value, f".{name}")

    def guarded_hasattr(obj: Any, name: str) -> bool:
        try:
            guarded_getattr(obj, name)
        except AttributeError:
            return False
        return True

    def guarded_getitem(obj: Any, index: Any) -> Any:
        if not readable(obj):
            raise refuse(f"items of type {type(obj).__name__}")
        return checked(obj[index], "an item")

    def guarded_iter(obj: Any, *sentinel: Any) -> Iterator[Any]:
        if isinstance(obj, _NEVER_HELD) or not (
            isinstance(obj, types.GeneratorType) or readable(obj) or sentinel
        ):
            raise refuse(f"iterating type {type(obj).__name__}")
        for item in iter(obj, *sentinel):
            yield checked(item, "iteration")

    async def guarded_aiter(obj: Any) -> AsyncIterator[Any]:
        if not (isinstance(obj, types.AsyncGeneratorType) or readable(obj)):
            raise refuse(f"iterating type {type(obj).__name__}")
        async for item in obj:
            yield checked(item, "iteration")

    def guarded_write(obj: Any) -> Any:
        if isinstance(obj, _WRITABLE) and type(obj).__module__ in ("builtins", "collections"):
            return obj
        if type(obj).__module__ == "block" and not isinstance(obj, type):
            return obj
        return full_write_guard(obj)

    def guarded_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        # C code running for the block (datetime's strftime and strptime)
        # imports through the block's builtins with a list as fromlist, which
        # block code cannot produce: its import statements pass None or a
        # tuple. Those get the real module; it goes back to the C caller only.
        if type(fromlist) is list and not level and name in _C_IMPORTS:
            return __import__(name)
        if level or name not in allowed or name not in MODULE_ATTRIBUTES:
            raise ImportError(f"import of {name!r} is not allowed in a sandboxed block")
        if name not in views:
            view = ModuleView(name, __import__(name), MODULE_ATTRIBUTES[name])
            exposed.update(id(value) for value in vars(view).values())
            views[name] = view
        return views[name]

    def inplacevar(op: str, x: Any, y: Any) -> Any:
        if op not in _INPLACE:
            raise SyntaxError(f"operator {op} is not allowed")
        return _INPLACE[op](x, y)

    names = dict(safe_builtins)
    for name in ("setattr", "delattr", "_getattr_"):
        names.pop(name, None)
    for name in _EXTRA_BUILTINS:
        names[name] = getattr(_builtins, name)
    names.update(__import__=guarded_import, getattr=guarded_getattr, hasattr=guarded_hasattr)
    names["iter"] = guarded_iter
    exposed.update(id(value) for value in names.values())
    return {
        "__builtins__": names,
        "__name__": "block",
        "__metaclass__": type,
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": guarded_iter,
        "_getaiter_": guarded_aiter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": guarded_write,
        "_print_": PrintCollector,
        "_inplacevar_": inplacevar,
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
    }
