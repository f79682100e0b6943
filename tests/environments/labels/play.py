"""Play a hand-written dialogue against a fresh τ²-bench state and fill in the real tool results.

Used to write the model-written label set (``model_written/``): the author writes the turns,
this script executes every tool call in order on a fresh state of the task and fills in the
``{"role": "tool", ...}`` messages, so the dialogue's observations are the real records.

Two input forms:

* ``play.py DOMAIN TASK.json MESSAGES.json`` -- ``TASK.json`` is the τ²-bench Task JSON (or a
  lake row with a ``task`` key), ``MESSAGES.json`` a τ²-bench message list (or an object with
  ``messages``). Tool messages already present are dropped and recomputed.
* ``play.py DRAFT.dlg`` -- a compact draft::

      #meta {"id": "airline-01", "domain": "airline", "task": "/path/task.json", ...}
      #labels {...}
      A: assistant text (continuation lines are appended to the turn)
      A> tool_name {"arg": "value"}          (assistant tool call)
      U: user text
      U> toggle_airplane_mode {}             (user tool call, telecom)

Prints each tool call with its observation compactly; ``--out FILE`` writes the full record
(meta keys, ``messages`` with the tool results, ``labels``) as JSON; ``--max N`` cuts printed
observations at N characters (0: no cut).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tau2.data_model.message import ToolCall
from tau2.data_model.tasks import Task

from evosyn.environments.registry import get_domain


def load_task(value: Any) -> Task:
    """The Task from a Task JSON object, a lake row with a ``task`` key, or a path to either."""
    if isinstance(value, str | Path):
        value = json.loads(Path(value).read_text())
    if isinstance(value, dict) and "task" in value and "user_scenario" not in value:
        value = value["task"]
    if isinstance(value, str):
        value = json.loads(value)
    return Task.model_validate(value)


def parse_draft(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The meta (with ``labels``) and the messages (without tool results) of a ``.dlg`` draft."""
    meta: dict[str, Any] = {}
    messages: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("#meta "):
            meta.update(json.loads(line[6:]))
        elif line.startswith("#labels "):
            meta["labels"] = json.loads(line[8:])
        elif line.startswith("#"):
            continue
        elif line[:2] in ("A:", "U:"):
            role = "assistant" if line[0] == "A" else "user"
            messages.append({"role": role, "content": line[2:].strip()})
        elif line[:2] in ("A>", "U>"):
            role = "assistant" if line[0] == "A" else "user"
            name, _, args = line[2:].strip().partition(" ")
            call = {"id": "", "name": name, "arguments": json.loads(args or "{}")}
            messages.append({"role": role, "content": None, "tool_calls": [call]})
        elif line.strip():
            if not messages or messages[-1]["content"] is None:
                raise ValueError(f"continuation line with no text turn before it: {line!r}")
            messages[-1]["content"] += "\n" + line.strip()
    return meta, messages


def play(domain_name: str, task: Task, messages: list[dict[str, Any]], cut: int = 600):
    """``messages`` with every tool call executed in order and its tool message after it."""
    domain = get_domain(domain_name)
    state = domain.initial_state(task)
    out: list[dict[str, Any]] = []
    n = 0
    for message in messages:
        if message["role"] == "tool":
            continue
        out.append(message)
        for call in message.get("tool_calls") or []:
            n += 1
            call["id"] = call.get("id") or f"c{n}"
            requestor = "user" if message["role"] == "user" else "assistant"
            result = domain.execute(
                state,
                ToolCall(
                    id=call["id"],
                    name=call["name"],
                    arguments=call["arguments"],
                    requestor=requestor,
                ),
            )
            tool = {"role": "tool", "id": call["id"], "content": result.content}
            if requestor == "user":
                tool["requestor"] = "user"
            if result.error:
                tool["error"] = True
            out.append(tool)
            shown = result.content or ""
            if cut and len(shown) > cut:
                shown = shown[:cut] + f"... [{len(result.content)} chars]"
            flag = " ERROR" if result.error else ""
            print(
                f"[{requestor}] {call['name']} {json.dumps(call['arguments'])}{flag}\n  -> {shown}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="DRAFT.dlg, or DOMAIN TASK.json MESSAGES.json")
    parser.add_argument("--out", help="write the full record (JSON) here")
    parser.add_argument("--max", type=int, default=0, help="cut printed observations (0: no cut)")
    args = parser.parse_args(argv)
    if len(args.inputs) == 1:
        meta, messages = parse_draft(Path(args.inputs[0]).read_text())
        domain_name, task_value = meta["domain"], meta.pop("task")
    elif len(args.inputs) == 3:
        domain_name, task_value, messages_path = args.inputs
        loaded = json.loads(Path(messages_path).read_text())
        meta = (
            {k: v for k, v in loaded.items() if k != "messages"} if isinstance(loaded, dict) else {}
        )
        messages = loaded["messages"] if isinstance(loaded, dict) else loaded
        meta.setdefault("domain", domain_name)
    else:
        parser.error("give DRAFT.dlg, or DOMAIN TASK.json MESSAGES.json")
    task = load_task(task_value)
    row = json.loads(Path(task_value).read_text()) if isinstance(task_value, str) else task_value
    if isinstance(row, dict) and isinstance(row.get("requested"), dict):
        meta.setdefault("task_id", task.id)
        meta.setdefault("requested_challenges", row["requested"].get("interaction_challenge", []))
        meta.setdefault("requested_persona", task.user_scenario.persona)
    filled = play(domain_name, task, messages, cut=args.max)
    if args.out:
        record = {k: v for k, v in meta.items() if k != "labels"}
        record.setdefault("task_id", task.id)
        record["messages"] = filled
        if "labels" in meta:
            record["labels"] = meta["labels"]
        Path(args.out).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.out} ({len(filled)} messages)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
