"""Turn what a scenario observed into plain data that two backends can be compared on.

Both backends hand back their own objects: langchain_core messages or flowcore's,
LangGraph's ``Interrupt`` or flowcore's, pydantic models, dataclasses, exceptions.
A :class:`Normalizer` maps each of them onto dicts, lists, tuples and scalars,
keyed by what the object *means* rather than by its class, and replaces the
values that are random by design (uuid message ids, checkpoint ids, interrupt
ids) with placeholders numbered in order of first appearance. One normalizer
serves one scenario run, so the same random id seen twice gets the same
placeholder both times.

:func:`normalize_stream` applies the comparison rules for stream chunks: values in
order, updates as one multiset per superstep, custom and messages chunks in order
per node, debug and tasks events as one multiset per step.
"""

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Normalizer", "canonical", "error_name", "normalize_stream", "sorted_multiset"]

# uuid-shaped strings (any version, with or without dashes) are ids made up at run
# time: message ids from add_messages, checkpoint ids, task ids.
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)
_MESSAGE_TYPES = {"human", "ai", "system", "tool", "remove", "function", "chat", "developer"}


def canonical(value: Any) -> str:
    """A key that orders normalized values independently of dict insertion order."""
    return json.dumps(value, sort_keys=True, default=repr)


def sorted_multiset(values: Iterable[Any]) -> list[Any]:
    """Normalized values in canonical order: the form in which a multiset is compared."""
    return sorted(values, key=canonical)


def _class_name(value: Any) -> str:
    return type(value).__name__


def error_name(error: Any) -> str | None:
    """The type name of a task error, given as the exception or as its repr string.

    LangGraph keeps a failed task's error in the checkpoint as ``repr(exc)``, so
    ``"KeyError('x')"`` and ``KeyError('x')`` both become ``"KeyError"``.
    """
    if error is None:
        return None
    if isinstance(error, BaseException):
        return _class_name(error)
    return str(error).split("(", 1)[0].strip()


def _is_message(value: Any) -> bool:
    kind = getattr(value, "type", None)
    return (
        not isinstance(value, type | Mapping)
        and isinstance(kind, str)
        and kind in _MESSAGE_TYPES
        and hasattr(value, "content")
        and hasattr(value, "id")
    )


