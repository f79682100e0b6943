"""Ctrl-C handling of long commands: one line, exit 130, a second Ctrl-C ends at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

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
