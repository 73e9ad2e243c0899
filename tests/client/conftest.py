"""A live PowerContext server for the client and MCP tests.

The production WSGI application (``server.wsgi``: Django plus ``/mcp``) served by
the production server class (waitress, ``server.serving.Server``) on a free
loopback port, in a thread of the test process: it uses the test database, and the
``settings`` fixture's overrides (the API token, the body limit) apply to it.
"""

import socket
import threading

import pytest

from powercontext_client import AsyncPowerContextClient, PowerContextClient
from server.serving import Server

SCOPE = "git:example.com/acme/client-widgets"


@pytest.fixture
def live_url(transactional_db):
    from server.wsgi import application

    server = Server(application, host="127.0.0.1", port=0, threads=4)
    thread = threading.Thread(target=server.run, kwargs={"grace": 2.0}, daemon=True)
    thread.start()
    yield server.url.rstrip("/")
    server.request_stop(immediately=True)
    thread.join(10)


@pytest.fixture
def pc(live_url):
    with PowerContextClient(live_url, token="", timeout=10) as client:
        yield client


@pytest.fixture
def apc(live_url):
    return lambda **kwargs: AsyncPowerContextClient(live_url, **{"timeout": 10, **kwargs})


@pytest.fixture
def closed_port():
    """A loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_server():
    """A server that accepts connections and never answers: for timeouts."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            accepted.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    stop.set()
    thread.join(2)
    for connection in accepted:
        connection.close()
    listener.close()
