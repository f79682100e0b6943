"""Strict JSON out of noisy model output, and the ask-validate-repair turn every LLM role uses.

``extract_json`` finds the one JSON object in a prose-wrapped, fenced or truncated reply.
``ask_json`` asks a gateway for such an object, parses it into a role's record, and on invalid
output sends one bounded repair turn quoting the error before giving up with ``OutputRejected``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import jinja2
from pydantic import ValidationError

if TYPE_CHECKING:
    from evosyn.agents.gateway import Gateway

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class OutputError(ValueError):
    """The model's reply holds no usable JSON object; the message says why."""


def _first_object(text: str) -> str | None:
    # Scan for the first balanced {...}, skipping braces inside strings.
    start = text.find("{")
    if start != -1:
        depth, in_str, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        # An object opened and never closed is truncated; an inner one would be a wrong answer.
        return None
    return None


def extract_json(text: str | None) -> dict[str, Any]:
    """The one JSON object in ``text``; OutputError for empty, truncated or non-object output."""
    if text is None or not text.strip():
        raise OutputError("empty reply: expected one JSON object")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        blob = _first_object(candidate)
        if blob is None:
            continue
        try:
            value = json.loads(blob)
        except json.JSONDecodeError as err:
            raise OutputError(f"invalid JSON: {err.msg} at char {err.pos}") from err
        if isinstance(value, dict):
            return value
    if "{" in text:
        raise OutputError("truncated JSON: an object was opened but never closed")
    raise OutputError("no JSON object in the reply")


# --------------------------------------------------------------------------- asking for JSON

T = TypeVar("T")

_REPAIR = Path(__file__).with_name("output_repair.j2")


class OutputRejected(OutputError):
    """A role's reply that stayed unusable after its one repair turn; the message says why.

    Attributes:
        role: the role whose output was rejected.
        reason: the validation error of the last reply (and of the first, if it differed).
    """

    def __init__(self, role: str, reason: str) -> None:
        super().__init__(f"{role} output rejected after one repair turn: {reason}")
        self.role = role
        self.reason = reason


def describe_error(exc: BaseException) -> str:
    """One line saying what is wrong with an output, for a repair turn or a rejection."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return f"at {where}: {first['msg']}{more}"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    # Room for every problem a parser reports at once (the Planner's, the Designer's).
    return text[:1500]


@cache
def _repair_template() -> jinja2.Template:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    return env.from_string(_REPAIR.read_text("utf-8"))


def repair_turn(error: str, truncated: bool = False) -> str:
    """The user turn that quotes a validation error and asks for the whole answer again."""
    return _repair_template().render(error=error, truncated=truncated).strip()


def ask_json(
    gateway: Gateway,
    prompt: str,
    parse: Callable[[dict[str, Any]], T],
    *,
    seed: int | None = None,
) -> T:
    """Ask ``gateway`` for one JSON object and ``parse`` it; one repair turn on invalid output.

    ``parse`` turns the extracted object into the role's record and raises ValueError (a
    pydantic ValidationError included) saying what is wrong. The repair turn shows the model
    its previous reply and that error, and asks for the whole answer again.

    Raises:
        OutputRejected: the reply after the repair turn is still invalid.
        LLMError: a model call failed for good (after the gateway's own retries).
    """
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    params: dict[str, Any] = {"seed": seed} if seed is not None else {}
    errors: list[str] = []
    for turn in range(2):
        completion = gateway.complete(messages, **params)
        truncated = completion.finish_reason == "length"
        try:
            return parse(extract_json(completion.text))
        except ValueError as exc:
            error = describe_error(exc)
            if truncated:
                error += " (the reply was cut off at the token limit)"
            errors.append(error)
        if turn == 0:
            messages += [
                {"role": "assistant", "content": completion.text or ""},
                {"role": "user", "content": repair_turn(errors[0], truncated)},
            ]
    last, first = errors[-1], errors[0]
    raise OutputRejected(gateway.role, last if last == first else f"{last} (first reply: {first})")
