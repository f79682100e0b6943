"""The file bridge: an OpenAI-compatible server whose answers are written by hand, as files.

A role pointed at the bridge (``model: openai/NAME``, ``api_base: http://127.0.0.1:8765/v1``)
sends its chat requests as to any server. Each request becomes a file, and the role waits
until someone (a person, or a model in another session) writes its answer as a file:

* ``<dir>/pending/<name>.json``: a :class:`BridgeRequest`, the request body as sent (model,
  messages, tools, response_format, temperature, ...) with when it came and the role, if the
  client names one (an ``X-EvoSyn-Role`` header or ``metadata.role`` in the body; the gateway
  sends neither, so a model name per role, ``openai/designer``, is what tells roles apart);
* ``<dir>/answers/<name>.txt``: the assistant's text, or ``<dir>/answers/<name>.json``: an
  assistant message, ``{"content": ..., "tool_calls": [...]}`` (a tool call in OpenAI's form
  or as ``{"name": ..., "arguments": {...}}``), or a whole chat completion;
* ``<dir>/done/<name>.json``: a :class:`BridgeRecord`, the request with its answer, once sent;
* ``<dir>/failed/<name>.json``: the same for a request that got no answer (its answer was
  malformed: HTTP 502; none came in time: 504; the client hung up; the bridge restarted).

``<name>`` is ``<seq>-<digest>``: a sequence number over the folder's life and the first hex
digits of the request's digest. An answer is read once it has stopped changing for one poll,
so a file written in place is not read half-written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import select
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evosyn.records import utcnow

PENDING, ANSWERS, DONE, FAILED = "pending", "answers", "done", "failed"
ROLE_HEADER = "X-EvoSyn-Role"
"""Header a client may send to name the role of a request (shown by the viewer)."""

_NAME = re.compile(r"^(\d{6,})-[0-9a-f]{8}$")
_MESSAGE_KEYS = {"role", "content", "tool_calls", "finish_reason"}
# Keys of OpenAI's and vLLM's messages that a pasted completion carries empty.
_EMPTY_EXTRAS = {"refusal", "annotations", "audio", "function_call", "reasoning_content"}
_FINISH_REASONS = {"stop", "length", "tool_calls", "content_filter"}


class BridgeError(Exception):
    """A request the bridge could not answer; ``status`` is the HTTP status it answers with."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class AnswerError(ValueError):
    """An answer file that is not a valid assistant message; the message names the file."""


