"""MCP test helpers: the live server of the client tests, and MCP SDK clients for it."""

import json

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.client.conftest import closed_port, live_url, pc  # noqa: F401  (fixtures)


def http_client(url: str, token: str | None = None, *, mode: str = "legacy") -> Client:
    """The SDK's client over Streamable HTTP. ``legacy`` is the initialize handshake the
    agents speak today; ``auto`` tries the SDK's newer protocol first."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(
        url + "/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=30)
    )
    return Client(transport, mode=mode)


async def call(client: Client, name: str, arguments: dict) -> tuple[bool, dict]:
    """(is_error, structured content) of a tool call; checks the text content says the
    same as the structured content."""
    result = await client.call_tool(name, arguments)
    (text,) = result.content
    assert json.loads(text.text) == result.structured_content
    return bool(result.is_error), result.structured_content
