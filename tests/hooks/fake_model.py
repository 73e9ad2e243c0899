"""A model endpoint on 127.0.0.1 for the real agent CLIs: records every request and
answers like the real APIs, streamed as the CLIs ask.

- Anthropic Messages (``POST /v1/messages``, Claude Code): server-sent events
  ``message_start`` ... ``message_stop`` (or one JSON message when not streamed);
- OpenAI Responses (``POST /v1/responses``, Codex): server-sent events
  ``response.created``, ``response.output_item.done`` per item, ``response.completed``;
- OpenAI Chat Completions (``POST .../chat/completions``, Copilot CLI's and OpenCode's
  OpenAI-compatible providers): ``chat.completion.chunk`` events, or one JSON answer;
- Gemini (``POST .../models/<model>:streamGenerateContent?alt=sse`` and
  ``:generateContent``, Gemini CLI): one ``GenerateContentResponse`` per event, or one
  JSON answer; ``:countTokens`` gets a count.

What to answer is a small script, ``turns``: the tool calls to make one after the other
(each once its predecessor's result is in the conversation), then a final text. A tool
the request does not offer is not called; instead the model calls ``wait_tool`` first when
the request offers it (Claude Code connects MCP servers in the background and offers
``WaitForMcpServers`` until they are ready). Requests without tools (titles, summaries)
get a short text.
"""

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "Done: remembered and found it."
ROUTER_ANSWER = {"complexity_reasoning": "a short task", "complexity_score": 10}


@dataclass
class ToolStep:
    name: str  # the tool's name without the agent's prefix, e.g. "remember_memory"
    arguments: dict


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict

    def text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class FakeModel:
    steps: list[ToolStep]
    requests: list[Recorded] = field(default_factory=list)
    calls: list[tuple[str, dict]] = field(default_factory=list)  # (tool name, arguments)
    results: list[str] = field(default_factory=list)  # tool results the agent sent back

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._send(404, "application/json", b"{}")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0]
                with model.lock:
                    model.requests.append(
                        Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                if path.endswith("/messages/count_tokens"):
                    self._send(200, "application/json", b'{"input_tokens": 100}')
                elif path.endswith("/messages"):
                    self._anthropic(body)
                elif path.endswith("/responses"):
                    self._responses(body)
                elif path.endswith("/chat/completions"):
                    self._chat(body)
                elif path.endswith(":countTokens"):
                    self._send(200, "application/json", b'{"totalTokens": 100}')
                elif path.endswith(":streamGenerateContent") or path.endswith(":generateContent"):
                    answer = json.dumps(model.gemini_answer(body)).encode()
                    if path.endswith(":streamGenerateContent"):
                        self._send(200, "text/event-stream", b"data: " + answer + b"\r\n\r\n")
                    else:
                        self._send(200, "application/json", answer)
                else:
                    self._send(404, "application/json", b"{}")

            def _send(self, status: int, content_type: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _anthropic(self, body: dict) -> None:
                block = model.anthropic_block(body)
                if not body.get("stream"):
                    message = {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model", "claude"),
                        "content": [block],
                        "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5},
                    }
                    self._send(200, "application/json", json.dumps(message).encode())
                    return
                self._send(200, "text/event-stream", sse(anthropic_events(block, body)))

            def _responses(self, body: dict) -> None:
                item = model.responses_item(body)
                self._send(200, "text/event-stream", sse(responses_events(item)))

            def _chat(self, body: dict) -> None:
                message = model.chat_message(body)
                if body.get("stream"):
                    self._send(200, "text/event-stream", chat_events(message, body))
                else:
                    answer = chat_completion(message, body)
                    self._send(200, "application/json", json.dumps(answer).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "FakeModel":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- the script ------------------------------------------------------------------

    def next_step(self, offered: dict[str, str], done: set[str], wait_tool: str | None):
        """(tool name as offered, arguments, call id) of the next call, or None for the
        final text. ``offered`` maps bare tool names to the names the agent uses."""
        for index, step in enumerate(self.steps):
            call_id = f"call_{index}_{step.name}"
            if call_id in done:
                continue
            if step.name not in offered:
                if wait_tool and f"call_wait_{index}" not in done:
                    return wait_tool, {}, f"call_wait_{index}"
                return None
            return offered[step.name], step.arguments, call_id
        return None

    def anthropic_block(self, body: dict) -> dict:
        tools = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
        if not tools:
            return {"type": "text", "text": "PowerContext test"}
        offered = {name.rpartition("__")[2]: name for name in tools if name.startswith("mcp__")}
        done = set()
        for message in body.get("messages") or []:
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and part.get("type") == "tool_result":
                    done.add(part.get("tool_use_id"))
                    self._result(part.get("content"))
        wait = "WaitForMcpServers" if "WaitForMcpServers" in tools else None
        step = self.next_step(offered, done, wait)
        if step is None and "ToolSearch" in tools:
            step = self.tool_search(body, offered, done)
        if step is None:
            return {"type": "text", "text": FINAL_TEXT}
        name, arguments, call_id = step
        with self.lock:
            self.calls.append((name, arguments))
        return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}

    def tool_search(self, body: dict, offered: dict[str, str], done: set[str]):
        """Claude Code 2.1.332 defers MCP tools behind tool search: the request names them
        in a system message and offers ``ToolSearch``, whose result loads them. The model
        asks for the next step's tool by its exact name, once, as Claude would."""
        text = json.dumps(body, ensure_ascii=False)
        for index, step in enumerate(self.steps):
            if f"call_{index}_{step.name}" in done or step.name in offered:
                continue
            names = sorted(set(re.findall(r"mcp__[A-Za-z0-9_-]+__" + step.name + r"\b", text)))
            call_id = f"call_search_{index}"
            if not names or call_id in done:
                return None
            return "ToolSearch", {"query": "select:" + names[0]}, call_id
        return None

    def responses_item(self, body: dict) -> dict:
        offered: dict[str, tuple[str, str | None]] = {}
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace" and str(tool.get("name")).startswith("mcp__"):
                for inner in tool.get("tools") or []:
                    offered[inner["name"]] = (inner["name"], tool["name"])
            elif str(tool.get("name", "")).startswith("mcp__"):
                offered[tool["name"].rpartition("__")[2]] = (tool["name"], None)
        done = set()
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                done.add(item.get("call_id"))
                self._result(item.get("output"))
        names = {bare: bare for bare in offered}
        step = self.next_step(names, done, None)
        if step is None:
            return {
                "type": "message",
                "role": "assistant",
                "id": "msg_fake",
                "content": [{"type": "output_text", "text": FINAL_TEXT}],
            }
        bare, arguments, call_id = step
        name, namespace = offered[bare]
        with self.lock:
            self.calls.append((name, arguments))
        item = {
            "type": "function_call",
            "id": "fc_" + call_id,
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(arguments),
        }
        if namespace:
            item["namespace"] = namespace
        return item

    def chat_message(self, body: dict) -> dict:
        """The assistant message for an OpenAI Chat Completions request."""
        tools = [
            (t.get("function") or {}).get("name", "")
            for t in body.get("tools") or []
            if isinstance(t, dict)
        ]
        if not tools:
            return {"role": "assistant", "content": "PowerContext test"}
        offered = {bare_name(name): name for name in tools}
        done = set()
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "tool":
                done.add(message.get("tool_call_id"))
                self._result(message.get("content"))
        step = self.next_step(offered, done, None)
        if step is None:
            return {"role": "assistant", "content": FINAL_TEXT}
        name, arguments, call_id = step
        with self.lock:
            self.calls.append((name, arguments))
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        }

    def gemini_answer(self, body: dict) -> dict:
        """A ``GenerateContentResponse`` for a Gemini request. Gemini sends back no call
        id, so a step is done once a ``functionResponse`` of its tool is in the contents."""
        declared = [
            d.get("name", "")
            for tool in body.get("tools") or []
            if isinstance(tool, dict)
            for d in tool.get("functionDeclarations") or []
            if isinstance(d, dict)
        ]
        if not declared:
            part: dict = {"text": "PowerContext test"}
            if (body.get("generationConfig") or {}).get("responseMimeType") == "application/json":
                # What Gemini CLI's model router asks for (it falls back to its default
                # model on anything else, with a stack trace on stderr).
                part = {"text": json.dumps(ROUTER_ANSWER)}
        else:
            offered = {bare_name(name): name for name in declared}
            done = set()
            answered = []
            for content in body.get("contents") or []:
                for item in content.get("parts") or [] if isinstance(content, dict) else []:
                    if isinstance(item, dict) and "functionResponse" in item:
                        response = item["functionResponse"]
                        answered.append(bare_name(str(response.get("name", ""))))
                        self._result(response.get("response"))
            for index, step in enumerate(self.steps):
                if step.name in answered:
                    answered.remove(step.name)
                    done.add(f"call_{index}_{step.name}")
            step = self.next_step(offered, done, None)
            if step is None:
                part = {"text": FINAL_TEXT}
            else:
                name, arguments, _ = step
                with self.lock:
                    self.calls.append((name, arguments))
                part = {"functionCall": {"name": name, "args": arguments}}
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-2.5-pro",
        }

    def _result(self, content: Any) -> None:
        text = content if isinstance(content, str) else json.dumps(content)
        with self.lock:
            if text not in self.results:
                self.results.append(text)


