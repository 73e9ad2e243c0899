"""A Python client for the PowerContext HTTP API, synchronous and asynchronous.

    from powercontext_client import PowerContextClient, errors

    with PowerContextClient() as pc:  # $POWERCONTEXT_URL, $POWERCONTEXT_API_TOKEN
        hits = pc.search_memory(scope_id="git:github.com/acme/widgets", query="deploy")

Built on httpx; imports nothing from Django, so agents and scripts can use it without
the server's settings. See docs/client.md.
"""

from powercontext_client import errors, types
from powercontext_client._async.client import AsyncPowerContextClient
from powercontext_client._sync.client import PowerContextClient
from powercontext_client.errors import (
    CapabilityNotSupported,
    Conflict,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PowerContextError,
    ServerError,
    Timeout,
    Unauthorized,
    Unavailable,
    UnexpectedResponse,
)

__all__ = [
    "AsyncPowerContextClient",
    "CapabilityNotSupported",
    "Conflict",
    "InvalidRequest",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "PowerContextClient",
    "PowerContextError",
    "ServerError",
    "Timeout",
    "Unauthorized",
    "Unavailable",
    "UnexpectedResponse",
    "errors",
    "types",
]