class BridgeRequest(BaseModel):
    """One request waiting for its answer (``pending/<name>.json``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="<seq>-<digest>: the file name of the request and its answer.")
    received_at: datetime = Field(description="When the bridge received the request.")
    role: str | None = Field(default=None, description="The role, when the client named it.")
    path: str = Field(description="The URL path the request came to.")
    request: dict[str, Any] = Field(description="The request body exactly as sent.")


class BridgeRecord(BridgeRequest):
    """A request with its outcome (``done/<name>.json`` or ``failed/<name>.json``)."""

    finished_at: datetime = Field(description="When the answer was sent, or the request failed.")
    answer: dict[str, Any] | None = Field(
        default=None, description="The assistant message sent back (OpenAI's form)."
    )
    answer_file: str | None = Field(
        default=None,
        description="The answer file as written, moved beside the record (<name>.answer.txt "
        "or .json).",
    )
    error: str | None = Field(default=None, description="Why the request failed, if it did.")
    status: int | None = Field(
        default=200, description="The HTTP status the client got (None: no reply was sent)."
    )


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` in one step (a reader sees the old file or the whole new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _args_json(arguments: Any, where: str) -> str:
    if arguments is None:
        return "{}"
    if isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False)
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            raise AnswerError(f"{where}: arguments are not JSON ({exc.msg})") from None
        if not isinstance(parsed, dict):
            raise AnswerError(f"{where}: arguments must be a JSON object")
        return arguments or "{}"
    raise AnswerError(f"{where}: arguments must be an object or a JSON string")


def normalize_tool_call(call: Any, index: int, default_id: str) -> dict[str, Any]:
    """One tool call in OpenAI's form, from that form or from ``{"name", "arguments"}``."""
    where = f"tool_calls[{index}]"
    if not isinstance(call, dict):
        raise AnswerError(f"{where} must be an object")
    function = call.get("function", call)
    if not isinstance(function, dict):
        raise AnswerError(f"{where}.function must be an object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise AnswerError(f"{where} has no function name")
    call_id = call.get("id") or default_id
    return {
        "id": str(call_id),
        "type": "function",
        "function": {"name": name, "arguments": _args_json(function.get("arguments"), where)},
    }


def normalize_message(data: Any, call_prefix: str = "call") -> dict[str, Any]:
    """An answer's assistant message in OpenAI's form, and its finish reason.

    ``data`` is a message (``content``, ``tool_calls``, optionally ``role`` and
    ``finish_reason``) or a whole chat completion (its first choice is taken). Raises
    AnswerError saying what is wrong.
    """
    if isinstance(data, dict) and "choices" in data:
        choices = data["choices"]
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise AnswerError("choices must be a non-empty list of objects")
        choice = choices[0]
        data = dict(choice.get("message") or {})
        if choice.get("finish_reason") and "finish_reason" not in data:
            data["finish_reason"] = choice["finish_reason"]
    if not isinstance(data, dict):
        raise AnswerError("the answer must be a JSON object (an assistant message)")
    data = {k: v for k, v in data.items() if k not in _EMPTY_EXTRAS or v}
    unknown = sorted(set(data) - _MESSAGE_KEYS)
    if unknown:
        raise AnswerError(f"unknown key {unknown[0]!r} (expected {sorted(_MESSAGE_KEYS)})")
    if data.get("role", "assistant") != "assistant":
        raise AnswerError(f"role must be 'assistant', not {data['role']!r}")
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise AnswerError("content must be a string or null")
    raw_calls = data.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise AnswerError("tool_calls must be a list")
    calls = [normalize_tool_call(c, i, f"{call_prefix}_{i}") for i, c in enumerate(raw_calls)]
    if content is None and not calls:
        raise AnswerError("the answer has neither content nor tool_calls")
    finish = data.get("finish_reason") or ("tool_calls" if calls else "stop")
    if finish not in _FINISH_REASONS:
        raise AnswerError(f"finish_reason must be one of {sorted(_FINISH_REASONS)}")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"message": message, "finish_reason": finish}


