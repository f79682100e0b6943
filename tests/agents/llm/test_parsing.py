"""extract_json on clean, noisy, empty and invalid model output."""

from __future__ import annotations

import pytest

from evosyn.agents.llm_output import OutputError, extract_json


def test_clean_object() -> None:
    assert extract_json('{"a": 1, "b": [2, 3]}') == {"a": 1, "b": [2, 3]}


def test_prose_wrapped_and_braces_in_strings() -> None:
    text = 'Sure! Here it is: {"why": "a {tricky} one", "n": 2} Hope that helps.'
    assert extract_json(text) == {"why": "a {tricky} one", "n": 2}


def test_code_fence_preferred() -> None:
    text = 'Example {"x": 0}\n```json\n{"x": 1}\n```'
    assert extract_json(text) == {"x": 1}


@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_empty(text: str | None) -> None:
    with pytest.raises(OutputError, match="empty"):
        extract_json(text)


def test_truncated() -> None:
    with pytest.raises(OutputError, match="truncated"):
        extract_json('{"directions": [{"conditions": {"a": 1}')


def test_no_object_and_invalid() -> None:
    with pytest.raises(OutputError, match="no JSON object"):
        extract_json("[1, 2, 3]")
    with pytest.raises(OutputError, match="invalid JSON"):
        extract_json("{'single': 'quotes'}")
