"""Spec: each way a run's data leaves has one seam, and each seam keeps known secrets in.

Seams: the checkpoint serializer (placeholders for `Secret`, scrubbing with a
redactor), the history record, the providers (key never in repr or errors),
block schemas marking fields secret, the engine (events, state, checkpoints,
errors), the block executor (streamed text, secret fields, memory), the
pipeline runner (inputs feeding secret fields) and the CLI (everything it
prints). Each test checks the seam against a run or call that really leaks
without it.
"""

from __future__ import annotations

import importlib.util
import io
import json
import secrets
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypedDict

import pytest

from flowcore import START, Graph, Resume, interrupt
from flowcore.blocks import BlockDefinition, BlockExecutor
from flowcore.blocks.node import BlockState, add_block
from flowcore.checkpoint.serde import JsonSerializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer
from flowcore.cli import main
from flowcore.errors import BlockDefinitionError
from flowcore.events import Event, TextDeltaEvent
from flowcore.history import SqliteRunHistory, record_from_result
from flowcore.llm import (
    LLMRequest,
    LLMResponse,
    Message,
    ProviderError,
    ProviderRegistry,
    StreamEvent,
    Usage,
)
from flowcore.llm.anthropic_provider import AnthropicProvider
from flowcore.llm.openai_provider import OpenAIProvider
from flowcore.memory import InMemoryStore
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.runner import PipelineRunner
from flowcore.scheduler import NodeContext
from flowcore.secrets import PLACEHOLDER, Secret, SecretRedactor, SecretUnavailableError


