"""``evosyn bridge``: serve the file bridge, view its pending requests, answer them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from evosyn.cli_common import fail

bridge_app = typer.Typer(
    help="The file bridge: an OpenAI-compatible server whose answers are files.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

DirOption = Annotated[
    Path,
    typer.Option("--dir", help="The bridge's folder (pending/, answers/, done/, failed/)."),
]
DEFAULT_DIR = Path(".evosyn-cache/bridge")


@bridge_app.callback()
def _group() -> None:
    """The file bridge (a group, so that each command keeps its name)."""


def _existing(folder: Path) -> Path:
    if not (folder / "pending").is_dir():
        fail(f"no bridge folder at {folder}: start one with `evosyn bridge serve --dir {folder}`")
    return folder


@bridge_app.command("serve")
def serve_command(
    folder: DirOption = DEFAULT_DIR,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", help="Seconds a request waits for its answer (504 after).", min=0
        ),
    ] = None,
    poll: Annotated[
        float, typer.Option("--poll", help="Seconds between looks for answer files.", min=0.01)
    ] = 0.2,
) -> None:
    """Answer POST /v1/chat/completions with the answer files written for each request."""
    from evosyn.agents.gateway.bridge import Bridge, BridgeServer

    if timeout == 0:
        fail("--timeout must be positive (leave it out for no limit)", 2)
    bridge = Bridge(folder, timeout_s=timeout, poll_s=poll, log=typer.echo)
    try:
        server = BridgeServer(bridge, host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    stale = f"; {bridge.stale} stale request(s) moved to failed/" if bridge.stale else ""
    typer.echo(f"bridge on {server.url}, folder {folder}{stale}; Ctrl-C stops it")
    server.serve_forever()


@bridge_app.command("pending")
def pending_command(folder: DirOption = DEFAULT_DIR) -> None:
    """One block per request waiting for an answer, with the file to write it to."""
    from evosyn.agents.gateway.bridge import render_pending

    typer.echo(render_pending(_existing(folder)))


@bridge_app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="The request: its name or its number.")],
    folder: DirOption = DEFAULT_DIR,
) -> None:
    """One pending request in full: every message, the tools and where to answer."""
    from evosyn.agents.gateway.bridge import BridgeRequest, render_request, resolve_name

    _existing(folder)
    try:
        stem = resolve_name(folder, name)
        request = BridgeRequest.model_validate_json(
            (folder / "pending" / f"{stem}.json").read_text("utf-8")
        )
    except (LookupError, FileNotFoundError) as exc:
        fail(str(exc))
    typer.echo(render_request(request, folder))


@bridge_app.command("answer")
def answer_command(
    name: Annotated[str, typer.Argument(help="The request: its name or its number.")],
    folder: DirOption = DEFAULT_DIR,
    text: Annotated[str | None, typer.Option("--text", help="The assistant's text answer.")] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            help="A file with the answer (- reads stdin); a *.json file is a message.",
        ),
    ] = None,
    as_message: Annotated[
        bool,
        typer.Option(
            "--message",
            help='The answer is an assistant message as JSON: {"content": ..., "tool_calls": '
            '[{"name": ..., "arguments": {...}}]}.',
        ),
    ] = False,
) -> None:
    """Write the answer of a pending request (checked first, written in one step).

    The answer is the assistant's text, or with --message (or a *.json --file) an assistant
    message, the way to answer with tool calls.
    """
    from evosyn.agents.gateway.bridge import AnswerError, write_answer

    _existing(folder)
    if (text is None) == (file is None):
        fail("give --text or --file (one of them)", 2)
    try:
        if file is not None:
            text = sys.stdin.read() if str(file) == "-" else file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {file}: {exc}")
    source = "stdin" if str(file) == "-" else str(file or "--text")
    message = None
    if as_message or (file is not None and file.suffix == ".json"):
        try:
            message = json.loads(str(text))
        except json.JSONDecodeError as exc:
            fail(f"{source}: not JSON ({exc.msg} at line {exc.lineno})")
        text = None
    try:
        path = write_answer(folder, name, text=text, message=message)
    except AnswerError as exc:
        fail(f"{source}: {exc}")
    except LookupError as exc:
        fail(str(exc))
    typer.echo(f"wrote {path}")
