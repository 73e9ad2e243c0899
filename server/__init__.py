"""The composition root: settings, URLs, WSGI/ASGI, the waitress server, the MCP surface
and the commands that serve (``serve``, ``mcp_stdio``).

It sits above every family and may import anything; nothing below it (the kernel in the
rest of ``powercontext``, the families ``memory``, ``experience``, ``contextpack``) imports
it. ``tests/powercontext/test_layers.py`` checks both directions.
"""
