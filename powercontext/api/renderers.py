"""Compact JSON responses with non-ASCII kept as is (the Context Pack's bytes are exact).

What a text costs in such a response is ``powercontext.pages.json_text_bytes``: the two
change together.
"""

from rest_framework.renderers import JSONRenderer


class CompactJSONRenderer(JSONRenderer):
    ensure_ascii = False
    compact = True
