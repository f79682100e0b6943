"""``evosyn env verify`` says what it is doing before the seconds it takes to load a domain."""

from __future__ import annotations

import subprocess
import sys

import pytest
from rich.console import Console
from typer.testing import CliRunner

from evosyn.agents.verifier import cli
from evosyn.agents.verifier.cli import env_app


def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard error as a terminal's: the loading line and the bars are for a person."""
    monkeypatch.setattr(
        cli, "console", lambda stderr=False: Console(stderr=stderr, force_terminal=stderr)
    )


def test_verify_says_it_is_loading_before_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    _terminal(monkeypatch)
    result = CliRunner().invoke(env_app, ["verify", "--domain", "mock", "--split", "base"])
    out = result.output
    assert "verify mock: loading the domain and its tasks" in out
    assert out.index("loading the domain") < out.index("passed")


def test_an_unknown_domain_is_told_without_the_loading_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _terminal(monkeypatch)
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


def test_tables_take_the_width_of_the_terminal_they_print_to() -> None:
    # One process may serve several commands (pytest's workers do): a console made when the
    # module was imported would keep the width of that moment, here 60 columns.
    script = (
        "import os\n"
        "os.environ['COLUMNS'] = '60'\n"
        "from evosyn.agents.verifier.cli import env_app\n"
        "os.environ['COLUMNS'] = '200'\n"
        "from typer.testing import CliRunner\n"
        "print(CliRunner().invoke(env_app, ['list']).stdout)\n"
    )
    listed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert "small=20, train=74, test=40, full=2285, base=114" in listed
