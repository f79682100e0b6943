"""`evosyn synth` resumes: the same command reads its finished steps back and runs the rest."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.records import TABLES, SynthTask, Verification
from evosyn.storage import Lake

runner = CliRunner()

# A synth of 60 mock blueprints: it plans, generates and rolls out in about a second.
ARGS = ["synth", "--domain", "mock", "--n", "60", "--seed", "3", "--campaign-id", "s"]
# Columns that differ between two runs of one command: clocks and durations.
CLOCK = {"created_at", "started_at", "finished_at", "seconds", "latency_s"}

# The synth command, its rollouts held until a Ctrl-C: plan and generate are stored by then.
HELD_AT_ROLLOUT = textwrap.dedent(
    """
    import sys, time
    from evosyn.tasks import loop

    def held(*args, **kwargs):
        print("rolling out", flush=True)
        time.sleep(60)

    loop.roll_out_each = held
    from evosyn.cli import main

    sys.argv = ["evosyn", *sys.argv[1:]]
    main()
    """
)


def table_of(stdout: str) -> list[str]:
    """The lines ``synth`` printed, but the lake's (its path differs, cut to the width)."""
    return [line for line in stdout.splitlines() if not line.startswith("│ lake ")]


def rows(root: Path) -> dict[str, list[str]]:
    """Every table's rows of campaign ``s``, clocks left out and the lake's path masked."""
    lake = Lake(str(root))
    out = {}
    for table, cls in TABLES.items():
        dumped = [
            json.dumps(r.model_dump(mode="json", exclude=CLOCK), sort_keys=True)
            for r in lake.read(cls, "s")
        ]
        out[table] = sorted(d.replace(str(root), "<lake>") for d in dumped)
    return out


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """An uninterrupted synth: its lake and what it printed."""
    root = tmp_path_factory.mktemp("whole") / "lake"
    result = runner.invoke(app, [*ARGS, "--lake", str(root)])
    assert result.exit_code == 0, result.output
    assert rows(root)["verifications"], "the synth stored no verdict"
    return root, table_of(result.stdout)


def _counting_generate(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The Generator step's runs from now on (a step read back from the lake does not run)."""
    from evosyn.agents.synthesis import generate as real
    from evosyn.tasks import loop

    calls: list[Any] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "generate", counted)
    return calls


def test_a_synth_stopped_by_ctrl_c_resumes_with_the_command_it_names(
    tmp_path: Path, whole: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, table = whole
    root = tmp_path / "lake"
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD_AT_ROLLOUT, *ARGS, "--lake", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "rolling out"
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    again = shlex.join(["evosyn", *ARGS, "--lake", str(root)])
    line = f"interrupted: campaign 's' is partly stored in {root}; resume it with `{again}`"
    assert stderr.strip().splitlines()[-1] == line
    cut = rows(root)
    assert cut["tasks"] == rows(expected)["tasks"] and not cut["verifications"]

    generated = _counting_generate(monkeypatch)
    resumed = runner.invoke(app, shlex.split(again)[1:])
    assert resumed.exit_code == 0, resumed.output
    assert generated == []  # the stored tasks were read back
    assert rows(root) == rows(expected)
    # What the Generator skipped is counted in memory, by the run that generated.
    skipped = "│ candidates skipped as repeats "
    assert [line for line in table_of(resumed.stdout) if not line.startswith(skipped)] == [
        line for line in table if not line.startswith(skipped)
    ]
    assert any("not counted on a resume" in line for line in table_of(resumed.stdout))

    finished = runner.invoke(app, shlex.split(again)[1:])
    assert finished.exit_code == 2
    assert finished.stderr.strip() == (
        f"error: campaign 's' is already in {root}; choose another --campaign-id"
    )


def test_a_synth_cut_short_resumes_only_with_the_command_that_started_it(
    tmp_path: Path, whole: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from evosyn.tasks import loop

    expected, _ = whole
    root = tmp_path / "lake"
    args = [*ARGS, "--lake", str(root)]

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the machine went down")

    with monkeypatch.context() as patched:
        patched.setattr(loop, "roll_out_each", crash)
        crashed = runner.invoke(app, args)
    assert isinstance(crashed.exception, RuntimeError), crashed.output
    lake = Lake(str(root))
    assert lake.read(SynthTask, "s") and not lake.read(Verification, "s")

    other_n = runner.invoke(app, [*args, "--n", "50"])
    assert other_n.exit_code == 2
    assert "started with another config: --n: 60 -> 50;" in other_n.stderr
    other_seed = runner.invoke(app, [*args, "--seed", "4"])
    assert other_seed.exit_code == 2
    assert "started with another config: campaign.seed: 3 -> 4;" in other_seed.stderr

    generated = _counting_generate(monkeypatch)
    resumed = runner.invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    assert generated == []
    assert rows(root) == rows(expected)
