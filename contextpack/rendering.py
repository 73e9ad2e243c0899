"""A Context Pack as the response body: exactly the four public fields, never the
builder's counters (which are for the metrics only). The shape of
``contextpack.serializers.PreparedContextOutput``."""

from typing import Any

from contextpack.builder import PreparedContext


def prepared_context(value: PreparedContext) -> dict[str, Any]:
    return {
        "schema": value.schema,
        "status": value.status,
        "content": value.content,
        "content_bytes": value.content_bytes,
    }