def bare_name(name: str) -> str:
    """A tool's name without the prefix an agent gives MCP tools (``mcp__server__``,
    ``mcp_server_``, ``server-``): what follows the server's name."""
    for marker in ("powercontext__", "powercontext_", "powercontext-"):
        if marker in name:
            return name.rpartition(marker)[2]
    return name


def chat_completion(message: dict, body: dict) -> dict:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chat_events(message: dict, body: dict) -> bytes:
    """The streamed form: the whole message in one delta, then the finish and usage."""
    delta = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        delta["content"] = None
        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
    finish = "tool_calls" if message.get("tool_calls") else "stop"

    def chunk(choice: dict, usage: dict | None = None) -> bytes:
        data = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [choice],
        }
        if usage is not None:
            data["usage"] = usage
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return (
        chunk({"index": 0, "delta": delta, "finish_reason": None})
        + chunk({"index": 0, "delta": {}, "finish_reason": finish}, usage)
        + b"data: [DONE]\n\n"
    )


def sse(events: list[tuple[str, dict]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def anthropic_events(block: dict, body: dict) -> list[tuple[str, dict]]:
    start = {"type": block["type"], **({"text": ""} if block["type"] == "text" else {})}
    if block["type"] == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        stop_reason = "tool_use"
    else:
        delta = {"type": "text_delta", "text": block["text"]}
        stop_reason = "end_turn"
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def responses_events(item: dict) -> list[tuple[str, dict]]:
    usage = {
        "input_tokens": 10,
        "input_tokens_details": None,
        "output_tokens": 5,
        "output_tokens_details": None,
        "total_tokens": 15,
    }
    return [
        ("response.created", {"type": "response.created", "response": {"id": "resp_fake"}}),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        (
            "response.completed",
            {"type": "response.completed", "response": {"id": "resp_fake", "usage": usage}},
        ),
    ]