def _loopback() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "llm" / "loopback.py"
    spec = importlib.util.spec_from_file_location("secrets_seams_loopback", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


loopback = _loopback()


def canary() -> str:
    return "cn-" + secrets.token_urlsafe(18)


def dump(value: Any) -> str:
    return json.dumps(value, default=repr, ensure_ascii=False)


def raw_db(path: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            data += part.read_bytes()
    return data


# ------------------------------------------------------------------- serde
def test_the_serializer_stores_a_secret_as_a_placeholder_that_loads_as_a_stand_in() -> None:
    key = canary()
    serde = JsonSerializer()

    data = serde.dumps({"auth": Secret(key, name="API_KEY"), "n": (1, 2)})
    loaded = serde.loads(data)

    assert key.encode() not in data
    assert b'"API_KEY"' in data
    assert loaded["n"] == (1, 2)
    assert loaded["auth"].name == "API_KEY"
    assert not loaded["auth"].available
    with pytest.raises(SecretUnavailableError):
        loaded["auth"].reveal()


def test_a_serializer_with_a_redactor_scrubs_strings_keys_and_bytes() -> None:
    key = canary()
    plain, redacting = JsonSerializer(), JsonSerializer(redactor=SecretRedactor([key]))
    value = {"echo": f"key={key}", key: [key.encode()], "nested": ({"t": key},)}

    assert key.encode() in plain.dumps(value)
    stored = redacting.loads(redacting.dumps(value))
    assert stored == {
        "echo": "key=[REDACTED]",
        "[REDACTED]": [b"[REDACTED]"],
        "nested": ({"t": "[REDACTED]"},),
    }


async def test_a_checkpoint_store_with_a_redacting_serializer_writes_no_secret(
    tmp_path: Path,
) -> None:
    key = canary()

    class S(TypedDict, total=False):
        note: str

    def leak(state: Any) -> dict[str, Any]:
        return {"note": f"fetched with {key}"}

    db = tmp_path / "cp.db"
    serde = JsonSerializer(redactor=SecretRedactor([key]))
    async with SqliteCheckpointer(db, serializer=serde) as cp:
        app = Graph(S).add_node("leak", leak).add_edge(START, "leak").compile(checkpointer=cp)
        result = await app.run({"note": key}, thread_id="t")  # no run redactor at all
        history = await app.get_state_history("t")
        assert key.encode() not in raw_db(db)

    assert result.state["note"] == f"fetched with {key}"  # in memory, as computed
    assert all(key not in dump(dict(s.values)) + dump(dict(s.metadata)) for s in history)


# ----------------------------------------------------------------- history
def test_a_history_record_is_scrubbed_with_the_runs_redactor() -> None:
    from flowcore.result import NodeRun, RunResult

    key = canary()
    error = RuntimeError(f"denied for {key}")
    result = RunResult(
        run_id="r1",
        graph_name="g",
        graph_version="1",
        status="failed",
        state={"echo": key},
        node_runs=(
            NodeRun("a", 1, 1, "completed", {"echo": key}, 0.0, 0.1, 1),
            NodeRun("b", 1, 2, "failed", None, 0.1, 0.1, 1, error),
        ),
        errors=(error,),
    )

    plain = record_from_result(
        result,
        pipeline_id="p",
        pipeline_version=1,
        user_id=None,
        started_at=0.0,
        inputs={"token": key},
    )
    record = record_from_result(
        result,
        pipeline_id="p",
        pipeline_version=1,
        user_id=None,
        started_at=0.0,
        inputs={"token": key},
        redactor=SecretRedactor([key]),
    )

    assert key in dump(plain.to_data())
    assert key not in dump(record.to_data())
    assert record.errors == ("RuntimeError: denied for [REDACTED]",)
    assert record.nodes_by_name["a"].outputs == {"echo": PLACEHOLDER}
    assert record.inputs == {"token": PLACEHOLDER}


# --------------------------------------------------------------- providers
@pytest.fixture
async def server() -> AsyncIterator[Any]:
    async with loopback.LoopbackServer() as running:
        yield running


async def test_an_openai_key_is_never_in_the_providers_repr_or_errors(server: Any) -> None:
    key = "sk-" + secrets.token_urlsafe(24)
    provider = OpenAIProvider(api_key=key, model="gpt-test", base_url=f"{server.url}/v1")
    # Servers echo the key they refused; this one does, in every form.
    server.replies.append(
        loopback.Reply(
            401,
            {"error": {"message": f"Incorrect API key provided: {key}", "code": "invalid_api_key"}},
        )
    )
    try:
        with pytest.raises(ProviderError) as raised:
            await provider.complete(LLMRequest((Message("user", "hi"),)))
    finally:
        await provider.aclose()

    error = raised.value
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"  # it was sent
    assert error.kind == "auth"
    for text in (
        repr(provider),
        str(provider),
        str(error),
        repr(error),
        str(error.__cause__),
        repr(error.__cause__),
        dump(getattr(error.__cause__, "body", None)),
    ):
        assert key not in text
    assert "[REDACTED]" in str(error)
    assert isinstance(provider.api_key, Secret)
    assert provider.api_key.reveal() == key


async def test_an_anthropic_key_is_never_in_the_providers_repr_or_errors(server: Any) -> None:
    key = "sk-ant-" + secrets.token_urlsafe(24)
    provider = AnthropicProvider(api_key=key, model="claude-test", base_url=server.url)
    server.replies.append(
        loopback.Reply(
            401,
            {"type": "error", "error": {"type": "authentication_error", "message": f"bad {key}"}},
        )
    )
    try:
        with pytest.raises(ProviderError) as raised:
            await provider.complete(LLMRequest((Message("user", "hi"),)))
    finally:
        await provider.aclose()

    assert key not in repr(provider)
    assert key not in str(raised.value)
    assert key not in str(raised.value.__cause__)


# ------------------------------------------------------------ block schema
def test_a_block_marks_fields_secret_in_its_schemas() -> None:
    block = BlockDefinition(
        id="call_api",
        name="Call API",
        description="Call an API with a token",
        kind="tool",
        tool="http_get",
        input_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "token": {"type": "string", "secret": True},
                "password": {"type": "string", "writeOnly": True},
            },
        },
        output_schema={"properties": {"session": {"type": "string", "secret": True}}},
    )

    assert block.secret_inputs == {"token", "password"}
    assert block.secret_outputs == {"session"}
    with pytest.raises(BlockDefinitionError, match=r"token\.secret must be true or false"):
        BlockDefinition.from_data(
            {
                **block.model_dump(),
                "input_schema": {"properties": {"token": {"type": "string", "secret": "yes"}}},
            }
        )


# ------------------------------------------------------------------ engine
class Flow(TypedDict, total=False):
    token: Any
    echo: str
    answer: Any


