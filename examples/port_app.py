"""An app that runs graphs only through the executor port, and serves runs as SSE.

The app knows three things of flowcore: ``InProcExecutor`` (the port's
implementation, created once at startup), ``RunRequest`` (what it asks
for) and the AiEvents it gets back. Each HTTP request starts one run; a
``RunEventRelay`` pumps the run and feeds two subscribers: the client's
Server-Sent Events stream (best effort: a slow or vanished client never
stalls the run) and a usage ledger (reliable: it bills every model call,
whatever the client does). The HTTP server is a few lines of asyncio.
``/runs/<graph>`` answers with flowcore's own SSE (one AiEvent per
message); ``/chat/<graph>`` answers with the Vercel AI SDK's UI message
stream, which ``useChat`` and assistant-ui read as they are.

    python examples/port_app.py                  # demo: serve, request both, print, stop
    python examples/port_app.py --once           # one run, its SSE text to stdout
    python examples/port_app.py --once --ai-sdk  # one run, as an AI SDK UI message stream
    python examples/port_app.py --serve --port 8765
    curl -N 'http://127.0.0.1:8765/runs/ask?question=What+is+the+answer'
    curl -N 'http://127.0.0.1:8765/chat/ask?question=What+is+the+answer'

The model is a tiny deterministic stand-in (no API key needed): it looks the
question up with the ``lookup`` tool, then answers with what it found.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote_plus, urlsplit

from pydantic import BaseModel

from flowcore import START, Graph
from flowcore.blocks import BlockDefinition, BlockExecutor, BlockState, add_block
from flowcore.llm import LLMRequest, LLMResponse, ProviderRegistry, StreamEvent, ToolCall, Usage
from flowcore.port import (
    SSE_HEADERS,
    AiEvent,
    Caller,
    GraphExecutorPort,
    InProcExecutor,
    RunEventRelay,
    RunRequest,
    Subscription,
    parse_sse,
    sse_stream,
    ui_message_response,
)
from flowcore.tools import Tool, ToolRunner

# --------------------------------------------------------------- the graph


class Librarian:
    """A stand-in model: first asks the ``lookup`` tool, then answers from its result."""

    name = "librarian"

    def _answer(self, request: LLMRequest) -> LLMResponse:
        words_in = sum(len(m.content.split()) for m in request.messages)
        found = [m for m in request.messages if m.role == "tool"]
        if request.tools and not found:
            topic = request.messages[0].content.removeprefix("Question: ")
            call = ToolCall("call-1", "lookup", {"topic": topic})
            return LLMResponse("Let me look that up.", (call,), Usage(words_in, 5), "librarian-1")
        fact = json.loads(found[-1].content).get("fact", "nothing found")
        text = json.dumps({"answer": fact})
        return LLMResponse(text, (), Usage(words_in, len(text.split())), "librarian-1")

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return self._answer(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        response = self._answer(request)
        for i, word in enumerate(response.text.split(" ")):
            yield StreamEvent(kind="text", text=word if i == 0 else f" {word}")
        yield StreamEvent(kind="done", response=response)


class Topic(BaseModel):
    topic: str


class Finding(BaseModel):
    fact: str
    archive_page: str  # internal: not on the allowlist, so never streamed to clients


async def lookup(args: Topic) -> Finding:
    return Finding(fact=f"the answer to '{args.topic}' is 42", archive_page="<internal page>")


class AskState(BlockState, total=False):
    question: str
    reply: str


def build_executor() -> GraphExecutorPort:
    """The app's one executor, with its graphs registered by name."""
    executor = BlockExecutor(
        providers=ProviderRegistry.single(Librarian()),
        tools=ToolRunner([Tool("lookup", "Look a topic up", Topic, Finding, lookup, {"fact"})]),
    )
    research = BlockDefinition(
        id="research",
        name="Research",
        description="Answer a question, looking it up first",
        kind="llm",
        input_keys=["question"],
        output_keys=["answer"],
        prompt_template="Question: {{ question }}",
        metadata={"tools": ["lookup"]},
    )
    graph = Graph(AskState, name="ask")
    add_block(graph, "research", research, executor, inputs={"question": "<<state.question>>"})
    graph.add_node("reply", lambda s: {"reply": f"In short: {s['results']['research']['answer']}."})
    graph.add_edge(START, "research").add_edge("research", "reply")
    return InProcExecutor(graphs={"ask": graph.compile(version="2024.1")})


