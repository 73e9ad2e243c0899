"""Strict JSON request parsing (DESIGN.md §4, "Strict JSON")."""

import json
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate object key")
    return result


def _check_strings(value: Any) -> None:
    """Reject lone surrogates (``"\\ud800"`` parses, but is not Unicode text)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def loads_strict(raw: bytes) -> Any:
    """Parse ``raw`` as strict JSON: valid UTF-8, no NaN/Infinity, no lone surrogates,
    no duplicate keys. Raises ValueError."""
    text = raw.decode("utf-8")
    value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_reject_duplicates)
    _check_strings(value)
    return value


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return loads_strict(raw)
        except (ValueError, UnicodeError, RecursionError) as error:
            raise ParseError("The body is not valid JSON (UTF-8, no NaN or Infinity).") from error