def looks_like_message(text: str) -> bool:
    """Whether a text answer is in fact a message with tool calls (sent as text by mistake).

    No role answers with a JSON object holding ``tool_calls``; as text, the customer of a
    rollout would read the JSON instead of the agent calling the tool.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(data, dict) and "tool_calls" in data


def read_answer(path: Path, call_prefix: str = "call") -> dict[str, Any]:
    """The message and finish reason of an answer file (``.txt``: text; ``.json``: a message).

    Raises:
        AnswerError: the file is not UTF-8, not JSON, or not a valid message; names the file.
    """
    try:
        text = path.read_text("utf-8")
        if path.suffix == ".txt":
            if looks_like_message(text):
                raise AnswerError("holds a message with tool_calls: name the file .json")
            return {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AnswerError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
        return normalize_message(data, call_prefix)
    except UnicodeDecodeError:
        raise AnswerError(f"{path}: not UTF-8 text") from None
    except AnswerError as exc:
        raise AnswerError(f"{path}: {exc}") from None


def _tokens(text: str) -> int:
    # A rough count (about four characters a token): the bridge has no tokenizer.
    return max(1, len(text) // 4) if text else 0


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    calls = json.dumps(message.get("tool_calls") or "")
    return f"{content or ''}{calls if message.get('tool_calls') else ''}"


def completion_body(
    name: str, request: dict[str, Any], answer: dict[str, Any], created: int
) -> dict[str, Any]:
    """The ``chat.completion`` object the client gets for ``answer`` (see ``read_answer``)."""
    messages = request.get("messages") or []
    prompt = sum(_tokens(_message_text(m)) for m in messages if isinstance(m, dict))
    if request.get("tools"):
        prompt += _tokens(json.dumps(request["tools"]))
    completion = _tokens(_message_text(answer["message"]))
    return {
        "id": f"chatcmpl-{name}",
        "object": "chat.completion",
        "created": created,
        "model": str(request.get("model") or "bridge"),
        "choices": [
            {"index": 0, "message": answer["message"], "finish_reason": answer["finish_reason"]}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


class Bridge:
    """The folder of one bridge: requests in, answers waited for, records kept.

    Args:
        folder: the bridge's folder (created with its subfolders).
        timeout_s: seconds a request waits for its answer before a 504; None: no limit.
        poll_s: seconds between looks for an answer file.
        log: where to say what happens (one line per event); default: nowhere.

    """

    def __init__(
        self,
        folder: str | Path,
        *,
        timeout_s: float | None = None,
        poll_s: float = 0.2,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError("timeout_s must be positive (or None for no limit)")
        if poll_s <= 0:
            raise ValueError("poll_s must be positive")
        self.folder = Path(folder)
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._log = log or (lambda line: None)
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        for sub in (PENDING, ANSWERS, DONE, FAILED):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self._seq = max((_seq(p.stem) for p in self.folder.glob("*/*")), default=0)
        self.stale = self._fail_stale()

    def _fail_stale(self) -> int:
        """Move requests left pending by an earlier bridge to failed/: their clients are gone."""
        count = 0
        for path in sorted((self.folder / PENDING).glob("*.json")):
            try:
                request = BridgeRequest.model_validate_json(path.read_text("utf-8"))
            except ValueError:  # not ours to read: keep it, out of the way
                os.replace(path, self.folder / FAILED / path.name)
                count += 1
                continue
            self._finish(request, FAILED, error="left pending by an earlier bridge", status=None)
            count += 1
        return count

    def submit(self, body: dict[str, Any], path: str, role: str | None) -> BridgeRequest:
        """Write a request to pending/ under a new name; returns it."""
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:8]
        with self._lock:
            self._seq += 1
            name = f"{self._seq:06d}-{digest}"
        request = BridgeRequest(name=name, received_at=utcnow(), role=role, path=path, request=body)
        write_atomic(self.folder / PENDING / f"{name}.json", request.model_dump_json(indent=2))
        self._log(f"pending  {name}  {_who(request)}  -> write {self.answer_hint(name)}")
        return request

    def answer_hint(self, name: str) -> str:
        """Where the answer of ``name`` goes (``.txt`` for text, ``.json`` for a message)."""
        return str(self.folder / ANSWERS / f"{name}.txt")

    def _answer_file(self, name: str) -> Path | None:
        found = [
            p
            for p in (self.folder / ANSWERS / f"{name}{s}" for s in (".json", ".txt"))
            if p.exists()
        ]
        if len(found) > 1:
            raise AnswerError(f"{found[0]} and {found[1]} both exist: keep one")
        return found[0] if found else None

    def wait(self, request: BridgeRequest, gone: Callable[[], bool]) -> dict[str, Any]:
        """Wait for the answer of ``request``; the ``chat.completion`` to send.

        ``gone`` tells whether the client hung up. The request ends in done/ or failed/.

        Raises:
            BridgeError: the answer is malformed (502), none came in time (504), the client
                hung up (499) or the bridge stops (503).
        """
        name = request.name
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        seen: tuple[Path, int, int] | None = None
        while True:
            try:
                path = self._answer_file(name)
                if path is not None:
                    stat = path.stat()
                    mark = (path, stat.st_size, stat.st_mtime_ns)
                    if mark == seen:  # unchanged for a whole poll: written
                        answer = read_answer(path, call_prefix=f"call_{_seq(name)}")
                        break
                    seen = mark
            except (AnswerError, OSError) as exc:
                self._fail(request, f"malformed answer: {exc}", 502, self._answer_file_quiet(name))
            if deadline is not None and time.monotonic() >= deadline:
                self._fail(request, f"no answer within {self.timeout_s:g}s", 504)
            if gone():
                self._fail(request, "the client hung up before the answer came", 499)
            if self.stopping.wait(self.poll_s):
                self._fail(request, "the bridge is stopping", 503)
        body = completion_body(name, request.request, answer, int(time.time()))
        self._finish(request, DONE, answer=answer["message"], answer_file=path)
        waited = (utcnow() - request.received_at).total_seconds()
        self._log(f"answered {name}  after {waited:.1f}s")
        return body

    def _answer_file_quiet(self, name: str) -> Path | None:
        paths = [self.folder / ANSWERS / f"{name}{s}" for s in (".json", ".txt")]
        return next((p for p in paths if p.exists()), None)

    def _fail(
        self, request: BridgeRequest, error: str, status: int, answer_file: Path | None = None
    ) -> None:
        self._finish(request, FAILED, error=error, status=status, answer_file=answer_file)
        line = f"bridge: {request.name}: {error}"
        self._log(f"failed   {request.name}  {error}")
        raise BridgeError(line, status)

    def _finish(
        self,
        request: BridgeRequest,
        where: str,
        *,
        answer: dict[str, Any] | None = None,
        answer_file: Path | None = None,
        error: str | None = None,
        status: int | None = 200,
    ) -> None:
        """Record ``request`` in done/ or failed/, its answer file beside it; unpend it."""
        kept = None
        if answer_file is not None:
            kept = self.folder / where / f"{request.name}.answer{answer_file.suffix}"
            try:
                os.replace(answer_file, kept)
            except OSError:
                kept = answer_file
        record = BridgeRecord(
            **request.model_dump(),
            finished_at=utcnow(),
            answer=answer,
            answer_file=str(kept) if kept else None,
            error=error,
            status=status,
        )
        write_atomic(self.folder / where / f"{request.name}.json", record.model_dump_json(indent=2))
        with contextlib.suppress(FileNotFoundError):
            (self.folder / PENDING / f"{request.name}.json").unlink()


def _seq(stem: str) -> int:
    match = _NAME.match(stem.split(".", 1)[0])
    return int(match.group(1)) if match else 0


def _who(request: BridgeRequest) -> str:
    model = request.request.get("model") or "?"
    return f"{request.role}/{model}" if request.role else str(model)


def _role(headers: Any, body: dict[str, Any]) -> str | None:
    role = headers.get(ROLE_HEADER)
    metadata = body.get("metadata")
    if not role and isinstance(metadata, dict):
        role = metadata.get("role")
    return str(role) if role else None


def _hung_up(connection: socket.socket) -> bool:
    """Whether the client closed its end (readable with nothing to read)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's default backlog of 5 refuses a role's burst of concurrent requests.
    request_queue_size = 256