# ------------------------------------------------------------------ the app


@dataclass
class Ledger:
    """Bills model calls from usage reports (a real app writes rows to its database)."""

    calls: list[tuple[str, str, int, int]] = field(default_factory=list)

    async def consume(self, events: Subscription) -> None:
        async for event in events:
            if event.type == "usage_report":
                self.calls.append(
                    (event.request_id, event.model, event.input_tokens, event.output_tokens)  # type: ignore[union-attr]
                )


class App:
    """Runs graphs for HTTP clients through the port; every run is billed by the ledger."""

    def __init__(self, executor: GraphExecutorPort) -> None:
        self.executor = executor
        self.ledger = Ledger()

    async def run_events(
        self, target: str, inputs: dict[str, Any], caller: Caller
    ) -> AsyncIterator[AiEvent]:
        """The client's events of one run; the run and the ledger go on if the client leaves."""
        handle = self.executor.run(RunRequest(target, inputs, caller))
        relay = RunEventRelay(handle)
        client = relay.subscribe("client", policy="best_effort")
        billing = relay.subscribe("ledger", policy="reliable")
        pump = relay.start()
        ledger = asyncio.create_task(self.ledger.consume(billing))
        try:
            async for event in client:
                yield event
        finally:
            client.close()
            await asyncio.gather(pump, ledger)

    async def stream_run(
        self, target: str, inputs: dict[str, Any], caller: Caller
    ) -> AsyncIterator[str]:
        """flowcore's SSE text of one run."""
        async with contextlib.aclosing(self.run_events(target, inputs, caller)) as events:
            async for chunk in sse_stream(events, keepalive=15.0):
                yield chunk

    async def handle_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One HTTP/1.1 request: ``GET /runs/<graph>?key=value...`` (SSE) or ``/chat/<graph>``."""
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, target, _ = head[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])
            }
            url = urlsplit(target)
            if method != "GET" or not url.path.startswith(("/runs/", "/chat/")):
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            inputs = {k: v[-1] for k, v in parse_qs(url.query).items()}
            caller = Caller(
                request_id=headers.get("x-request-id") or uuid.uuid4().hex,
                trace_id=headers.get("x-trace-id") or uuid.uuid4().hex,
            )
            target_name = url.path.split("/", 2)[2]
            if url.path.startswith("/chat/"):
                # The AI SDK's UI message stream: status, headers and body from one helper.
                async with contextlib.aclosing(self.run_events(target_name, inputs, caller)) as run:
                    response = ui_message_response(run)
                    writer.write(response.head())
                    async for data in response.body or ():
                        writer.write(data)
                        await writer.drain()
                return
            lines = ["HTTP/1.1 200 OK", *(f"{k}: {v}" for k, v in SSE_HEADERS.items())]
            writer.write(("\r\n".join([*lines, "Connection: close", "", ""])).encode())
            async for chunk in self.stream_run(target_name, inputs, caller):
                writer.write(chunk.encode("utf-8"))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client left; its run was still pumped to the end and billed
        finally:
            writer.close()
            await writer.wait_closed()


# --------------------------------------------------------------- front ends


async def http_get(
    host: str, port: int, path: str, request_id: str
) -> tuple[str, dict[str, str], str]:
    """A stdlib HTTP client: the status line, the headers and the whole body."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Request-Id: {request_id}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    raw = (await reader.read()).decode("utf-8")
    writer.close()
    await writer.wait_closed()
    head, _, body = raw.partition("\r\n\r\n")
    status, *fields = head.split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
    return status, headers, body


