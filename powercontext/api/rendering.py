"""Typed results become response bodies in one way: through their operation's output
serializer, the one the OpenAPI document is generated from. The HTTP views and the MCP
tools both render with it, so both answer the documented shape."""

from typing import Any

from rest_framework import serializers


def render(output: type[serializers.Serializer], value: Any) -> dict[str, Any]:
    """The JSON body of ``value`` (a selector's or service's typed result)."""
    return output(value).data
