from rest_framework import serializers

from contextpack.builder import MAX_MAX_BYTES, MIN_MAX_BYTES, SCHEMA
from contextpack.limits import QUERY_MAX_CHARS, SESSION_DEFAULT_MAX_BYTES, SESSION_MAX_MAX_BYTES
from powercontext.api.fields import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    scope_id_field,
)


class PrepareContextInput(StrictSerializer):
    """The prompt to prepare a Context Pack for and the pack's byte budget (512 to
    32768). Rejects unknown fields."""

    scope_id = scope_id_field()
    query = StrictCharField(non_blank=True, min_length=1, max_length=QUERY_MAX_CHARS)
    max_bytes = StrictIntegerField(min_value=MIN_MAX_BYTES, max_value=MAX_MAX_BYTES, default=8000)


class SessionContextInput(StrictSerializer):
    """The scope a session starts in and the pack's byte budget (512 to 8000, default
    2000: a session's pack is small). Rejects unknown fields."""

    scope_id = scope_id_field()
    max_bytes = StrictIntegerField(
        min_value=MIN_MAX_BYTES, max_value=SESSION_MAX_MAX_BYTES, default=SESSION_DEFAULT_MAX_BYTES
    )


class PreparedContextOutput(serializers.Serializer):
    """A Context Pack: ``content`` is the text to inject (``null`` when ``empty``),
    ``content_bytes`` its UTF-8 length."""

    schema = serializers.ChoiceField(choices=[SCHEMA])
    status = serializers.ChoiceField(choices=["ready", "empty"])
    content = serializers.CharField(allow_null=True)
    content_bytes = serializers.IntegerField(min_value=0, max_value=MAX_MAX_BYTES)
