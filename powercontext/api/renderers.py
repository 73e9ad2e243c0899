"""Compact JSON responses with non-ASCII kept as is (the Context Pack's bytes are exact)."""

from rest_framework.renderers import JSONRenderer


class CompactJSONRenderer(JSONRenderer):
    ensure_ascii = False
    compact = True
