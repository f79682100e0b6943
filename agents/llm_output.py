"""Strict JSON out of noisy model output: prose-wrapped, fenced or truncated replies."""

from __future__ import annotations

import json
import re
from typing import Any

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
