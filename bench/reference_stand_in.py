"""A small stand-in for the reference server, so bench/versus_reference.py runs in CI
without installing it: the five operations the bench sends, in the reference 1.4.1's
shapes, over an in-memory list (standard library only; not a model of its speed).

    python bench/reference_stand_in.py --port PORT

``GET /health/live``; ``POST /v1/scopes`` (201, a new ``scope_id``); ``/v1/memory/remember``;
``/v1/memory/search`` (entries sharing a word with the query, at most ``limit``);
``/v1/context/prepare`` (those entries as the pack's content). An unknown scope is 404.
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Store:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scopes: dict[str, list[dict]] = {}

    def matching(self, scope: str, query: str, limit: int) -> list[dict]:
        words = set(query.lower().split())
        with self.lock:
            return [e for e in self.scopes[scope] if words & set(e["text"].lower().split())][:limit]


STORE = Store()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the bench's client expects

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def answer(self, status: int, body: dict) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        if self.path == "/health/live":
            self.answer(200, {"status": "ok"})
        else:
            self.answer(404, {"detail": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/v1/scopes":
            scope = "scp_" + uuid.uuid4().hex
            with STORE.lock:
                STORE.scopes[scope] = []
            self.answer(201, {"scope_id": scope, "title": body.get("title"), "version": 1})
            return
        scope = body.get("scope_id")
        if scope not in STORE.scopes:
            self.answer(404, {"detail": "scope not found"})
        elif self.path == "/v1/memory/remember":
            record = {"kind": body["kind"], "text": body["text"], "state": "active"}
            with STORE.lock:
                STORE.scopes[scope].append(record)
            self.answer(200, {"changed": True, "records": [record]})
        elif self.path == "/v1/memory/search":
            hits = STORE.matching(scope, body["query"], int(body.get("limit", 10)))
            self.answer(200, {"mode": "text", "hits": [{"memory": h, "score": 1.0} for h in hits]})
        elif self.path == "/v1/context/prepare":
            hits = STORE.matching(scope, body["query"], 16)
            content = "\n".join(h["text"] for h in hits)
            self.answer(200, {"status": "ready", "content": content, "content_bytes": len(content)})
        else:
            self.answer(404, {"detail": "not found"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
