"""``Secret``: a value that says what it is but never shows itself, and its errors."""

from __future__ import annotations

import hmac
from typing import Any, Final, NoReturn

from flowcore.errors import FlowcoreError

__all__ = ["PLACEHOLDER", "Secret", "SecretError", "SecretUnavailableError"]

PLACEHOLDER: Final = "[REDACTED]"
"""What a secret is replaced by wherever it would otherwise appear."""


class SecretError(FlowcoreError, ValueError):
    """A secret cannot be used as given (not text, too short to redact safely).

    Messages name the secret, never its value.

    Example:
        >>> SecretError("secret 'pin' is 4 characters long").code
        'secret'
    """

    code = "secret"


class SecretUnavailableError(FlowcoreError, LookupError):
    """A secret's value is not here: it was loaded from storage, where secrets are never kept.

    Example:
        >>> err = SecretUnavailableError("api_token")
        >>> (err.name, err.code)
        ('api_token', 'secret-unavailable')
    """

    code = "secret-unavailable"

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"secret {name!r} has no value here: it was read back from a checkpoint or a "
            "history record, and secrets are stored only as placeholders. Give it to the "
            "run again from outside (environment, provider configuration, run input or "
            "config) instead of keeping it in state across a pause"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name,))


class Secret:
    """A secret value: ``repr``, ``str`` and ``format`` show a placeholder, ``reveal()`` the value.

    Put a ``Secret`` wherever a value must not leak: in a run's input, in
    state, as a provider's key. Checkpoints store it as a placeholder (see
    :mod:`flowcore.checkpoint.serde`), events show ``"[REDACTED]"``, and the
    block executor reveals it only where a block uses it. Two secrets are
    equal when their values are (compared in constant time).

    Example:
        >>> key = Secret("sk-test-0123456789", name="OPENAI_API_KEY")
        >>> (str(key), f"{key}", key.reveal())
        ('[REDACTED]', '[REDACTED]', 'sk-test-0123456789')
        >>> key
        Secret('OPENAI_API_KEY', [REDACTED])
    """

    __slots__ = ("_name", "_value")

    _name: str
    _value: str | None

    def __init__(self, value: str, *, name: str = "secret") -> None:
        if not isinstance(value, str):
            raise SecretError(
                f"secret {name!r} must be a str, got {type(value).__name__}; "
                "decode bytes or convert the value to text first"
            )
        if not isinstance(name, str) or not name:
            raise SecretError("a secret's name must be a non-empty str, e.g. 'OPENAI_API_KEY'")
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_value", value)

    @classmethod
    def unavailable(cls, name: str) -> Secret:
        """A stand-in for a secret whose value was not stored; ``reveal()`` raises.

        Example:
            >>> Secret.unavailable("api_token").available
            False
        """
        secret = cls("", name=name)
        object.__setattr__(secret, "_value", None)
        return secret

    @property
    def name(self) -> str:
        """What the secret is (e.g. the environment variable it came from); safe to show."""
        return self._name

    @property
    def available(self) -> bool:
        """False for a stand-in read back from storage (see :meth:`unavailable`)."""
        return self._value is not None

    def reveal(self) -> str:
        """The secret value itself; use it only where it is needed.

        Raises:
            SecretUnavailableError: This is a stand-in read back from storage.

        Example:
            >>> Secret("correct horse battery").reveal()
            'correct horse battery'
        """
        if self._value is None:
            raise SecretUnavailableError(self._name)
        return self._value

    def __repr__(self) -> str:
        state = PLACEHOLDER if self._value is not None else "unavailable"
        return f"Secret({self._name!r}, {state})"

    def __str__(self) -> str:
        return PLACEHOLDER

    def __format__(self, spec: str) -> str:
        return format(PLACEHOLDER, spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        if self._value is None or other._value is None:
            return self is other
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value if self._value is not None else id(self)))

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self

    def __reduce__(self) -> NoReturn:
        # Pickling would write the value to wherever the bytes go.
        raise TypeError(
            f"Secret {self._name!r} cannot be pickled: that would write its value out; "
            "pass reveal()'s value explicitly where it must cross a process boundary"
        )
