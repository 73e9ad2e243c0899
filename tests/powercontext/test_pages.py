"""The page budget's measure (``powercontext.pages``) counts what the API's renderer
writes: the two live apart now (selectors must not import the wire), so this pins them."""

import pytest

from powercontext.api.renderers import CompactJSONRenderer
from powercontext.pages import json_text_bytes


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain words",
        'a "quote", a \\ and a\nnewline\ttab',
        "\x00\x01\x1f control characters",
        "non-ASCII: é ü 漢字 😀",
        "line separators \u2028 and \u2029",
    ],
)
def test_a_texts_cost_is_what_the_renderer_writes(text: str) -> None:
    rendered = CompactJSONRenderer().render(text)
    # Without the two quotes around a JSON string.
    assert json_text_bytes(text) == len(rendered) - 2
