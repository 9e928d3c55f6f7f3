"""A real OpenAI-compatible HTTP server for tests, stdlib only.

Tests of the model adapter must exercise the actual `openai` client over HTTP (status codes, headers,
timeouts, connection handling), because that is where compatibility with vLLM / Ollama / llama.cpp
breaks. Mocking the client would only test our assumptions about it. The stub answers
POST /v1/chat/completions (and /chat/completions) from a queue of scripted behaviours and records
every request body so tests can assert on what was actually sent.

Usage::

    with OpenAIStub() as stub:
        stub.reply_text("hello")
        stub.reply_error(429, "slow down", retry_after=2)
        model = OpenAIChatModel("m", base_url=stub.base_url)
        ...
        assert stub.requests[0]["temperature"] == 0.0
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["NO_SCRIPT_MESSAGE", "OpenAIStub", "ScriptedResponse", "StubToolCall", "closed_port"]

NO_SCRIPT_MESSAGE = "stub: no scripted response left"
_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})


@dataclass(frozen=True)
class StubToolCall:
    """One tool call in a scripted reply.

    `arguments` is the raw string put on the wire, so tests can send malformed JSON. `id=None` omits
    the id field entirely, as some local servers do.
    """

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class ScriptedResponse:
    """One queued behaviour: wait `delay` seconds, then answer with `status`, `headers` and `body`.

    `body` may be a JSON-serialisable value or a `str` sent verbatim (for unparseable responses), with
    `content_type` (default: application/json for values, text/plain for strings).
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str | None = None


