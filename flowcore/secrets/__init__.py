"""Secrets never leave: marking values secret and redacting them wherever a run's data goes.

A value is secret when flowcore is told so: it is wrapped in a
:class:`Secret`, given to a :class:`SecretRedactor` (directly, as a
provider's key, or picked from the environment by
:meth:`SecretRedactor.from_environment`), or it fills a block input field
whose schema says ``"secret": true`` (or ``"writeOnly": true``). From then
on it, and its base64, base32, hex, URL-encoded and JSON-escaped forms, are replaced by
``"[REDACTED]"`` wherever a run's data leaves memory.

One seam per way out, each applying the run's redactor:

============================  ==============================================================
way out                       seam
============================  ==============================================================
engine events                 ``RunEngine`` redacts every event before it is emitted
state and checkpoints         ``RunEngine`` scrubs node updates, the run's input and interrupt
                              values before they enter state or a checkpoint
checkpoint and history bytes  ``JsonSerializer(redactor=...)``; a ``Secret`` is always stored
                              as a placeholder (:mod:`flowcore.checkpoint.serde`)
text deltas                   the block executor streams each model call through one
                              :meth:`SecretRedactor.text_stream`
errors                        ``RunEngine`` scrubs every error it records (:func:`scrub_error`)
history records               ``record_from_result(..., redactor=...)``
port AiEvents                 ``InProcExecutor(redactor=...)`` (see :mod:`flowcore.port`)
provider keys                 providers keep their key as a :class:`Secret` and scrub it from
                              their errors
logs                          :func:`install_log_redaction` (every record as it is made, and
                              a :class:`RedactingFilter` on every handler, present and future)
CLI output                    the CLI redacts everything it prints with a redactor built from
                              the environment
============================  ==============================================================

Example:
    >>> redactor = SecretRedactor.from_environment({"OPENAI_API_KEY": "sk-test-0123456789"})
    >>> redactor.redact({"echo": "the key is sk-test-0123456789"})
    {'echo': 'the key is [REDACTED]'}
"""

from flowcore.secrets._forms import base32_cores, base64_cores, credential_name, secret_forms
from flowcore.secrets._logging import LogRedaction, RedactingFilter, install_log_redaction
from flowcore.secrets._protocol import (
    NO_REDACTION,
    LearningRedactor,
    Redactor,
    TextStreamRedactor,
)
from flowcore.secrets._redactor import DEFAULT_MIN_LENGTH, SecretRedactor, SecretTextStream
from flowcore.secrets._secret import PLACEHOLDER, Secret, SecretError, SecretUnavailableError
from flowcore.secrets._values import (
    RedactedError,
    conceal_secrets,
    find_secrets,
    learn,
    reveal_secrets,
    scrub,
    scrub_error,
)

__all__ = [
    "DEFAULT_MIN_LENGTH",
    "NO_REDACTION",
    "PLACEHOLDER",
    "LearningRedactor",
    "LogRedaction",
    "RedactedError",
    "RedactingFilter",
    "Redactor",
    "Secret",
    "SecretError",
    "SecretRedactor",
    "SecretTextStream",
    "SecretUnavailableError",
    "TextStreamRedactor",
    "base32_cores",
    "base64_cores",
    "conceal_secrets",
    "credential_name",
    "find_secrets",
    "install_log_redaction",
    "learn",
    "reveal_secrets",
    "scrub",
    "scrub_error",
    "secret_forms",
]
