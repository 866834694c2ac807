"""A program that logs secrets the way a real deployment does, for test_log_redaction.py.

Run as ``python log_traffic.py LOG_DIR [SETUP_FILE]``: it first runs the
Python code of ``SETUP_FILE`` (the logging setup block of docs/secrets.md,
word for word; none for the control run), then configures logging the way
applications do *after* their setup code (``logging.basicConfig`` to a
file, a JSON handler on the root logger that dumps every record attribute,
a handler straight on the ``openai`` logger, one on stderr), turns the HTTP
stack's loggers to DEBUG, and makes real traffic: the ``openai`` and
``anthropic`` SDKs (through flowcore's providers) against a loopback server
that echoes the keys back in response headers and bodies, raw and encoded,
and sends prompts carrying a secret, plus application log calls that pass
secrets as arguments, ``extra`` fields, exception messages and stack info.

The canaries come from the environment: ``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY`` and ``APP_DB_PASSWORD``.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import logging
import os
import sys
import urllib.parse
from pathlib import Path
from types import ModuleType
from typing import Any

HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic", "app")


def _loopback() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "llm" / "loopback.py"
    spec = importlib.util.spec_from_file_location("log_traffic_loopback", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


loopback = _loopback()


class EverythingFormatter(logging.Formatter):
    """One JSON line per record with every attribute, as structured-log shippers write."""

    def format(self, record: logging.LogRecord) -> str:
        fields = {name: repr(value) for name, value in vars(record).items()}
        fields["formatted"] = super().format(record)
        return json.dumps(fields)


def echo_headers(*secrets: str) -> dict[str, str]:
    """Response headers a careless server sends: each secret raw and encoded."""
    headers: dict[str, str] = {}
    for i, secret in enumerate(secrets):
        raw = secret.encode()
        headers[f"x-echo-{i}"] = secret
        headers[f"x-echo-{i}-hex"] = raw.hex()
        headers[f"x-echo-{i}-hex-upper"] = raw.hex().upper()
        headers[f"x-echo-{i}-base32"] = base64.b32encode(b"pad" + raw).decode()
        headers[f"x-echo-{i}-base64"] = base64.b64encode(b"user:" + raw).decode()
        headers[f"x-echo-{i}-quoted"] = urllib.parse.quote(secret, safe="")
    return headers


def configure_after_setup(log_dir: Path) -> None:
    """What an application does once the setup code ran: basicConfig and more handlers."""
    for name in HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
    logging.basicConfig(
        filename=log_dir / "basic.log",
        level=logging.DEBUG,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    everything = logging.FileHandler(log_dir / "everything.jsonl")
    everything.setFormatter(EverythingFormatter())
    logging.getLogger().addHandler(everything)
    logging.getLogger("openai").addHandler(logging.FileHandler(log_dir / "openai.log"))
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.INFO)
    logging.getLogger("app").addHandler(stderr)


async def traffic(env: dict[str, str]) -> None:
    from flowcore.llm import LLMRequest, Message, ProviderError, call_with_retries
    from flowcore.llm.anthropic_provider import AnthropicProvider
    from flowcore.llm.openai_provider import OpenAIProvider

    openai_key, anthropic_key = env["OPENAI_API_KEY"], env["ANTHROPIC_API_KEY"]
    password = env["APP_DB_PASSWORD"]
    echo = echo_headers(openai_key, anthropic_key, password)
    ask = LLMRequest(messages=(Message("user", f"Connect with password {password}"),))
    async with loopback.LoopbackServer() as server:
        openai = OpenAIProvider(api_key=openai_key, model="gpt-test", base_url=f"{server.url}/v1")
        anthropic = AnthropicProvider(
            api_key=anthropic_key, model="claude-test", base_url=server.url
        )
        try:
            bad_key = {"message": f"Incorrect API key provided: {openai_key}", "type": "auth"}
            server.replies += [
                loopback.Reply(401, {"error": bad_key}, headers=echo),
                loopback.openai_error(429, "rate_limit_exceeded", retry_after="0"),
                loopback.openai_completion(f"echo {password}"),
                loopback.openai_stream(["echo ", password]),
            ]
            for reply in server.replies[1:]:
                reply.headers.update(echo)
            try:
                await openai.complete(ask)
            except ProviderError as error:
                logging.getLogger("app").warning("openai refused: %s", error)
            await call_with_retries(lambda: openai.complete(ask), base_delay=0.0)
            async for _ in openai.stream(ask):
                pass
            server.replies += [
                loopback.anthropic_message(f"echo {password}"),
                loopback.anthropic_stream(["echo ", password]),
            ]
            for reply in server.replies:
                reply.headers.update(echo)
            await anthropic.complete(ask)
            async for _ in anthropic.stream(ask):
                pass
        finally:
            await openai.aclose()
            await anthropic.aclose()
    assert not server.replies, "every scripted reply was used"


def application_logs(env: dict[str, str]) -> None:
    log = logging.getLogger("app.db")
    password = env["APP_DB_PASSWORD"]
    log.info("connecting with %s", password)
    log.debug("dsn %(dsn)s", {"dsn": f"postgres://app:{password}@db/app"})
    log.info("hex dump %s", password.encode().hex())
    log.info("connected", extra={"credentials": {"password": password}, "token": password})
    try:
        raise ConnectionError(f"login refused for password {password}")
    except ConnectionError:
        log.exception("could not connect")
    log.warning("where am I with %s", password, stack_info=True)


def main() -> None:
    log_dir = Path(sys.argv[1])
    namespace: dict[str, Any] = {"__name__": "docs_secrets_setup"}
    if len(sys.argv) > 2:
        code = Path(sys.argv[2]).read_text()
        exec(compile(code, "docs/secrets.md", "exec"), namespace)
    configure_after_setup(log_dir)
    env = dict(os.environ)
    asyncio.run(traffic(env))
    application_logs(env)
    logging.shutdown()


if __name__ == "__main__":
    main()
