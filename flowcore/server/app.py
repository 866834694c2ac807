"""``create_app``: the FastAPI application of ``flowcore serve``, built from what it is given.

Nothing global: the database, the executor, the stores and the limits come
in as arguments, so a test builds an app on an in-memory setup and the CLI
builds one on its database file.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from flowcore.blocks.store import BlockStore
from flowcore.history import RunHistory
from flowcore.memory.store import Store
from flowcore.port.inproc import Target
from flowcore.secrets import NO_REDACTION, Redactor, scrub_error
from flowcore.server import blocks, executions, memory, pipelines, runs, thinker, viewer
from flowcore.server.clarify_store import ClarifyStore
from flowcore.server.errors import ApiError, RateLimitedError, status_of
from flowcore.server.executor import ServerExecutor
from flowcore.server.keys import ApiKeys
from flowcore.server.limits import BodyLimitMiddleware, RateLimiter
from flowcore.server.manager import RunManager
from flowcore.server.models import Health
from flowcore.server.pipeline_store import PipelineStore
from flowcore.server.queue_runs import DetachingRunManager, detaches
from flowcore.server.run_store import RunStore
from flowcore.server.schema import ServerDb
from flowcore.server.services import Services
from flowcore.server.settings import ServerSettings
from flowcore.server.shutdown import StoppingMiddleware
from flowcore.server.strict import reject_unknown_query
from flowcore.server.thinker_service import build_thinker_service

__all__ = ["create_app"]

log = logging.getLogger("flowcore.server")

_CODES = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    409: "conflict",
    413: "payload-too-large",
    415: "unsupported-media-type",
    422: "invalid-request",
    429: "rate-limited",
}


def _error(status: int, code: str, message: str, problems: list[str] | None = None) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "problems": problems or []}}
    return JSONResponse(body, status_code=status)


def _install_handlers(app: FastAPI, redactor: Redactor) -> None:
    def safe(text: str) -> str:
        redacted = redactor.redact(text)
        return redacted if isinstance(redacted, str) else "[REDACTED]"

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        status = status_of(exc)
        if not isinstance(exc, ApiError) and status >= 500:
            return await on_crash(request, exc)
        code = getattr(exc, "code", None) or _CODES.get(status, "error")
        problems = [safe(str(p)) for p in getattr(exc, "problems", ()) or ()]
        response = _error(status, str(code), safe(str(exc)), problems)
        if isinstance(exc, RateLimitedError):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    async def on_invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = []
        for item in exc.errors():
            where = ".".join(str(p) for p in item.get("loc", ()) if p != "body") or "body"
            problems.append(safe(f"{where}: {item.get('msg', 'is not valid')}"))
        message = "the request does not validate: " + "; ".join(problems[:5])
        return _error(422, "invalid-request", message, problems)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        status = exc.status_code
        if status == 404:
            message = f"no route {request.url.path!r}; GET /docs lists every route"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.url.path!r}; see GET /docs"
        else:
            message = safe(str(exc.detail))
        response = _error(status, _CODES.get(status, "error"), message)
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        scrubbed = scrub_error(exc, redactor)
        log.error(
            "internal error on %s %s: %s: %s",
            request.method,
            request.url.path,
            type(exc).__name__,
            safe(str(scrubbed)),
        )
        return _error(
            500,
            "internal",
            f"internal error ({type(exc).__name__}); this is a flowcore bug, please report it",
        )

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)
    # Flowcore errors raised by stores and models (bad pipeline, unknown block, ...).
    from flowcore.errors import FlowcoreError

    app.add_exception_handler(FlowcoreError, on_api_error)


def create_app(
    settings: ServerSettings,
    *,
    db: ServerDb,
    executor: ServerExecutor,
    blocks_store: BlockStore,
    history: RunHistory | None = None,
    memory_store: Store | None = None,
    graphs: Mapping[str, Target | Any] | None = None,
    redactor: Redactor = NO_REDACTION,
    recover: bool = True,
) -> FastAPI:
    """The HTTP app: every route of docs/serve.md, on the stores and executor given.

    ``db`` holds the server's own tables (keys, runs, pipelines, clarifying
    threads): a :class:`~flowcore.server.db.ServerDatabase` (SQLite) or a
    :class:`~flowcore.server.postgres_db.PostgresServerDatabase`. ``executor``
    runs every run the API starts: any
    :class:`~flowcore.server.executor.ServerExecutor` (passed in, never
    built here, so a queue's executor is one argument away).

    ``graphs`` registers graphs by name (native compiled graphs, compiled
    LangGraph-style graphs, Pipelines, TaskPlans); the Thinker routes use
    a Thinker built on ``blocks_store`` and ``executor``'s pipeline runner
    (closed on shutdown); ``recover`` continues
    runs a previous server left unfinished when the app starts. The app's
    lifespan stops running runs at a checkpoint when it shuts down.

    Example:
        >>> # app = create_app(ServerSettings(), db=db, executor=executor, blocks_store=blocks)
        >>> # uvicorn.run(app)
    """
    for name, graph in (graphs or {}).items():
        executor.register(name, graph)
    # Runs on queue workers outlive this process: its shutdown detaches from them instead.
    manager_type = DetachingRunManager if detaches(executor) else RunManager
    manager = manager_type(
        executor=executor,
        store=RunStore(db),
        pipelines=PipelineStore(db),
        shutdown_grace=settings.shutdown_grace,
    )
    services = Services(
        settings=settings,
        keys=ApiKeys(db),
        runs=manager,
        blocks=blocks_store,
        pipelines=PipelineStore(db),
        history=history,
        memory=memory_store,
        redactor=redactor,
        limiter=RateLimiter(settings.rate_limit, settings.rate_window),
        # One Thinker per app, on the same registry, runner, checkpoints and history.
        thinker=build_thinker_service(
            blocks_store, executor, threads=ClarifyStore(db), history=history, redactor=redactor
        ),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resumed = await manager.begin(recover=recover)
        if resumed:
            log.info("continuing %d run(s) the last server left unfinished", len(resumed))
        try:
            yield
        finally:
            await manager.shutdown()
            if services.thinker is not None:
                await services.thinker.aclose()

    app = FastAPI(
        title=settings.title,
        version="1",
        description=(
            "flowcore's HTTP API: runs of graphs, pipelines and plans (with live event "
            "streams), the block registry, saved pipelines, run history and memory. "
            "Every /api route needs 'Authorization: Bearer <key>'."
        ),
        lifespan=lifespan,
        dependencies=[Depends(reject_unknown_query)],
    )
    app.state.services = services
    _install_handlers(app, redactor)

    @app.get("/healthz", response_model=Health, tags=["health"], summary="Liveness")
    async def healthz() -> Health:
        """``ok`` while the server takes requests (no key needed)."""
        return Health(status="stopping" if manager.stopping else "ok")

    for module in (runs, blocks, pipelines, executions, memory, thinker, viewer):
        app.include_router(module.router)
    app.add_middleware(StoppingMiddleware, is_stopping=lambda: manager.stopping)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    return app
