"""A scriptable OpenAI-compatible chat server on a loopback port, for tests over real HTTP.

The server answers ``POST /v1/chat/completions`` (and ``/chat/completions``). Each request takes
the next scripted ``Reply`` from a queue; when the queue is empty it draws a fault from the
seeded ``Faults`` profile, and otherwise sends the default reply (an echo of the last user
message). It counts requests and tracks the largest number handled at once. With a
``Saturation``, it serves as vLLM does when full: never a 429, but a queue, so every request
beyond its capacity waits for a free slot and its latency grows with the load. With a
``Batching``, as vLLM does at any load: the requests in its batch share it, each slower the
fuller the batch, and the rest queue.

Usage::

    with OpenAIServer() as server:
        server.script(Reply.rate_limited(retry_after=0.2), Reply.text("hello"))
        ...  # point a client at server.url (ends in /v1)
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted response of the server."""

    status: int = 200
    content: str | None = None
    echo: bool = False
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: str | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    error_message: str = ""
    error_type: str = "server_error"
    error_code: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Put the request's Authorization header in the error message, as some providers do.
    leak_key: bool = False

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        """A 200 reply with fixed text."""
        return cls(content=content, **kw)

    @classmethod
    def echo_user(cls, **kw: Any) -> Reply:
        """A 200 reply repeating the last user message."""
        return cls(echo=True, **kw)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any], call_id: str = "call_0") -> Reply:
        """A 200 reply asking for one function call."""
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return cls(tool_calls=[call], finish_reason="tool_calls")

    @classmethod
    def rate_limited(cls, retry_after: float | None = None) -> Reply:
        """A 429, with a ``Retry-After`` header in seconds when given."""
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        return cls(
            status=429,
            headers=headers,
            error_message="Rate limit reached for requests",
            error_type="requests",
            error_code="rate_limit_exceeded",
        )

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        """A 5xx error."""
        return cls(status=status, error_message="The server had an error processing your request")

    @classmethod
    def slow(cls, delay_s: float, content: str = "late") -> Reply:
        """A 200 reply sent after ``delay_s`` seconds (for client timeouts)."""
        return cls(content=content, delay_s=delay_s)

    @classmethod
    def context_length(cls) -> Reply:
        """A 400 as OpenAI sends it when the prompt is too long for the model."""
        return cls(
            status=400,
            error_message=(
                "This model's maximum context length is 4096 tokens. However, your messages "
                "resulted in 9000 tokens. Please reduce the length of the messages."
            ),
            error_type="invalid_request_error",
            error_code="context_length_exceeded",
        )

    @classmethod
    def unauthorized(cls, leak_key: bool = True) -> Reply:
        """A 401 whose message quotes the key the client sent (when ``leak_key``)."""
        return cls(
            status=401,
            error_message="Incorrect API key provided",
            error_type="invalid_request_error",
            error_code="invalid_api_key",
            leak_key=leak_key,
        )


@dataclass
class Faults:
    """Random faults for requests with nothing scripted, drawn from a seeded generator."""

    p_rate_limit: float = 0.0
    p_server_error: float = 0.0
    p_slow: float = 0.0
    retry_after: float | None = None
    slow_s: float = 1.0
    seed: int = 0

    def draw(self, rng: random.Random) -> Reply | None:
        """A fault reply, or None for a normal one."""
        u = rng.random()
        if u < self.p_rate_limit:
            return Reply.rate_limited(self.retry_after)
        u -= self.p_rate_limit
        if u < self.p_server_error:
            return Reply.server_error()
        u -= self.p_server_error
        if u < self.p_slow:
            return Reply.slow(self.slow_s)
        return None


@dataclass
class Saturation:
    """A server that processes ``capacity`` requests at once, each for ``service_s`` seconds,
    and queues the rest (first come, first served) instead of refusing them."""

    capacity: int = 4
    service_s: float = 0.05


