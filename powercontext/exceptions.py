"""Domain errors. Services raise these; the API maps them to the documented error shape
(``powercontext.api.errors``) and the admin to messages. Messages never carry user data.

The kernel keeps the generic ones (and those of its own records: artifacts, sources); a
family declares its own beside its services (``memory/exceptions.py``,
``experience/exceptions.py``). Each class carries its API ``code`` and HTTP ``status``:
the error mapping and the metrics' closed set of codes (``error_codes``) are read from the
classes, so a new error needs no table.
"""

from collections.abc import Iterator
from typing import Any, ClassVar


class PowerContextError(Exception):
    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500
    default_message: ClassVar[str] = "Internal error."

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None):
        self.message = message or self.default_message
        self.details = details
        super().__init__(self.message)


class InvalidRequest(PowerContextError):
    code, status, default_message = "invalid_request", 422, "The request is invalid."

    def __init__(self, field: str, message: str):
        super().__init__(details={"errors": [{"field": field, "message": message}]})


class CapabilityNotSupported(PowerContextError):
    code, status = "capability_not_supported", 422
    default_message = "This capability is not supported by this server."


class PermissionDenied(PowerContextError):
    code, status = "permission_denied", 403
    default_message = "You do not have permission to perform this operation."


class ArtifactNotFound(PowerContextError):
    code, status, default_message = "artifact_not_found", 404, "Artifact or revision not found."


class SourceConflict(PowerContextError):
    code, status = "source_conflict", 409
    default_message = "A different payload was already captured under this source id."


class RevisionConflict(PowerContextError):
    code, status = "revision_conflict", 409
    default_message = "The artifact has moved on; re-read it and retry."


class InsufficientStorage(PowerContextError):
    """The database's storage refused the write: no space left, or read-only. The
    operation's transaction was rolled back, so nothing of it was written; earlier
    acknowledged writes are untouched. Retry once the operator has freed space."""

    code, status = "insufficient_storage", 507
    _MESSAGES: ClassVar[dict[str, str]] = {
        "no_space": "The server's storage is full; nothing was written. Retry later.",
        "read_only": "The server's database is read-only; nothing was written. Retry later.",
    }
    default_message = _MESSAGES["no_space"]

    def __init__(self, reason: str):
        super().__init__(self._MESSAGES[reason], details={"reason": reason})


def _with_subclasses(error: type[PowerContextError]) -> Iterator[type[PowerContextError]]:
    yield error
    for subclass in error.__subclasses__():
        yield from _with_subclasses(subclass)


def error_codes() -> frozenset[str]:
    """The code of every domain error defined: the kernel's and those of every family
    module imported (a code is only ever answered by raising its class, so the set is
    complete for every code seen). Read from the classes each time: a closed set, which
    no caller can add to."""
    return frozenset(error.code for error in _with_subclasses(PowerContextError))
