"""Spec (issue 7, must show): no planted secret leaves a run, in any form, through any output.

Unique random canaries are planted where secrets live: the environment (an
``*_API_KEY`` a tool echoes), the provider's configuration (its API key,
which the model server echoes back, split across two streamed deltas), block
input fields marked secret (one returned in a block's output, one raised in
an exception), a tool's output (a vault password, and a database URL with a
URL-encoded password), a model's answer (a CRM secret, a base64 ``Basic``
header, a JSON-escaped webhook secret). A real pipeline runs through
``InProcExecutor`` with a ``SecretRedactor``, and through the ``flowcore``
CLI in a subprocess, both on real SQLite files. Then every byte they
produced is scanned for every canary in every encoded form: AiEvents as
JSON, logs, CLI stdout and stderr, decoded checkpoints and pending writes,
the history, the raw database, -wal and -shm files (while open and after
closing), error reprs and the mermaid export. Zero hits.

The scan is shown to work: the same runs without a redactor and without
the secret marks leak every single canary, and the scan finds them.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import io
import json
import logging
import os
import secrets
import sys
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from flowcore.blocks import BlockDefinition, BlockExecutor, SqliteBlockStore
from flowcore.checkpoint.serde import JsonSerializer
from flowcore.checkpoint.sqlite import SqliteCheckpointer
from flowcore.cli.workspace import load_tools
from flowcore.history import SqliteRunHistory
from flowcore.llm import ProviderRegistry
from flowcore.llm.openai_provider import OpenAIProvider
from flowcore.pipeline.model import Pipeline
from flowcore.pipeline.runner import PipelineRunner
from flowcore.port import NO_REDACTION, Caller, InProcExecutor, RunRequest, event_to_dict
from flowcore.secrets import SecretRedactor
from flowcore.tools import ToolRunner

ROOT = Path(__file__).resolve().parents[2]


def _loopback() -> ModuleType:
    path = ROOT / "tests" / "llm" / "loopback.py"
    spec = importlib.util.spec_from_file_location("secrets_canary_loopback", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


loopback = _loopback()


# ------------------------------------------------------------------ canaries
@dataclass(frozen=True)
class Canaries:
    """One fresh random value per place a secret can come from."""

    env: str  # CANARY_SERVICE_API_KEY, echoed by the diagnostics tool
    provider: str  # the OpenAI provider's API key, echoed by the model server in two halves
    field: str  # block input marked secret, returned in a block's output
    exception: str  # block input marked secret, raised in an exception message
    tool: str  # VAULT_SECRET, the vault tool's password output
    url: str  # DB_PASSWORD, URL-encoded inside the vault tool's DSN output
    model: str  # CRM_SECRET, in the model's answer
    b64: str  # BILLING_TOKEN, base64-encoded in a Basic header in the model's answer
    json: str  # WEBHOOK_SECRET, JSON-escaped in the model's answer

    @classmethod
    def fresh(cls) -> Canaries:
        def token(role: str) -> str:
            return f"{role}-{secrets.token_urlsafe(18)}"

        return cls(
            env=token("env"),
            provider="sk-" + token("prov"),
            field=token("field"),
            exception=token("exc"),
            tool=token("vault"),
            url=token("url") + "/p@ss+w0rd&x=1?",  # every URL encoder changes it
            model=token("model"),
            b64=token("b64"),
            json=token("json") + '"q\\u"\\z',  # quotes and backslashes: JSON escapes them
        )

    def items(self) -> dict[str, str]:
        return dict(vars(self))

    def environment(self) -> dict[str, str]:
        """Where these secrets live in a deployment: credential-named variables."""
        return {
            "CANARY_SERVICE_API_KEY": self.env,
            "VAULT_SECRET": self.tool,
            "DB_PASSWORD": self.url,
            "CRM_SECRET": self.model,
            "BILLING_TOKEN": self.b64,
            "WEBHOOK_SECRET": self.json,
        }

    def tool_values(self) -> dict[str, str]:
        return {"service": self.env, "vault": self.tool, "db": self.url}


def forms(value: str) -> dict[str, str]:
    """Every way the scan looks for ``value``, computed here, independently of flowcore."""
    raw = value.encode()
    std, url = base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()
    found = {
        "raw": value,
        "base64": std,
        "base64 unpadded": std.rstrip("="),
        "urlsafe base64": url,
        "urlsafe base64 unpadded": url.rstrip("="),
        "quote": urllib.parse.quote(value, safe=""),
        "quote keeping /": urllib.parse.quote(value),
        "quote_plus": urllib.parse.quote_plus(value),
        "json": json.dumps(value)[1:-1],
        "json twice": json.dumps(json.dumps(value))[1:-1],
        "repr": repr(value)[1:-1],
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
    }
    # Inside longer base64 text: the middle characters that depend on `value` alone.
    for k in (1, 2, 3):
        encoded = base64.b64encode(b"x" * k + raw + b"yz").decode()
        start = (8 * k + 5) // 6
        middle = encoded[start : (8 * (k + len(raw))) // 6]
        found[f"base64 after {k} bytes"] = middle
        found[f"urlsafe base64 after {k} bytes"] = middle.replace("+", "-").replace("/", "_")
    # Base32 groups 5 bytes into 8 characters: 5 alignments, in either case.
    for k in range(5):
        encoded = base64.b32encode(b"x" * k + raw + b"yz").decode()
        middle = encoded[(8 * k + 4) // 5 : (8 * (k + len(raw))) // 5]
        found[f"base32 after {k} bytes"] = middle
        found[f"lower-case base32 after {k} bytes"] = middle.lower()
    return found


@dataclass
class Scan:
    """What was scanned, and every (canary, form, source) hit."""

    canaries: dict[str, str]
    sources: dict[str, bytes] = field(default_factory=dict)

    def add(self, name: str, data: str | bytes) -> None:
        chunk = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        self.sources[name] = self.sources.get(name, b"") + chunk + b"\n"

    def hits(self) -> list[tuple[str, str, str]]:
        found = []
        for canary, value in self.canaries.items():
            for form, text in forms(value).items():
                needle = text.encode()
                found += [(canary, form, s) for s, data in self.sources.items() if needle in data]
        return found

    def report(self, label: str) -> str:
        n = len(self.canaries)
        m = len({t for v in self.canaries.values() for t in forms(v).values()})
        k = len(self.sources)
        size = sum(len(d) for d in self.sources.values())
        hits = self.hits()
        return (
            f"{label}: {n} canaries x {m} encoded forms x {k} sources "
            f"({size:,} bytes) scanned, {len(hits)} hits"
        )


def dump(value: Any) -> str:
    return json.dumps(value, default=repr, ensure_ascii=False)


def raw_files(db: Path) -> dict[str, bytes]:
    files = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db}{suffix}")
        if path.exists():
            files[suffix or "-db"] = path.read_bytes()
    return files


# ---------------------------------------------------- the pipeline and tools
TOOLS_PY = '''
"""Canary tools: they leak what they hold, as real tools do."""

import json
import logging
import os
import urllib.parse

from pydantic import BaseModel

from flowcore.tools import Tool

log = logging.getLogger("canary.tools")


def _values():
    with open(os.environ["CANARY_TOOL_VALUES"], encoding="utf-8") as file:
        return json.load(file)


class NoArgs(BaseModel):
    pass


class Diagnosis(BaseModel):
    config: str


async def diagnostics(args):
    # Echoes its configuration, API key included, in a field it marks safe to show.
    return Diagnosis(config="service key=" + _values()["service"])


class Lookup(BaseModel):
    name: str


class Credentials(BaseModel):
    password: str
    dsn: str


async def vault_lookup(args):
    values = _values()
    dsn = "postgres://app:" + urllib.parse.quote(values["db"], safe="") + "@db/app"
    log.warning("vault answered %s for %s", values["vault"], dsn)
    return Credentials(password=values["vault"], dsn=dsn)


TOOLS = [
    Tool("diagnostics", "Service diagnostics", NoArgs, Diagnosis, diagnostics,
         allowlist={"config"}),
    Tool("vault_lookup", "Look up credentials", Lookup, Credentials, vault_lookup,
         allowlist={"dsn"}),
]
'''


def blocks(marked: bool) -> list[dict[str, Any]]:
    """The pipeline's blocks; ``marked=False`` drops the secret marks (the control run)."""

    def secret(name: str) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        if marked:
            schema["secret"] = True
        return {"type": "object", "properties": {name: schema}, "required": [name]}

    def block(block_id: str, kind: str, **more: Any) -> dict[str, Any]:
        return {
            "id": f"canary_{block_id}",
            "version": 1,
            "name": block_id,
            "description": block_id,
            "kind": kind,
            "max_retries": 0,
            **more,
        }

    return [
        block("diagnose", "tool", tool="diagnostics", output_keys=["config"]),
        block(
            "vault",
            "tool",
            tool="vault_lookup",
            input_keys=["name"],
            output_keys=["password", "dsn"],
        ),
        block("chat", "llm", prompt_template="Say hello.", output_keys=["reply"]),
        block(
            "summarize",
            "llm",
            prompt_template="Summarize: {{ text }}",
            input_keys=["text"],
            output_keys=["summary"],
        ),
        block(
            "authorize",
            "python",
            input_schema=secret("api_token"),
            output_keys=["status"],
            source_code="async def execute(inputs, context):\n"
            "    return {'status': 'authorized with ' + inputs['api_token']}\n",
        ),
        block(
            "notify",
            "python",
            input_schema=secret("smtp_password"),
            output_keys=["sent"],
            source_code="async def execute(inputs, context):\n"
            "    raise ValueError('SMTP login refused for password ' + inputs['smtp_password'])\n",
        ),
    ]


