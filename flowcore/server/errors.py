"""Errors the server answers with, and the HTTP status each flowcore error maps to.

::

    FlowcoreError
    └── ApiError                        an HTTP answer other than success
        ├── BadRequestError (400)       the request cannot be carried out as sent
        ├── UnauthorizedError (401)     no API key, or not an active one
        ├── NotFoundError (404)         no such run, thread, block, ... for this user
        ├── ConflictError (409)         the run is not in a state that allows it
        ├── PayloadTooLargeError (413)  the body is over the size limit
        ├── RateLimitedError (429)      too many requests for this key
        ├── NotImplementedYetError (501) the endpoint waits for a missing part
        └── UnavailableError (503)      the server is stopping

No web framework is imported here: the run manager raises these too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from flowcore.errors import FlowcoreError, InvalidInputError
from flowcore.pipeline.model import PipelineError

__all__ = [
    "ApiError",
    "BadRequestError",
    "ConflictError",
    "NotFoundError",
    "NotImplementedYetError",
    "PayloadTooLargeError",
    "RateLimitedError",
    "UnauthorizedError",
    "UnavailableError",
    "status_of",
]


class ApiError(FlowcoreError):
    """An error with an HTTP status; ``problems`` lists details when there are several.

    Example:
        >>> NotFoundError("no run 'r1'").status
        404
    """

    status: ClassVar[int] = 400
    code = "bad-request"

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


class BadRequestError(ApiError):
    """The request cannot be carried out as sent (400)."""

    status = 400
    code = "bad-request"


class UnauthorizedError(ApiError):
    """No API key, or one that is not active (401)."""

    status = 401
    code = "unauthorized"


class NotFoundError(ApiError):
    """Nothing with this id for this user (404): another user's ids look missing too."""

    status = 404
    code = "not-found"


class ConflictError(ApiError):
    """The run or thread is not in a state that allows the request (409)."""

    status = 409
    code = "conflict"


class PayloadTooLargeError(ApiError):
    """The request body is over the server's limit (413)."""

    status = 413
    code = "payload-too-large"


class RateLimitedError(ApiError):
    """Too many requests with this key; ``retry_after`` seconds until one is allowed (429)."""

    status = 429
    code = "rate-limited"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NotImplementedYetError(ApiError):
    """The endpoint needs a part of flowcore that does not exist yet (501)."""

    status = 501
    code = "not-implemented"


class UnavailableError(ApiError):
    """The server is stopping and takes no new work (503)."""

    status = 503
    code = "shutting-down"


def status_of(exc: BaseException) -> int:
    """The HTTP status for an error raised while handling a request.

    Example:
        >>> status_of(NotFoundError("x")), status_of(InvalidInputError("y"))
        (404, 422)
    """
    if isinstance(exc, ApiError):
        return exc.status
    if isinstance(exc, PipelineError | InvalidInputError):
        return 422
    if isinstance(exc, FlowcoreError) and isinstance(exc, LookupError):
        return 404
    if isinstance(exc, FlowcoreError) and isinstance(exc, ValueError | TypeError):
        return 422
    return 500
