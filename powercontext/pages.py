"""What a list page's text costs in a response, so the families' selectors budget their
pages in the bytes the JSON takes without importing the API's renderer.

:func:`json_text_bytes` counts as ``powercontext.api.renderers.CompactJSONRenderer``
writes (compact, non-ASCII kept as is): the two must change together.
"""

from json.encoder import encode_basestring


def json_text_bytes(text: str) -> int:
    """The bytes ``text`` takes in a response as :class:`CompactJSONRenderer` writes it
    (UTF-8, escapes included, without the quotes): a control character takes six bytes
    (``\\u0001``), a quote or a newline two, U+2028 and U+2029 six. What a page budget
    counts, so that a page of escapes is no larger than a page of words."""
    # encode_basestring escapes as the renderer does and leaves non-ASCII as is; what
    # non-ASCII adds in UTF-8 is the encoded length beyond the character count.
    escaped = len(encode_basestring(text)) - 2
    # DRF's renderer writes U+2028 and U+2029 as escapes too (6 bytes, not 3).
    separators = 3 * (text.count("\u2028") + text.count("\u2029"))
    return escaped + len(text.encode("utf-8", "surrogatepass")) - len(text) + separators