class Batching:
    """Serves as vLLM does: up to ``max_batch`` requests decode together, the rest queue.

    A request alone takes ``service_s``. Requests in a batch share the server (processor
    sharing): with n in the batch each advances at 1 / (1 + (full_slowdown - 1)(n - 1) /
    (max_batch - 1)) of its speed alone, so in a full batch a request takes ``full_slowdown``
    times as long while the batch serves ``max_batch / full_slowdown`` times as many per second.
    Requests beyond ``max_batch`` wait, first come, first served; none is refused.
    """

    def __init__(self, max_batch: int = 32, service_s: float = 1.0, full_slowdown: float = 1.0):
        if max_batch < 1 or service_s < 0 or full_slowdown < 1:
            raise ValueError("need max_batch >= 1, service_s >= 0 and full_slowdown >= 1")
        self.max_batch = max_batch
        self.service_s = service_s
        self.full_slowdown = full_slowdown
        self._cond = threading.Condition()
        self._work: dict[int, float] = {}  # request -> seconds of work left (alone)
        self._queue: deque[int] = deque()
        self._last = time.monotonic()
        self._ids = 0

    def slowdown(self, n: int) -> float:
        """How many times longer a request takes in a batch of ``n`` than alone."""
        return 1.0 + (self.full_slowdown - 1.0) * (n - 1) / max(self.max_batch - 1, 1)

    def _advance(self) -> None:
        # Called with the lock held: every request in the batch did work since the last event.
        now = time.monotonic()
        if self._work:
            done = (now - self._last) / self.slowdown(len(self._work))
            for request in self._work:
                self._work[request] -= done
        self._last = now

    def serve(self) -> None:
        """Block for one request's turn: its wait in the queue and its share of the batch."""
        with self._cond:
            self._advance()
            request = self._ids = self._ids + 1
            self._queue.append(request)
            while True:
                while self._queue and len(self._work) < self.max_batch:
                    self._work[self._queue.popleft()] = self.service_s
                left = self._work.get(request)
                if left is not None and left <= 1e-4:
                    del self._work[request]
                    self._advance()
                    self._cond.notify_all()  # the batch got smaller: the others speed up
                    return
                timeout = None if left is None else left * self.slowdown(len(self._work))
                self._cond.wait(timeout)
                self._advance()


@dataclass
class SeenRequest:
    """A request the server received."""

    at: float
    path: str
    body: dict[str, Any]
    authorization: str
    status: int
    #: Requests in the server at its arrival, itself included (served and queued).
    in_flight: int = 0


def _word_count(messages: list[dict[str, Any]]) -> int:
    words = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            words += len(content.split())
    return max(words, 1)


class _HTTPServer(ThreadingHTTPServer):
    # socketserver's default backlog of 5 refuses bursts of concurrent clients.
    request_queue_size = 256


class OpenAIServer:
    """The scriptable server; a context manager that starts and stops it."""

    def __init__(
        self,
        faults: Faults | None = None,
        default: Reply | None = None,
        saturation: Saturation | None = None,
        batching: Batching | None = None,
    ) -> None:
        self.faults = faults or Faults()
        self.saturation = saturation
        #: Serve every request in a vLLM-like batch (see ``Batching``); may be set before start.
        self.batching = batching
        self._slots = threading.Semaphore(saturation.capacity) if saturation else None
        self.default = default or Reply.echo_user()
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._rng = random.Random(self.faults.seed)
        self._stopping = threading.Event()
        self.requests: list[SeenRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = _HTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        # Do not wait on handlers still sleeping in a slow reply when the server stops.
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # ------------------------------------------------------------------ control

    @property
    def port(self) -> int:
        """The loopback port the server listens on."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL for an OpenAI client (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def request_count(self) -> int:
        """Chat-completion requests received so far."""
        with self._lock:
            return len(self.requests)

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget queued replies, seen requests and the in-flight maximum."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.max_in_flight = 0
            self._rng = random.Random(self.faults.seed)

    def start(self) -> OpenAIServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ serving

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            fault = self.faults.draw(self._rng)
        return fault or self.default

    def _handle(
        self, path: str, body: dict[str, Any], authorization: str
    ) -> tuple[int, Any, Reply]:
        reply = self._next_reply()
        with self._lock:
            self.in_flight += 1
            self.requests.append(
                SeenRequest(
                    time.monotonic(), path, body, authorization, reply.status, self.in_flight
                )
            )
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self._slots is not None and self.saturation is not None:
                # Queued, not refused: wait for a free slot, then take the service time.
                with self._slots:
                    self._stopping.wait(self.saturation.service_s)
            if self.batching is not None:
                self.batching.serve()
            if reply.delay_s:
                self._stopping.wait(reply.delay_s)
            if reply.status != 200:
                message = reply.error_message
                if reply.leak_key:
                    message += f": {authorization.removeprefix('Bearer ')}"
                error = {"message": message, "type": reply.error_type, "code": reply.error_code}
                return reply.status, {"error": error}, reply
            return 200, self._completion(body, reply), reply
        finally:
            with self._lock:
                self.in_flight -= 1

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        messages = body.get("messages", [])
        content = reply.content
        if reply.echo:
            users = [m.get("content") for m in messages if m.get("role") == "user"]
            content = str(users[-1]) if users else ""
        if reply.tool_calls is not None and reply.content is None:
            content = None
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _word_count(messages)
        completion = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else len((content or "").split()) + len(reply.tool_calls or [])
        )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reply.tool_calls is not None:
            message["tool_calls"] = reply.tool_calls
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason or "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                path = self.path.split("?", 1)[0]
                if not path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "bad"}})
                    return
                auth = self.headers.get("Authorization", "")
                status, payload, reply = server._handle(path, body, auth)
                self._send(status, payload, reply.headers)

            def _send(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up (its timeout); nothing left to answer.
                    pass

        return Handler
