"""API keys: random tokens, stored hashed, one user each.

A key is ``fc_`` + 32 random bytes (URL-safe base64). Only its SHA-256 is
stored. A plain, fast hash is enough here, unlike for passwords: a key has
256 bits of entropy, so nobody can guess one from its hash however fast
hashing is, and a slow hash (bcrypt, scrypt) would only add latency to every
request. The token is shown once, when it is created.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from flowcore.errors import FlowcoreError, InvalidInputError
from flowcore.server.schema import ServerDb

__all__ = ["ApiKey", "ApiKeys", "KeyNotFoundError", "hash_token"]

_PREFIX = "fc_"


class KeyNotFoundError(FlowcoreError, LookupError):
    """No API key with this id (or it is already revoked).

    Example:
        >>> KeyNotFoundError("no key k1").code
        'api-key-not-found'
    """

    code = "api-key-not-found"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One API key's record: never the token itself.

    Example:
        >>> ApiKey("k1", "ada", 0.0, None).active
        True
    """

    key_id: str
    user_id: str
    created_at: float
    revoked_at: float | None

    @property
    def active(self) -> bool:
        """Whether the key still opens the API."""
        return self.revoked_at is None


def hash_token(token: str) -> str:
    """The stored form of a token: its SHA-256, hex (see the module docstring for why).

    Example:
        >>> len(hash_token("fc_abc"))
        64
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _check_user(user_id: str) -> str:
    if not isinstance(user_id, str) or not user_id.strip() or len(user_id) > 200:
        raise InvalidInputError(
            "a key's user must be a non-empty name of at most 200 characters, e.g. --user ada"
        )
    if any(ord(c) < 32 for c in user_id):
        raise InvalidInputError("a key's user must not hold control characters")
    return user_id.strip()


class ApiKeys:
    """Creates, lists, revokes and checks API keys in the server database.

    Example:
        >>> # key, token = await ApiKeys(db).create("ada")
        >>> # (await ApiKeys(db).verify(token)).user_id  -> 'ada'
    """

    def __init__(self, db: ServerDb) -> None:
        self.db = db

    async def create(self, user_id: str) -> tuple[ApiKey, str]:
        """A new key for ``user_id``: its record and the token (shown only now).

        Example:
            >>> # key, token = await keys.create("ada")
        """
        user_id = _check_user(user_id)
        token = _PREFIX + secrets.token_urlsafe(32)
        key = ApiKey("key_" + secrets.token_hex(6), user_id, time.time(), None)
        await self.db.execute(
            "INSERT INTO flowcore_api_keys (key_id, user_id, token_hash, created_at) "
            "VALUES (?, ?, ?, ?)",
            (key.key_id, key.user_id, hash_token(token), key.created_at),
        )
        return key, token

    async def list(self) -> list[ApiKey]:
        """Every key, oldest first (revoked ones too, marked).

        Example:
            >>> # for key in await keys.list(): print(key.key_id, key.user_id)
        """
        rows = await self.db.fetchall(
            "SELECT key_id, user_id, created_at, revoked_at FROM flowcore_api_keys "
            "ORDER BY created_at, key_id"
        )
        return [ApiKey(str(r[0]), str(r[1]), float(r[2]), r[3]) for r in rows]

    async def revoke(self, key_id: str) -> ApiKey:
        """Revoke ``key_id``: it stops working at once.

        Example:
            >>> # await keys.revoke("key_1a2b3c")
        """
        changed = await self.db.execute(
            "UPDATE flowcore_api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
            (time.time(), key_id),
        )
        if not changed:
            raise KeyNotFoundError(
                f"no active API key {key_id!r}; 'flowcore keys list' shows the key ids"
            )
        found = [k for k in await self.list() if k.key_id == key_id]
        return found[0]

    async def verify(self, token: str) -> ApiKey | None:
        """The active key whose token this is, or None.

        Example:
            >>> # key = await keys.verify(request_token)
        """
        if not token.startswith(_PREFIX) or len(token) > 200:
            return None
        digest = hash_token(token)
        row = await self.db.fetchone(
            "SELECT key_id, user_id, created_at, revoked_at, token_hash FROM flowcore_api_keys "
            "WHERE token_hash = ? AND revoked_at IS NULL",
            (digest,),
        )
        # The lookup is by hash; compare again in constant time all the same.
        if row is None or not hmac.compare_digest(str(row[4]), digest):
            return None
        return ApiKey(str(row[0]), str(row[1]), float(row[2]), None)
