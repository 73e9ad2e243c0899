"""What a write redacted, on the wire: a response header, never a member of the body.

The bodies are the RFC's and the existing operations' shapes, and clients generated from
them refuse a member they do not know; a header is where every client lets it through.
The stored text holds each redaction as ``[redacted:<kind>]``; the header counts them."""

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.response import Response

REDACTED_HEADER = "PowerContext-Redacted"


def redacted_header(kinds: Mapping[str, int]) -> str:
    """``2; kinds=aws-access-key-id,password``: how many secrets were replaced, and of
    which kinds (sorted); ``0`` when nothing was."""
    count = sum(kinds.values())
    return f"{count}; kinds={','.join(sorted(kinds))}" if count else "0"


def with_redactions(response: Response, result: Any) -> Response:
    """``response`` with ``REDACTED_HEADER`` when ``result`` is a write's: its value has
    ``redacted``, what the write replaced by kind (a read's is ``None`` or absent)."""
    kinds = getattr(result, "redacted", None)
    if kinds is not None:
        response[REDACTED_HEADER] = redacted_header(kinds)
    return response


def redacted_header_parameter(status: int) -> OpenApiParameter:
    """The header as the OpenAPI document describes it on a write's ``status`` answer."""
    return OpenApiParameter(
        REDACTED_HEADER,
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=[status],
        required=True,
        description="How many secrets (and `<private>` spans) the write replaced by typed "
        "markers before storing anything, then the kinds: `2; kinds=aws-access-key-id,"
        "password`, or `0` when nothing was. The stored text holds each as "
        "`[redacted:<kind>]`.",
    )