def leaky_graph(key: str) -> Graph:
    """Every way a node can leak: its update, a custom event, an interrupt, an error."""

    async def fetch(state: Any, ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("progress", {"using": key})
        return {"echo": f"the server said: token {key} accepted"}

    async def confirm(state: Any) -> dict[str, Any]:
        return {"answer": interrupt({"question": f"Send {key} to the bank?"})}

    async def fail(state: Any) -> dict[str, Any]:
        raise PermissionError(f"the bank refused token {key}")

    graph = Graph(Flow)
    graph.add_node("fetch", fetch).add_node("confirm", confirm).add_node("fail", fail)
    graph.add_edge(START, "fetch").add_edge("fetch", "confirm").add_edge("confirm", "fail")
    return graph


async def run_leaky(tmp_path: Path, key: str, redactor: SecretRedactor | None) -> dict[str, Any]:
    db = tmp_path / f"engine-{redactor is not None}.db"
    events: list[Event] = []
    async with SqliteCheckpointer(db) as cp:  # a plain store: the engine is the seam
        app = leaky_graph(key).compile(checkpointer=cp)
        async with app.stream({"token": Secret(key)}, thread_id="t", redactor=redactor) as s:
            events += [e async for e in s]
        async with app.stream(Resume("yes"), thread_id="t", redactor=redactor) as s:
            events += [e async for e in s]
            result = await s.result()
        snapshots = await app.get_state_history("t")
        writes = [await cp.get_writes("t", snap.checkpoint_id) for snap in snapshots]
        raw = raw_db(db)
    return {
        "events": dump([e.to_dict() for e in events]),
        "state": dump(dict(result.state)),
        "errors": dump([repr(e) for e in result.errors] + [str(e) for e in result.errors]),
        "causes": dump([repr(e.__cause__) for e in result.errors]),
        "checkpoints": dump([[dict(s.values), dict(s.metadata)] for s in snapshots]),
        "writes": dump([[w.payload for w in ws] for ws in writes]),
        "raw": raw.decode("utf-8", "replace"),
    }


async def test_without_a_redactor_the_engine_leaks_everywhere(tmp_path: Path) -> None:
    key = canary()

    seen = await run_leaky(tmp_path, key, None)

    assert {place for place, text in seen.items() if key in text} == {
        "events",
        "state",
        "errors",
        "causes",
        "checkpoints",
        "writes",
        "raw",
    }


async def test_the_engine_keeps_a_secret_out_of_events_state_checkpoints_and_errors(
    tmp_path: Path,
) -> None:
    key = canary()

    seen = await run_leaky(tmp_path, key, SecretRedactor())  # learns the Secret input

    assert {place for place, text in seen.items() if key in text} == set()
    assert "the server said: token [REDACTED] accepted" in seen["state"]
    assert "the bank refused token [REDACTED]" in seen["errors"]


async def test_a_node_still_reads_the_input_it_was_given(tmp_path: Path) -> None:
    key = canary()
    seen: list[Any] = []

    class S(TypedDict, total=False):
        token: Any

    async def use(state: Any, ctx: NodeContext) -> None:
        seen.append(ctx.inputs["token"])

    graph = Graph(S).add_node("use", use, inputs={"token": "<<input.token>>"})
    app = graph.add_edge(START, "use").compile()
    result = await app.run({"token": key}, redactor=SecretRedactor([key]))

    assert seen == [key]  # the value as given, in memory
    assert result.state["token"] == PLACEHOLDER  # never stored as is


async def test_a_secret_input_is_not_stored_so_a_resumed_run_says_it_is_missing(
    tmp_path: Path,
) -> None:
    key = canary()

    class S(TypedDict, total=False):
        token: Any
        ok: Any

    def ask(state: Any) -> dict[str, Any]:
        return {"ok": interrupt("go on?")}

    async def use(state: Any, ctx: NodeContext) -> dict[str, Any]:
        return {"ok": len(ctx.inputs["token"].reveal())}

    graph = Graph(S).add_node("ask", ask).add_node("use", use, inputs={"token": "<<input.token>>"})
    graph.add_edge(START, "ask").add_edge("ask", "use")
    async with SqliteCheckpointer(tmp_path / "pause.db") as cp:
        app = graph.compile(checkpointer=cp)
        paused = await app.run({"token": Secret(key, name="token")}, thread_id="t")
        resumed = await app.run(Resume("yes"), thread_id="t")

    assert paused.status == "interrupted"
    assert resumed.status == "failed"
    assert isinstance(resumed.errors[0].__cause__, SecretUnavailableError)
    assert "secret 'token' has no value here" in str(resumed.errors[0])


# -------------------------------------------------------- block executor
class Pieces:
    """A provider that streams one answer in the given pieces."""

    name = "pieces"

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("".join(self.answers.pop(0)), (), Usage(1, 1), "m", "stop")

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        pieces = self.answers.pop(0)
        for piece in pieces:
            yield StreamEvent(kind="text", text=piece)
        yield StreamEvent(kind="usage", usage=Usage(1, 1))
        yield StreamEvent(kind="done", response=LLMResponse("".join(pieces), (), Usage(1, 1), "m"))


async def test_a_secret_split_across_model_deltas_never_streams_in_pieces() -> None:
    key = canary()
    answer = json.dumps({"reply": f"Your key is {key}"})
    cut = answer.index(key) + len(key) // 2
    block = BlockDefinition(
        id="chat",
        name="Chat",
        description="Reply",
        kind="llm",
        output_keys=["reply"],
        prompt_template="Hi",
    )
    graph = Graph(BlockState)
    model = Pieces([answer[:cut], answer[cut:]])
    executor = BlockExecutor(providers=ProviderRegistry.single(model))
    app = add_block(graph, "chat", block, executor).add_edge(START, "chat").compile()

    async with app.stream({}, redactor=SecretRedactor([key])) as stream:
        deltas = [e.text for e in [e async for e in stream] if isinstance(e, TextDeltaEvent)]

    assert "".join(deltas) == json.dumps({"reply": "Your key is [REDACTED]"})
    assert not any(key[:6] in d or key[-6:] in d for d in deltas)


async def test_secret_fields_are_learned_hidden_from_a_human_and_wrapped_on_output() -> None:
    token, session = canary(), canary()
    login = BlockDefinition(
        id="login",
        name="Login",
        description="Log in",
        kind="python",
        source_code=f"async def execute(inputs, context):\n    return {{'session': {session!r}}}\n",
        input_schema={"properties": {"token": {"type": "string", "secret": True}}},
        output_schema={"properties": {"session": {"type": "string", "secret": True}}},
    )
    use = BlockDefinition(
        id="use",
        name="Use",
        description="Use the session",
        kind="python",
        source_code="async def execute(inputs, context):\n"
        "    return {'n': len(inputs['session'])}\n",
        input_keys=["session"],
        output_keys=["n"],
    )
    ask = BlockDefinition(
        id="approve",
        name="Approve",
        description="Ask a human",
        kind="human",
        prompt_template="Approve the login?",
        output_keys=["ok"],
        input_schema={"properties": {"token": {"type": "string", "secret": True}}},
    )
    executor = BlockExecutor()
    graph = Graph(BlockState)
    add_block(graph, "login", login, executor, inputs={"token": token})  # a plain literal
    add_block(graph, "use", use, executor, inputs={"session": "<<login.session>>"})
    add_block(graph, "approve", ask, executor, inputs={"token": token})
    graph.add_edge(START, "login").add_edge("login", "use").add_edge("use", "approve")
    redactor = SecretRedactor()

    async with graph.compile().stream({}, redactor=redactor) as stream:
        events = [e.to_dict() async for e in stream]
        result = await stream.result()

    assert result.status == "interrupted", result.errors
    assert result.interrupts[0].value["inputs"] == {"token": Secret(token)}  # never shown
    assert isinstance(result.state["results"]["login"]["session"], Secret)
    assert result.state["results"]["use"] == {"n": len(session)}  # usable downstream
    assert token not in dump(events)
    assert session not in dump(events)
    assert len(redactor) == 2  # both taught to the run's redactor


async def test_a_memory_block_never_saves_a_secret() -> None:
    key = canary()
    save = BlockDefinition(
        id="remember",
        name="Remember",
        description="Save",
        kind="memory_save",
        input_keys=["memory_key", "memory_value"],
        output_keys=["saved"],
    )
    memory = InMemoryStore()
    executor = BlockExecutor(memory=memory)
    app = add_block(
        Graph(BlockState),
        "remember",
        save,
        executor,
        inputs={"memory_key": "k", "memory_value": {"note": f"key {key}", "raw": Secret(key)}},
    )
    await app.add_edge(START, "remember").compile().run({}, redactor=SecretRedactor([key]))

    item = await memory.get(("users", "anonymous", "memory"), "k")
    assert item is not None
    assert item.value == {"note": "key [REDACTED]", "raw": PLACEHOLDER}


# ---------------------------------------------------------- pipeline runner
async def test_a_run_input_feeding_a_secret_field_is_wrapped_before_the_run(
    tmp_path: Path, block_store: Any
) -> None:
    key = canary()
    await block_store.save(
        BlockDefinition(
            id="call",
            name="Call",
            description="Call with a token",
            kind="python",
            source_code="async def execute(inputs, context):\n"
            "    return {'ok': len(inputs['token']) > 0}\n",
            input_schema={"properties": {"token": {"type": "string", "secret": True}}},
            output_keys=["ok"],
        )
    )
    pipeline = Pipeline.from_data(
        {
            "id": "p",
            "name": "P",
            "nodes": [{"id": "call", "block_id": "call", "inputs": {"token": "<<input.token>>"}}],
        }
    )
    db = tmp_path / "runs.db"
    async with SqliteCheckpointer(db) as cp, SqliteRunHistory(db) as history:
        runner = PipelineRunner(
            blocks=block_store,
            executor=BlockExecutor(),
            checkpointer=cp,
            history=history,
            redactor=SecretRedactor(),
        )
        guarded = await runner.guard_inputs(pipeline, {"token": key})
        result = await runner.run(pipeline, {"token": key})
        record = await history.get(result.run_id)
        assert key.encode() not in raw_db(db)

    assert isinstance(guarded["token"], Secret)
    assert result.status == "completed", result.errors
    assert result.state["results"]["call"] == {"ok": True}  # the block got the real value
    assert key not in dump(record.to_data())


# --------------------------------------------------------------------- CLI
def test_the_cli_redacts_what_it_prints_with_secrets_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = canary()
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "FLOWCORE_BASE_URL",
        "OPENAI_BASE_URL",
        "FLOWCORE_PROVIDER",
        "FLOWCORE_MODEL",
        "FLOWCORE_DB",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PAYMENTS_API_KEY", key)
    blocks = tmp_path / "blocks.json"
    blocks.write_text(
        json.dumps(
            {
                "format": "flowcore-blocks",
                "version": 1,
                "blocks": [
                    {
                        "id": "greet",
                        "version": 1,
                        "name": "Greet",
                        "description": "Greet a name",
                        "kind": "llm",
                        "input_keys": ["name"],
                        "output_keys": ["greeting"],
                        "prompt_template": "Greet {{ name }} warmly.",
                    }
                ],
            }
        )
    )
    plan = tmp_path / "greeting.json"
    plan.write_text(
        json.dumps(
            {
                "id": "greeting",
                "name": "Greeting",
                "nodes": [
                    {"id": "hello", "block_id": "greet", "inputs": {"name": "<<input.name>>"}}
                ],
            }
        )
    )
    db = tmp_path / "cli.db"

    def cli(*argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main([*argv, "--db", str(db)], stdout=out, stderr=err)
        return code, out.getvalue() + err.getvalue()

    # The offline model echoes its prompt, so the name comes back in the output.
    ran = cli("run", str(plan), "--input", f"name={key}", "--blocks", str(blocks))
    listed = cli("runs", "list", "--json")
    shown = cli("runs", "show", json.loads(listed[1])[0]["run_id"], "--json")

    assert ran[0] == 0, ran[1]
    assert "offline answer" in ran[1] or "hello" in ran[1]
    assert PLACEHOLDER in ran[1]
    for _, text in (ran, listed, shown):
        assert key not in text
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert key.encode() not in raw_db(db)
