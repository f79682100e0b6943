"""Ctrl-C handling of long commands: one line, exit 130, a second Ctrl-C ends at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# A process that sits in a long wait under CampaignInterrupt; its one cleanup takes `tidy_s`.
SCRIPT = textwrap.dedent(
    """
    import sys, time
    from evosyn.interrupt import CampaignInterrupt

    tidy_s, grace_s = float(sys.argv[1]), float(sys.argv[2])
    with CampaignInterrupt("interrupted: resume with `x --resume`", grace_s=grace_s) as stop:
        stop.cleanups.append(lambda: time.sleep(tidy_s))
        print("ready", flush=True)
        time.sleep(60)
    """
)


def _start(tidy_s: float, grace_s: float = 30) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(tidy_s), str(grace_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _stop(proc: subprocess.Popen[str], signals: int) -> tuple[float, str]:
    start = time.monotonic()
    for _ in range(signals):
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.2)
    try:
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return time.monotonic() - start, stderr


def test_first_ctrl_c_tidies_up_then_exits_130_with_one_line() -> None:
    proc = _start(tidy_s=0.5)
    seconds, stderr = _stop(proc, signals=1)
    assert proc.returncode == 130
    assert stderr == "interrupted: resume with `x --resume`\n"
    assert 0.5 <= seconds < 5


def test_second_ctrl_c_does_not_wait_for_the_tidying() -> None:
    proc = _start(tidy_s=15)
    seconds, stderr = _stop(proc, signals=2)
    assert proc.returncode == 130
    assert stderr == "interrupted: resume with `x --resume`\n"
    assert seconds < 5


def test_tidying_that_hangs_is_cut_off() -> None:
    proc = _start(tidy_s=60, grace_s=0.5)
    seconds, stderr = _stop(proc, signals=1)
    assert proc.returncode == 130
    assert stderr == "interrupted: resume with `x --resume`\n"
    assert seconds < 5


# A command of the real CLI that waits, run through the `evosyn` script's entry point.
WAITING_COMMAND = textwrap.dedent(
    """
    import sys, time
    from evosyn.cli import app, main

    @app.command("wait")
    def wait(seconds: float) -> None:
        print("ready", flush=True)
        time.sleep(seconds)

    sys.argv = ["evosyn", "wait", "60"]
    main()
    """
)


def test_ctrl_c_ends_any_command_with_one_line_and_130() -> None:
    """A command with no resume of its own says how to run it again; no click "Aborted!"."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WAITING_COMMAND],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    seconds, stderr = _stop(proc, signals=1)
    assert proc.returncode == 130, stderr
    assert stderr == "interrupted: run it again with `evosyn wait 60`\n"
    assert seconds < 5


def test_staged_output_moves_in_whole_or_not_at_all(tmp_path: Path) -> None:
    from evosyn.report.cli import staged

    out = tmp_path / "report"
    with staged(out) as folder:
        (folder / "queries").mkdir()
        (folder / "queries" / "a.sql").write_text("SELECT 1\n")
        (folder / "report.md").write_text("# r\n")
        assert not out.exists()  # nothing lands before the whole report is written
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.*")) == [
        "queries/a.sql",
        "report.md",
    ]
    with pytest.raises(RuntimeError), staged(out) as folder:
        (folder / "report.md").write_text("# half\n")
        raise RuntimeError("stopped midway")
    assert (out / "report.md").read_text() == "# r\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]  # no scratch folder left