class BridgeServer:
    """The HTTP side of a :class:`Bridge`: OpenAI's chat completions and model list.

    Routes: ``POST /v1/chat/completions`` (and ``/chat/completions``), ``GET /v1/models`` (and
    ``/models``). A context manager serving in a background thread, or ``serve_forever``.
    """

    def __init__(self, bridge: Bridge, host: str = "127.0.0.1", port: int = 0) -> None:
        self.bridge = bridge
        self._httpd = _HTTPServer((host, port), self._handler_class())
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL to give a role as ``api_base`` (ends in ``/v1``)."""
        host = str(self._httpd.server_address[0])
        return f"http://{host}:{self.port}/v1"

    def serve_forever(self) -> None:
        """Serve until ``stop`` (from another thread) or the process ends."""
        self._httpd.serve_forever(poll_interval=0.1)

    def start(self) -> BridgeServer:
        """Serve in a background thread (once: a started server is returned as it is)."""
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still waiting fail with 503."""
        self.bridge.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> BridgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        bridge = self.bridge

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].rstrip("/")
                if path not in ("/v1/models", "/models"):
                    self._error(404, f"no route GET {path}")
                    return
                model = {"id": "bridge", "object": "model", "created": 0, "owned_by": "evosyn"}
                self._send(200, {"object": "list", "data": [model]})

            def do_POST(self) -> None:
                path = self.path.split("?", 1)[0].rstrip("/")
                if path not in ("/v1/chat/completions", "/chat/completions"):
                    self._error(404, f"no route POST {path}")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except (json.JSONDecodeError, UnicodeDecodeError):
                    self._error(400, "bridge: the request body is not JSON")
                    return
                if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                    self._error(400, "bridge: the request needs a list of messages")
                    return
                if body.get("stream"):
                    self._error(400, "bridge: streaming is not supported; send stream=false")
                    return
                request = bridge.submit(body, path, _role(self.headers, body))
                try:
                    answer = bridge.wait(request, lambda: _hung_up(self.connection))
                except BridgeError as exc:
                    if exc.status != 499:  # nobody is left to tell
                        self._error(exc.status, str(exc))
                    return
                self._send(200, answer)

            def _error(self, status: int, message: str) -> None:
                error = {"message": message, "type": "bridge_error", "code": None}
                self._send(status, {"error": error})

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up; the request is recorded already

        return Handler