def _error_body(message: str, error_type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _not_found(message: str) -> ScriptedResponse:
    return ScriptedResponse(404, _error_body(message, "invalid_request_error"))


class _Server(ThreadingHTTPServer):
    """Carries a back-reference to the stub so handlers can reach its queue and log."""

    daemon_threads = True
    stub: OpenAIStub


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, so no handler thread lingers on a keep-alive socket
    # after the test is done.
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log; tests inspect `stub.requests` instead."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        stub = self.server.stub
        if self.path.split("?", 1)[0] not in _CHAT_PATHS:
            self._send(_not_found(f"stub: no route POST {self.path}"))
            return
        try:
            body: Any = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = raw.decode("utf-8", errors="replace")
        script = stub._record_and_pop(self.path, dict(self.headers.items()), body)
        if script.delay > 0 and stub._stopping.wait(script.delay):
            return  # the stub is shutting down: drop the connection rather than answer late
        self._send(script)

    def do_GET(self) -> None:
        self._send(_not_found(f"stub: no route GET {self.path}"))

    def _send(self, script: ScriptedResponse) -> None:
        if isinstance(script.body, str):
            payload = script.body.encode("utf-8")
            content_type = script.content_type or "text/plain; charset=utf-8"
        else:
            payload = json.dumps(script.body).encode("utf-8")
            content_type = script.content_type or "application/json"
        try:
            self.send_response(script.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in script.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired): nothing to answer


class OpenAIStub:
    """A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (random free port).

    Behaviours are consumed in FIFO order, one per request. When the queue is empty the stub answers
    500 with NO_SCRIPT_MESSAGE, so an unexpected extra request fails loudly instead of hanging.
    All `reply_*` methods return `self` so scripts can be chained.
    """

    def __init__(self, *, model: str = "stub-model") -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        """Every JSON request body received, in order (non-JSON bodies are recorded under "_raw")."""
        self.request_paths: list[str] = []
        self.request_headers: list[dict[str, str]] = []
        self._queue: deque[ScriptedResponse] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._counter = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> OpenAIStub:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.stub = self
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # wake handlers sleeping on a scripted delay
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("OpenAIStub is not running; use it as a context manager or call start()")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to hand to an OpenAI client, e.g. "http://127.0.0.1:54321/v1"."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pending(self) -> int:
        """How many scripted behaviours have not been consumed yet."""
        with self._lock:
            return len(self._queue)

    # -- scripting -------------------------------------------------------------------------------

    def enqueue(self, script: ScriptedResponse) -> OpenAIStub:
        with self._lock:
            self._queue.append(script)
        return self

    def reply_text(self, text: str | None, *, usage: bool = True, prompt_tokens: int = 11,
                   completion_tokens: int = 7, finish_reason: str | None = "stop", delay: float = 0.0,
                   model: str | None = None) -> OpenAIStub:
        """Answer with an assistant message whose content is `text`."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        return self.reply_message(message, usage=usage, prompt_tokens=prompt_tokens,
                                  completion_tokens=completion_tokens, finish_reason=finish_reason,
                                  delay=delay, model=model)

    def reply_tool_calls(self, calls: Sequence[StubToolCall | tuple[str, str]], *, text: str | None = None,
                         usage: bool = True, prompt_tokens: int = 11, completion_tokens: int = 7,
                         finish_reason: str | None = "tool_calls", delay: float = 0.0,
                         model: str | None = None) -> OpenAIStub:
        """Answer with tool calls; a `(name, raw_arguments)` tuple means a call without an id."""
        wire: list[dict[str, Any]] = []
        for call in calls:
            spec = call if isinstance(call, StubToolCall) else StubToolCall(call[0], call[1])
            function = {"name": spec.name, "arguments": spec.arguments}
            item: dict[str, Any] = {"type": "function", "function": function}
            if spec.id is not None:
                item["id"] = spec.id
            wire.append(item)
        message: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": wire}
        return self.reply_message(message, usage=usage, prompt_tokens=prompt_tokens,
                                  completion_tokens=completion_tokens, finish_reason=finish_reason,
                                  delay=delay, model=model)

    def reply_message(self, message: Mapping[str, Any], *, usage: bool = True, prompt_tokens: int = 11,
                      completion_tokens: int = 7, finish_reason: str | None = "stop", delay: float = 0.0,
                      model: str | None = None) -> OpenAIStub:
        """Answer with an arbitrary assistant `message` object wrapped in a full completion."""
        with self._lock:
            self._counter += 1
            number = self._counter
        body: dict[str, Any] = {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000 + number,
            "model": model or self.model,
            "choices": [
                {"index": 0, "message": dict(message), "finish_reason": finish_reason, "logprobs": None},
            ],
        }
        if usage:
            body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
        return self.enqueue(ScriptedResponse(200, body, delay=delay))

    def reply_error(self, status: int, message: str = "stub error", *, retry_after: float | str | None = None,
                    error_type: str | None = None, code: str | None = None, delay: float = 0.0) -> OpenAIStub:
        """Answer with an OpenAI-style error body; `retry_after` sets the Retry-After header."""
        if error_type is None:
            error_type = {400: "invalid_request_error", 401: "authentication_error",
                          404: "not_found_error", 429: "rate_limit_error"}.get(status, "server_error")
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return self.enqueue(ScriptedResponse(status, _error_body(message, error_type, code), headers, delay))

    def reply_raw(self, status: int, body: Any, *, headers: Mapping[str, str] | None = None,
                  delay: float = 0.0, content_type: str | None = None) -> OpenAIStub:
        """Answer with any body: a JSON value, or a `str` sent verbatim (text/plain unless `content_type`)."""
        return self.enqueue(ScriptedResponse(status, body, dict(headers or {}), delay, content_type))

    def reply_stream(self, text: str) -> OpenAIStub:
        """Answer with a server-sent-event stream (as a server does when it streams though none was asked)."""
        chunk = {"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 1_700_000_000,
                 "model": self.model, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                                   "finish_reason": None}]}
        body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"
        return self.reply_raw(200, body, content_type="text/event-stream")

    # -- handler side ----------------------------------------------------------------------------

    def _record_and_pop(self, path: str, headers: dict[str, str], body: Any) -> ScriptedResponse:
        with self._lock:
            self.requests.append(body if isinstance(body, dict) else {"_raw": body})
            self.request_paths.append(path)
            self.request_headers.append(headers)
            if self._queue:
                return self._queue.popleft()
        return ScriptedResponse(500, _error_body(NO_SCRIPT_MESSAGE, "server_error"))


def closed_port() -> int:
    """A local port with nothing listening on it (bound once, then released), for connection-refused tests."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