def describe(events: list[AiEvent]) -> list[str]:
    """One line per event, consecutive text deltas of one call folded into one."""
    lines: list[str] = []
    text, count = "", 0
    for i, event in enumerate(events):
        if event.type == "text_delta":
            text += event.delta  # type: ignore[union-attr]
            count += 1
            following = events[i + 1] if i + 1 < len(events) else None
            if following is not None and following.type == "text_delta":
                continue
            lines.append(f"  text_delta x{count:<3} {text!r}")
            text, count = "", 0
            continue
        detail = {
            "node_start": lambda e: e.node,
            "node_end": lambda e: e.node,
            "tool_call_start": lambda e: f"{e.tool_name}({json.dumps(e.args)})",
            "tool_call_result": lambda e: json.dumps(e.result),
            "usage_report": lambda e: f"{e.model}: {e.input_tokens} in / {e.output_tokens} out",
            "error": lambda e: f"{e.error_type}: {e.message}",
            "done": lambda e: e.status,
        }.get(event.type, lambda e: "")(event)
        lines.append(f"  {event.type:<16} {detail}".rstrip())
    return lines


def describe_chunks(body: str) -> list[str]:
    """One line per UI message chunk, runs of one chunk type folded into one."""
    lines: list[str] = []
    kinds: list[str] = []
    for block in body.split("\n\n"):
        data = block.removeprefix("data: ")
        if not block.startswith("data: "):
            continue
        kinds.append("[DONE]" if data == "[DONE]" else json.loads(data)["type"])
    for i, kind in enumerate(kinds):
        if i and kinds[i - 1] == kind:
            continue
        run = next((j for j in range(i, len(kinds)) if kinds[j] != kind), len(kinds)) - i
        lines.append(f"  {kind} x{run}" if run > 1 else f"  {kind}")
    return lines


async def demo(question: str) -> None:
    app = App(build_executor())
    server = await asyncio.start_server(app.handle_http, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"server: listening on http://{host}:{port}")
    path = f"/runs/ask?question={quote_plus(question)}"
    async with server:
        status, _, body = await http_get(host, port, path, request_id="demo-request-1")
        missing_status, _, missing = await http_get(host, port, "/runs/nope", "demo-request-2")
        chat = path.replace("/runs/", "/chat/")
        chat_status, chat_headers, chat_body = await http_get(host, port, chat, "demo-request-3")
    print(f"client: GET {path} -> {status}")
    events = parse_sse(body)
    print("\n".join(describe(events)))
    print(f"client: GET /runs/nope -> {missing_status}")
    print("\n".join(describe(parse_sse(missing))))
    protocol = chat_headers.get("x-vercel-ai-ui-message-stream")
    print(f"client: GET {chat} -> {chat_status} (AI SDK UI message stream {protocol})")
    print("\n".join(describe_chunks(chat_body)))
    for request_id, model, tokens_in, tokens_out in app.ledger.calls:
        print(f"ledger: {request_id} {model} {tokens_in} in / {tokens_out} out")
    print("server: stopped")


async def once(question: str, ai_sdk: bool) -> None:
    app = App(build_executor())
    caller = Caller("once-1", "once-1")
    if ai_sdk:
        response = ui_message_response(app.run_events("ask", {"question": question}, caller))
        async for data in response.body or ():
            sys.stdout.write(data.decode("utf-8"))
        return
    async for chunk in app.stream_run("ask", {"question": question}, caller):
        sys.stdout.write(chunk)


async def serve(port: int) -> None:
    app = App(build_executor())
    server = await asyncio.start_server(app.handle_http, "127.0.0.1", port)
    print(f"serving on http://127.0.0.1:{port}/runs/ask?question=... (Ctrl-C stops)")
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="run once, print the SSE text")
    mode.add_argument("--serve", action="store_true", help="serve until interrupted")
    parser.add_argument(
        "--ai-sdk", action="store_true", help="with --once: the AI SDK UI message stream"
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--question", default="What is the meaning of life?")
    args = parser.parse_args()
    if args.once:
        asyncio.run(once(args.question, args.ai_sdk))
    elif args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.port))
    else:
        asyncio.run(demo(args.question))


if __name__ == "__main__":
    main()