# ---------------------------------------------------------------------- the viewer's side


def pending_requests(folder: str | Path) -> list[BridgeRequest]:
    """The requests waiting for an answer, oldest first."""
    requests = []
    for path in (Path(folder) / PENDING).glob("*.json"):
        if path.name.startswith("."):
            continue
        with contextlib.suppress(FileNotFoundError):  # answered meanwhile
            requests.append(BridgeRequest.model_validate_json(path.read_text("utf-8")))
    return sorted(requests, key=lambda r: _seq(r.name))


def resolve_name(folder: str | Path, name: str) -> str:
    """The pending request ``name`` stands for: its whole name, its file name or its number.

    Raises:
        LookupError: no pending request, or more than one, matches; the message says which.
    """
    stem = Path(name).name.removesuffix(".json")
    names = [r.name for r in pending_requests(folder)]
    if stem in names:
        return stem
    matches = [n for n in names if stem.isdigit() and _seq(n) == int(stem)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(names) or "none"
    raise LookupError(f"no pending request {name!r} in {folder} (pending: {known})")


def write_answer(
    folder: str | Path, name: str, *, text: str | None = None, message: Any = None
) -> Path:
    """Answer pending request ``name`` with ``text`` or an assistant ``message``; the file.

    The message is checked as the bridge will read it, and the file written in one step.

    Raises:
        LookupError: ``name`` is not pending.
        AnswerError: ``message`` is not a valid assistant message, or ``text`` is one.
    """
    if (text is None) == (message is None):
        raise ValueError("give text or message, not both")
    name = resolve_name(folder, name)
    answers = Path(folder) / ANSWERS
    if message is not None:
        normalize_message(message)
        path = answers / f"{name}.json"
        write_atomic(path, json.dumps(message, indent=2, ensure_ascii=False))
    else:
        if looks_like_message(text or ""):
            raise AnswerError(
                "the text is a message with tool_calls: send it as a message (--message, or "
                "a .json file), or the customer reads the JSON"
            )
        path = answers / f"{name}.txt"
        write_atomic(path, str(text))
    return path


def _flat(text: str, width: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    return f"{flat[: width - 1]}… ({len(text):,} chars)"


def _message_line(index: int, message: Any, width: int) -> str:
    if not isinstance(message, dict):
        return f"    [{index}] ?  {_flat(str(message), width)}"
    role = str(message.get("role") or "?")
    parts = []
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if content:
        parts.append(_flat(str(content), width))
    for call in message.get("tool_calls") or []:
        function = call.get("function", call) if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        parts.append(f"-> {function.get('name')}({_flat(arguments, width // 2)})")
    return f"    [{index}] {role:<9} {' | '.join(parts) or '(empty)'}"


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        names.append(str(function.get("name") or "?"))
    return names


def describe(request: BridgeRequest, folder: str | Path, last: int = 3, width: int = 150) -> str:
    """The viewer's block of one pending request: who, what it says last, where to answer."""
    body = request.request
    waited = (utcnow() - request.received_at).total_seconds()
    head = f"{request.name}  model {body.get('model') or '?'}"
    if request.role:
        head += f"  role {request.role}"
    lines = [f"{head}  waiting {waited:.0f}s"]
    messages = body.get("messages") or []
    shown = list(range(len(messages)))
    if len(messages) > last + 1:
        shown = [0, *range(len(messages) - last, len(messages))]
    lines.append(f"  messages: {len(messages)}")
    for i, index in enumerate(shown):
        if i == 1 and index > 1:
            lines.append(f"    ... {index - 1} more")
        lines.append(_message_line(index, messages[index], width))
    names = _tool_names(body.get("tools"))
    if names:
        lines.append(f"  tools ({len(names)}): {', '.join(names)}")
    for key in ("response_format", "tool_choice"):
        if body.get(key) is not None:
            lines.append(f"  {key}: {json.dumps(body[key])}")
    params = [f"{k}={body[k]}" for k in ("temperature", "max_tokens", "seed") if k in body]
    if params:
        lines.append(f"  params: {' '.join(params)}")
    root = Path(folder).resolve()
    lines.append(f"  request: {root / PENDING / f'{request.name}.json'}")
    lines.append(
        f"  answer:  {root / ANSWERS / f'{request.name}.txt'}  "
        '(or .json: {"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]})'
    )
    return "\n".join(lines)


def render_pending(folder: str | Path) -> str:
    """The compact view of every pending request (``evosyn bridge pending``)."""
    requests = pending_requests(folder)
    if not requests:
        return f"no pending requests in {folder}"
    blocks = [describe(r, folder) for r in requests]
    return "\n\n".join([*blocks, f"{len(requests)} pending in {folder}"])


def _tool_signature(tool: Any) -> str:
    function = tool.get("function", tool) if isinstance(tool, dict) else {}
    schema = function.get("parameters") or {}
    required = set(schema.get("required") or [])
    params = []
    for key, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        params.append(f"{key}{'' if key in required else '?'}: {kind}")
    description = " ".join(str(function.get("description") or "").split())
    return f"{function.get('name')}({', '.join(params)})  {description}".rstrip()


def render_request(request: BridgeRequest, folder: str | Path) -> str:
    """One pending request in full, as plain text (``evosyn bridge show``)."""
    body = request.request
    lines = [f"== {request.name}  model {body.get('model') or '?'}  role {request.role or '-'}"]
    for index, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            lines += [f"-- [{index}] ?", str(message)]
            continue
        extra = f" ({message['tool_call_id']})" if message.get("tool_call_id") else ""
        lines.append(f"-- [{index}] {message.get('role')}{extra}")
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if content:
            lines.append(str(content))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {}) if isinstance(call, dict) else {}
            lines.append(f"-> {function.get('name')} {function.get('arguments')}")
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    if tools:
        lines.append(f"-- tools ({len(tools)})")
        lines += [_tool_signature(t) for t in tools]
    for key in ("response_format", "tool_choice", "temperature", "max_tokens", "seed"):
        if body.get(key) is not None:
            lines.append(f"-- {key}: {json.dumps(body[key])}")
    root = Path(folder).resolve()
    lines.append(f"-- answer to {root / ANSWERS / f'{request.name}.txt'} (or .json)")
    return "\n".join(lines)
