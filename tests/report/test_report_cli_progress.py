"""`evosyn report` says it has started before its modules load, then shows each stage."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.report import cli as report_cli
from evosyn.report.render import PLOT_TITLES, write_report
from evosyn.storage import Lake

CAMPAIGN = "s"
STAGES = [
    f"reading {CAMPAIGN}",
    "tables",
    "audit",
    *(f"plot {name}" for name in PLOT_TITLES),
    "pages",
]


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lake")
    args = ["synth", "--n", "8", "--seed", "3", "--campaign-id", CAMPAIGN]
    result = CliRunner().invoke(app, [*args, "--set", f"lake.root={root}"])
    assert result.exit_code == 0, result.output
    return root


def test_write_report_tells_each_stage_as_it_starts(lake_root: Path, tmp_path: Path) -> None:
    steps: list[tuple[str, int, int]] = []
    write_report(Lake(lake_root), CAMPAIGN, tmp_path, step=lambda *s: steps.append(s))
    assert steps == [(what, done, len(STAGES)) for done, what in enumerate(STAGES)]


class _Bars:
    """Progress bars that remember the descriptions they were given."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def __enter__(self) -> _Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float | None) -> int:
        self.shown.append(description)
        return 0

    def update(self, task: int, **fields: Any) -> None:
        self.shown.append(fields["description"])


def test_the_report_shows_its_stages_on_the_bars(
    lake_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bars = _Bars()
    monkeypatch.setattr(report_cli, "progress_bars", lambda *a, **k: bars)
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app, ["report", CAMPAIGN, "--out", str(out), "--lake", str(lake_root)]
    )
    assert result.exit_code == 0, result.output
    assert bars.shown == [f"report {CAMPAIGN}", *STAGES]
    assert result.stderr.startswith(f"report on {CAMPAIGN} from ")


def test_the_first_line_comes_before_the_plotting_modules_load(
    lake_root: Path, tmp_path: Path
) -> None:
    # The plotting modules (matplotlib, pandas) take seconds to load on a busy machine.
    script = textwrap.dedent(
        """
        import sys

        from evosyn.report import cli

        said = cli._progress

        def first(text):
            print("matplotlib" in sys.modules, flush=True)
            said(text)

        cli._progress = first
        from evosyn.cli import app

        app(sys.argv[1:])
        """
    )
    out = tmp_path / "report"
    args = ["report", CAMPAIGN, "--out", str(out), "--lake", str(lake_root)]
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == "False"
