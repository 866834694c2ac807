"""Query parameters a route does not take are refused (422), not silently ignored.

A typo such as ``?limt=5`` would otherwise return the default page and look
like it worked; naming the unknown parameter and the ones the route takes
is the clearer answer.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from flowcore.server.errors import ApiError

__all__ = ["UnknownQueryError", "reject_unknown_query"]

_KNOWN: dict[int, frozenset[str]] = {}


class UnknownQueryError(ApiError):
    """The request has query parameters the route does not take (422)."""

    status = 422
    code = "unknown-query-parameter"


def _query_names(dependant: Dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _known(route: APIRoute) -> frozenset[str]:
    found = _KNOWN.get(id(route))
    if found is None:
        found = frozenset(_query_names(route.dependant))
        _KNOWN[id(route)] = found
    return found


async def reject_unknown_query(request: Request) -> None:
    """An app-wide dependency: 422 naming each query parameter the route does not take.

    Example:
        >>> # app = FastAPI(dependencies=[Depends(reject_unknown_query)])
    """
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = _known(route)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "none"
        raise UnknownQueryError(
            f"{request.url.path} takes no query parameter {', '.join(map(repr, unknown))} "
            f"(it takes: {takes})",
            problems=[f"unknown query parameter {name!r}" for name in unknown],
        )
