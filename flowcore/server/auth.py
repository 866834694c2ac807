"""Who is asking: the ``Authorization: Bearer <key>`` header, checked on every API route.

The key's user owns what the request creates and is the only one who sees
it. Each authenticated request also counts against the key's rate limit.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from flowcore.server.errors import UnauthorizedError
from flowcore.server.keys import ApiKey
from flowcore.server.services import Services

__all__ = ["Caller", "authenticate", "bearer", "services_of"]

bearer = HTTPBearer(
    auto_error=False,
    description="An API key made with 'flowcore keys create --user NAME'.",
)


def services_of(request: Request) -> Services:
    """The :class:`Services` the app was created with.

    Example:
        >>> # services = services_of(request)
    """
    services: Services = request.app.state.services
    return services


async def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
) -> ApiKey:
    """The active API key of the request; 401 without one, 429 over the rate limit.

    Example:
        >>> # async def route(key: Caller): ...
    """
    if credentials is None or not credentials.credentials:
        raise UnauthorizedError(
            "this route needs an API key: send 'Authorization: Bearer <key>' (make one with "
            "'flowcore keys create --user NAME')"
        )
    services = services_of(request)
    key = await services.keys.verify(credentials.credentials)
    if key is None:
        raise UnauthorizedError(
            "the API key is not valid or was revoked; 'flowcore keys list' shows the active keys"
        )
    services.limiter.hit(key.key_id)
    return key


Caller = Annotated[ApiKey, Depends(authenticate)]
"""A route parameter of this type gets the request's checked API key."""