class Normalizer:
    """Maps backend objects onto plain comparable data; one instance per scenario run."""

    def __init__(self) -> None:
        self._placeholders: dict[str, dict[str, str]] = {}

    def placeholder(self, kind: str, raw: str) -> str:
        """The stable stand-in for a random ``raw`` id of the given kind."""
        table = self._placeholders.setdefault(kind, {})
        if raw not in table:
            table[raw] = f"<{kind}-{len(table) + 1}>"
        return table[raw]

    def _id(self, raw: Any) -> Any:
        if isinstance(raw, str) and _UUID.match(raw):
            return self.placeholder("id", raw)
        return raw

    def __call__(self, value: Any) -> Any:
        """Normalize ``value`` recursively."""
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self._id(value)
        if isinstance(value, BaseException):
            return {"raised": _class_name(value)}
        if _is_message(value):
            return self._message(value)
        name = _class_name(value)
        if name == "Interrupt" and hasattr(value, "value"):
            raw_id = getattr(value, "id", None)
            return {
                "interrupt": self(value.value),
                "id": None if raw_id is None else self.placeholder("interrupt", str(raw_id)),
            }
        if name == "Send" and hasattr(value, "node") and hasattr(value, "arg"):
            return {"send": value.node, "arg": self(value.arg)}
        if name == "Command" and hasattr(value, "goto"):
            return {
                "command": {
                    "graph": value.graph,
                    "update": self(value.update),
                    "resume": self(value.resume),
                    "goto": self(value.goto),
                }
            }
        if name == "StateSnapshot":
            return self.snapshot(value)
        if isinstance(value, Mapping):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, set | frozenset):
            return {"set": sorted_multiset(self(v) for v in value)}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: self(getattr(value, f.name)) for f in dataclasses.fields(value)}
            return {"dataclass": name, "fields": fields}
        if hasattr(value, "model_dump") and hasattr(type(value), "model_fields"):
            fields = {k: self(getattr(value, k)) for k in type(value).model_fields}
            return {"model": name, "fields": fields}
        if callable(value):
            return {"callable": getattr(value, "__name__", name)}
        return {"object": name}

    def _message(self, message: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": message.type, "id": self._id(message.id)}
        if message.type == "remove":
            return out
        out["content"] = self(message.content)
        out["name"] = getattr(message, "name", None)
        if message.type == "ai":
            out["tool_calls"] = self(list(getattr(message, "tool_calls", None) or []))
        if message.type == "tool":
            out["tool_call_id"] = getattr(message, "tool_call_id", None)
        return out

    def snapshot(
        self, snapshot: Any, *, metadata: bool = False, tasks: bool = False
    ) -> dict[str, Any]:
        """A ``StateSnapshot`` as its values, next nodes and pending interrupts.

        ``metadata`` adds the checkpoint's ``source`` and ``step``; ``tasks`` adds
        each pending task's name, error type and interrupts.
        """
        out: dict[str, Any] = {
            "values": self(snapshot.values),
            "next": self(snapshot.next),
            "interrupts": self(tuple(getattr(snapshot, "interrupts", ()) or ())),
        }
        if metadata:
            meta = snapshot.metadata or {}
            out["source"] = meta.get("source")
            out["step"] = meta.get("step")
        if tasks:
            out["tasks"] = [
                {
                    "name": task.name,
                    "error": error_name(task.error),
                    "interrupts": self(tuple(task.interrupts)),
                }
                for task in snapshot.tasks
            ]
        return out


def _split_chunk(chunk: Any, modes: Sequence[str], multi: bool, subgraphs: bool) -> Any:
    """(namespace, mode, payload) of one raw stream chunk."""
    namespace: tuple[str, ...] = ()
    if subgraphs:
        namespace, chunk = chunk[0], chunk[1:] if multi else chunk[1]
    if multi:
        mode, payload = chunk
    else:
        mode, payload = modes[0], chunk
    # "node:task-id" parts name a task by a random id; the node name is what counts.
    return tuple(part.split(":")[0] for part in namespace), mode, payload


def _by_node(entries: list[tuple[Any, Any]]) -> Any:
    """Chunks keyed by the node that wrote them, each node's chunks in order."""
    grouped: dict[Any, list[Any]] = {}
    for node, payload in entries:
        grouped.setdefault(node, []).append(payload)
    return grouped


def normalize_stream(
    norm: Normalizer,
    chunks: Sequence[Any],
    stream_mode: str | Sequence[str],
    *,
    subgraphs: bool = False,
) -> dict[str, Any]:
    """Apply the stream comparison rules to the raw chunks of one ``stream()`` call.

    Returns one entry per requested mode:

    * ``values``: the chunks in order.
    * ``updates``: a list of supersteps, each the multiset of its update chunks
      (LangGraph emits them in completion order). A root ``values`` chunk closes
      a superstep when ``values`` was streamed too; otherwise a ``debug``/``tasks``
      task-start event of a new step opens one; with neither, the whole run is
      one multiset. Empty supersteps are dropped.
    * ``custom``: dict chunks that carry a ``"node"`` key are grouped per node,
      in order; other chunks are kept in order.
    * ``messages``: ``(message, node)`` pairs grouped per node, in order.
    * ``debug``: per step, the multiset of ``(type, task name, result)`` events
      (checkpoint events contribute the sorted ``next`` nodes); timestamps and
      ids are dropped.
    * ``tasks``: the multiset of ``(task name, result)`` per task-start batch.
    * ``checkpoints``: ``(values, next, source, step)`` in order.

    With ``subgraphs=True`` every payload is paired with its namespace (node
    names only).
    """
    multi = not isinstance(stream_mode, str)
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    split = [_split_chunk(c, modes, multi, subgraphs) for c in chunks]

    def tagged(namespace: tuple[str, ...], payload: Any) -> Any:
        return (namespace, payload) if subgraphs else payload

    out: dict[str, Any] = {}
    for mode in modes:
        if mode == "values":
            out[mode] = [tagged(ns, norm(p)) for ns, m, p in split if m == "values"]
        elif mode == "updates":
            out[mode] = _updates_by_superstep(norm, split, modes, tagged)
        elif mode == "custom":
            entries = [(ns, norm(p)) for ns, m, p in split if m == "custom"]
            if entries and all(isinstance(p, dict) and "node" in p for _, p in entries):
                out[mode] = _by_node([((ns, p["node"]), p) for ns, p in entries])
            else:
                out[mode] = [tagged(ns, p) for ns, p in entries]
        elif mode == "messages":
            out[mode] = _by_node(
                [
                    ((ns, p[1].get("langgraph_node")), norm(p[0]))
                    for ns, m, p in split
                    if m == "messages"
                ]
            )
        elif mode == "debug":
            steps: dict[int, list[Any]] = {}
            for ns, m, p in split:
                if m == "debug":
                    steps.setdefault(p["step"], []).append(tagged(ns, _debug_event(norm, p)))
            out[mode] = {step: sorted_multiset(events) for step, events in steps.items()}
        elif mode == "tasks":
            out[mode] = sorted_multiset(
                tagged(ns, _task_event(norm, p)) for ns, m, p in split if m == "tasks"
            )
        elif mode == "checkpoints":
            out[mode] = [
                tagged(
                    ns,
                    {
                        "values": norm(p["values"]),
                        "next": norm(p["next"]),
                        "source": p["metadata"].get("source"),
                        "step": p["metadata"].get("step"),
                    },
                )
                for ns, m, p in split
                if m == "checkpoints"
            ]
        else:
            out[mode] = [tagged(ns, norm(p)) for ns, m, p in split if m == mode]
    return out


def _updates_by_superstep(
    norm: Normalizer, split: list[Any], modes: Sequence[str], tagged: Any
) -> list[list[Any]]:
    groups: list[list[Any]] = [[]]
    seen_step: Any = None
    for ns, mode, payload in split:
        if mode == "updates":
            groups[-1].append(tagged(ns, norm(payload)))
        elif mode == "values" and ns == ():
            groups.append([])
        elif (
            "values" not in modes
            and mode in ("debug", "tasks")
            and ns == ()
            and _is_task_start(mode, payload)
        ):
            step = payload["step"] if mode == "debug" else None
            if mode == "tasks" or step != seen_step:
                groups.append([])
                seen_step = step
    return [sorted_multiset(g) for g in groups if g]


def _is_task_start(mode: str, payload: Any) -> bool:
    if mode == "debug":
        return bool(payload.get("type") == "task")
    return "result" not in payload


def _debug_event(norm: Normalizer, payload: Mapping[str, Any]) -> Any:
    kind = payload["type"]
    body = payload["payload"]
    if kind == "checkpoint":
        return (kind, sorted(body.get("next", [])), norm(body.get("values")))
    if kind == "task":
        return (kind, body["name"], None)
    return (kind, body["name"], _task_event(norm, body)[1])


def _task_event(norm: Normalizer, payload: Mapping[str, Any]) -> tuple[str, Any]:
    if "result" not in payload:
        return (payload["name"], "start")
    error = payload.get("error")
    return (
        payload["name"],
        {
            "result": norm(payload.get("result")),
            "error": error_name(error),
            "interrupts": len(payload.get("interrupts") or ()),
        },
    )
