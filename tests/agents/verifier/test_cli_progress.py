"""``evosyn env verify`` says what it is doing before the seconds it takes to load a domain."""

from __future__ import annotations

import pytest
from rich.console import Console
from typer.testing import CliRunner

from evosyn.agents.verifier import cli
from evosyn.agents.verifier.cli import env_app


def test_verify_says_it_is_loading_before_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_err", Console(stderr=True, force_terminal=True))
    result = CliRunner().invoke(env_app, ["verify", "--domain", "mock", "--split", "base"])
    out = result.output
    assert "verify mock: loading the domain and its tasks" in out
    assert out.index("loading the domain") < out.index("passed")


def test_an_unknown_domain_is_told_without_the_loading_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "_err", Console(stderr=True, force_terminal=True))
    result = CliRunner().invoke(env_app, ["verify", "--domain", "nosuch", "--split", "base"])
    assert result.exit_code == 2
    assert "loading" not in result.output
    assert "unknown domain 'nosuch'" in result.output


def test_json_output_stays_parseable() -> None:
    import json

    result = CliRunner().invoke(
        env_app, ["verify", "--domain", "mock", "--split", "base", "--json"]
    )
    json.loads(result.stdout)


def test_a_script_reading_stderr_gets_only_the_error() -> None:
    result = CliRunner().invoke(env_app, ["verify", "--domain", "mock", "--split", "nosuch"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