PIPELINE = {
    "id": "canary",
    "name": "Canary",
    "nodes": [
        {"id": "diagnose", "block_id": "canary_diagnose"},
        {"id": "vault", "block_id": "canary_vault", "inputs": {"name": "db"}},
        {"id": "chat", "block_id": "canary_chat"},
        {"id": "summarize", "block_id": "canary_summarize", "inputs": {"text": "<<chat.reply>>"}},
        {
            "id": "authorize",
            "block_id": "canary_authorize",
            "inputs": {"api_token": "<<input.api_token>>"},
        },
        {
            "id": "notify",
            "block_id": "canary_notify",
            "inputs": {"smtp_password": "<<input.smtp_password>>"},
        },
    ],
    "edges": [
        {"from": a, "to": b}
        for a, b in [
            ("diagnose", "vault"),
            ("vault", "chat"),
            ("chat", "summarize"),
            ("summarize", "authorize"),
            ("authorize", "notify"),
        ]
    ],
}


def model_replies(c: Canaries) -> list[Any]:
    """What the model server answers: the chat block's and the summarize block's streams."""
    chat = json.dumps({"reply": f"Hello! The key you sent me is {c.provider}. Keep it safe."})
    cut = chat.index(c.provider) + len(c.provider) // 2  # the key arrives in two halves
    basic = base64.b64encode(f"svc:{c.b64}".encode()).decode()
    summary = json.dumps(
        {"summary": f"CRM secret {c.model}; saw header Basic {basic}; webhook {c.json}"}
    )
    thirds = [
        summary[: len(summary) // 3],
        summary[len(summary) // 3 : 2 * len(summary) // 3],
        summary[2 * len(summary) // 3 :],
    ]
    return [loopback.openai_stream([chat[:cut], chat[cut:]]), loopback.openai_stream(thirds)]


@dataclass
class Project:
    dir: Path
    canaries: Canaries
    tools: Path
    values: Path

    def write(self, name: str, data: Any) -> Path:
        path = self.dir / name
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        return path


@pytest.fixture
def project(tmp_path: Path) -> Project:
    c = Canaries.fresh()
    p = Project(tmp_path, c, tmp_path / "canary_tools.py", tmp_path / "tool_values.json")
    p.write("canary_tools.py", TOOLS_PY)
    p.write("tool_values.json", c.tool_values())
    return p


@pytest.fixture
async def server() -> AsyncIterator[Any]:
    async with loopback.LoopbackServer() as running:
        yield running


@contextmanager
def captured_logs(redactor: SecretRedactor | None) -> Iterator[io.StringIO]:
    """Every log record of the run, as a handler on the root logger writes it."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    # As a deployment would: the filter on every handler (pytest's own capture included).
    handlers = list(root.handlers) if redactor is not None else []
    log_filter = None if redactor is None else redactor.logging_filter()
    for each in handlers:
        each.addFilter(log_filter)
    try:
        yield out
    finally:
        for each in handlers:
            each.removeFilter(log_filter)
        root.removeHandler(handler)


# ------------------------------------------------------------- in-process leg
async def run_in_process(
    project: Project, server: Any, scan: Scan, *, protected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline through InProcExecutor on one SQLite file; all it made goes to ``scan``."""
    c = project.canaries
    for name, value in c.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CANARY_TOOL_VALUES", str(project.values))
    redactor = SecretRedactor.from_environment() if protected else None
    provider = OpenAIProvider(api_key=c.provider, model="gpt-test", base_url=f"{server.url}/v1")
    if redactor is not None:
        redactor.add(provider.api_key)
    server.replies += model_replies(c)
    db = project.dir / f"inproc-{'protected' if protected else 'control'}.db"
    serde = None if redactor is None else JsonSerializer(redactor=redactor)
    pipeline = Pipeline.from_data(PIPELINE)
    tools = ToolRunner(load_tools([project.tools]))
    with captured_logs(redactor) as logs:
        async with (
            SqliteCheckpointer(db, serializer=serde) as checkpoints,
            SqliteBlockStore(db) as block_store,
            SqliteRunHistory(db, serializer=serde) as history,
        ):
            for data in blocks(marked=protected):
                await block_store.save(BlockDefinition.from_data(data))
            runner = PipelineRunner(
                blocks=block_store,
                executor=BlockExecutor(providers=ProviderRegistry.single(provider), tools=tools),
                checkpointer=checkpoints,
                history=history,
            )
            executor = InProcExecutor(runner=runner, redactor=redactor or NO_REDACTION)
            request = RunRequest(
                pipeline,
                {"api_token": c.field, "smtp_password": c.exception},
                Caller("req-canary", "trace-canary", user_id="ada"),
            )
            async with executor:
                handle = executor.run(request)
                events = [event_to_dict(e) async for e in handle]
                outcome = await handle.final
            assert outcome.status == "failed"  # notify raises, as planned
            ended = [e["node"] for e in events if e["type"] == "node_end"]
            planned = ["diagnose", "vault", "chat", "summarize", "authorize"]
            assert [n for n in ended if n in planned] == planned
            scan.add("AiEvents (JSON)", json.dumps(events, ensure_ascii=False))
            # A UI joins the deltas: a secret sent in halves shows up whole only here.
            deltas = [e["delta"] for e in events if e["type"] == "text_delta"]
            assert len(deltas) >= 2
            scan.add("text deltas, joined", "".join(deltas))
            scan.add("error reprs", repr(outcome) + "\n" + str(outcome.error))
            graph = await runner.compile(pipeline)
            scan.add("mermaid export", graph.to_mermaid())
            assert outcome.thread_id is not None
            snapshots = await graph.get_state_history(outcome.thread_id)
            assert snapshots
            for snap in snapshots:
                writes = await checkpoints.get_writes(outcome.thread_id, snap.checkpoint_id)
                scan.add(
                    "decoded checkpoints",
                    dump(
                        [dict(snap.values), dict(snap.metadata), [i.value for i in snap.interrupts]]
                    ),
                )
                scan.add("pending writes", dump([w.payload for w in writes]))
            for record in await history.list():
                scan.add("run history", dump(record.to_data()))
            open_files = raw_files(db)
            assert "-wal" in open_files  # scanned while the WAL holds the latest pages
            for part, data in open_files.items():
                scan.add(f"database{part} (open)", data)
        await provider.aclose()
    for part, data in raw_files(db).items():
        scan.add(f"database{part} (closed)", data)
    scan.add("logs", logs.getvalue())
    assert "vault answered" in logs.getvalue()


# --------------------------------------------------------------------- CLI leg
async def flowcore_cli(env: dict[str, str], *argv: str) -> tuple[int, bytes, bytes]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "flowcore",
        *argv,
        env=env,
        cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out, err


def base_environment() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PYTHONPATH"] = str(ROOT)
    return env


async def run_cli(project: Project, server: Any, scan: Scan, *, protected: bool) -> None:
    """The same pipeline through the ``flowcore`` command, its environment holding the secrets."""
    c = project.canaries
    label = "protected" if protected else "control"
    db = project.dir / f"cli-{label}.db"
    blocks_file = project.write(
        f"blocks-{label}.json",
        {"format": "flowcore-blocks", "version": 1, "blocks": blocks(marked=protected)},
    )
    pipeline_file = project.write("pipeline.json", PIPELINE)
    env = base_environment() | {"CANARY_TOOL_VALUES": str(project.values)}
    if protected:
        # A deployment: credentials in credential-named variables; the model key is OpenAI's.
        env |= c.environment() | {
            "OPENAI_API_KEY": c.provider,
            "OPENAI_BASE_URL": f"{server.url}/v1",
        }
        provider = ["--provider", "openai"]
    else:
        # The control: the same values, but nothing tells the CLI they are secrets.
        env |= {"FLOWCORE_BASE_URL": f"{server.url}/v1"}
        provider = ["--provider", "local"]
    server.replies += model_replies(c)
    common = ["--db", str(db)]

    code, out, err = await flowcore_cli(
        env,
        "run",
        str(pipeline_file),
        *common,
        "--blocks",
        str(blocks_file),
        "--tools",
        str(project.tools),
        *provider,
        "--model",
        "gpt-test",
        "--input",
        f"api_token={c.field}",
        "--input",
        f"smtp_password={c.exception}",
    )
    assert code == 1, err.decode()  # the run failed in notify, as planned
    assert b"notify FAILED" in out, out.decode()
    scan.add("CLI stdout", out)
    scan.add("CLI stderr", err)
    code, listed, err = await flowcore_cli(env, "runs", "list", "--json", *common)
    assert code == 0, err.decode()
    run_id = json.loads(listed)[0]["run_id"]
    for argv in (
        ["runs", "list"],
        ["runs", "show", run_id, "--json"],
        ["graph", str(pipeline_file), "--blocks", str(blocks_file)],
    ):
        code, out, err = await flowcore_cli(env, *argv, *common)
        assert code == 0, err.decode()
        scan.add("CLI stdout", out)
        scan.add("CLI stderr", err)
    # What the CLI left on disk: decoded, and raw (with the WAL forced to exist).
    async with SqliteCheckpointer(db) as checkpoints:
        for thread in await checkpoints.threads():
            for cp in await checkpoints.history(thread):
                writes = await checkpoints.get_writes(thread, cp.checkpoint_id)
                scan.add("CLI decoded checkpoints", dump([cp.snapshot, cp.writes, cp.metadata]))
                scan.add("CLI pending writes", dump([w.payload for w in writes]))
        async with SqliteRunHistory(db) as history:
            for record in await history.list():
                scan.add("CLI run history", dump(record.to_data()))
            for part, data in raw_files(db).items():
                scan.add(f"CLI database{part} (open)", data)
    for part, data in raw_files(db).items():
        scan.add(f"CLI database{part} (closed)", data)


# ----------------------------------------------------------------------- tests
async def test_no_canary_leaves_a_run_in_any_form_through_any_output(
    project: Project,
    server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scan = Scan(project.canaries.items())

    await run_in_process(project, server, scan, protected=True, monkeypatch=monkeypatch)
    await run_cli(project, server, scan, protected=True)

    hits = scan.hits()
    with capsys.disabled():
        print("\n" + scan.report("secret scan"))
    assert hits == [], "\n".join(f"{c} as {f} in {s}" for c, f, s in hits[:50])
    assert len(scan.sources) >= 20
    # The key really was used; what the model echoed of it never flowed on to the next node.
    assert server.requests[0].headers["authorization"] == f"Bearer {project.canaries.provider}"
    assert "Hello! The key you sent me is [REDACTED]" in dump(server.requests[1].body)


async def test_the_scan_finds_every_canary_when_nothing_redacts(
    project: Project,
    server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    in_process, cli = Scan(project.canaries.items()), Scan(project.canaries.items())

    await run_in_process(project, server, in_process, protected=False, monkeypatch=monkeypatch)
    await run_cli(project, server, cli, protected=False)

    with capsys.disabled():
        for label, scan in (("control, in process", in_process), ("control, CLI", cli)):
            print(("\n" if scan is in_process else "") + scan.report(label))
            per_source: dict[str, set[str]] = {}
            for canary, _, source in scan.hits():
                per_source.setdefault(source, set()).add(canary)
            for source, found in sorted(per_source.items()):
                print(f"    {source}: {len(found)} of {len(project.canaries.items())} canaries")
    for scan in (in_process, cli):
        leaked = {canary for canary, _, _ in scan.hits()}
        assert leaked == set(project.canaries.items()), sorted(
            set(project.canaries.items()) - leaked
        )
    forms_seen = {form for _, form, _ in in_process.hits() + cli.hits()}
    assert {"raw", "base64 after 1 bytes", "quote", "json"} <= forms_seen
