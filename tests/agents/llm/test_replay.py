"""Replay of the captured prompts: a reply that follows a prompt literally is accepted at once.

Each case (``tests/llm_replay.py``) is one role's prompt captured from an offline campaign and
a reply written by reading that prompt only. The reply goes through the role's own code path
(parser, checks, and for the teacher and the single agent the replay verifier) over HTTP, and
must be accepted without a repair turn: a rejection means the prompt does not state a rule its
checks enforce, or a check is wrong.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_replay import CASES, FOLDER, Case, Inputs, config
from openai_server import OpenAIServer

IDS = [case.name for case in CASES]


@pytest.fixture(scope="module")
def inputs() -> Inputs:
    return Inputs.load()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_captured_prompt_is_the_one_the_role_renders(case: Case, inputs: Inputs) -> None:
    stored = (FOLDER / "prompts" / f"{case.name}.txt").read_text()
    assert case.prompt(inputs) + "\n" == stored, (
        f"the {case.name} prompt changed: run tests/agents/llm/replay/capture.py, read the new "
        "prompt and update its reply if it now asks for something else"
    )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_literal_reply_is_accepted_at_the_first_answer(
    case: Case, inputs: Inputs, server: OpenAIServer, tmp_path: Path
) -> None:
    replies = case.script(server)
    assert case.run(inputs, config(server, tmp_path)) is None
    assert server.request_count == replies, "a repair turn was needed"
