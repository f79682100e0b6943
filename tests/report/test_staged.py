"""`staged`: a command's output folder fills only once every file is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evosyn.report.cli import staged


def test_a_new_output_appears_at_once_and_carried_files_are_updated(tmp_path: Path) -> None:
    out = tmp_path / "sft"
    with staged(out) as folder:
        (folder / "dataset_info.json").write_text('{"a": 1}')
        (folder / "a.json").write_text("[]")
        assert not out.exists()
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "dataset_info.json"]
    with staged(out, carry=["dataset_info.json", "absent.json"]) as folder:
        info = folder / "dataset_info.json"
        assert info.read_text() == '{"a": 1}'  # the writer updates what is there
        info.write_text('{"a": 1, "b": 2}')
        (folder / "b.json").write_text("[]")
    assert (out / "dataset_info.json").read_text() == '{"a": 1, "b": 2}'
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "b.json", "dataset_info.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sft"]


def test_scratch_folders_of_ended_processes_are_removed_not_those_of_live_ones(
    tmp_path: Path,
) -> None:
    code = "import os; print(os.getpid())"
    ended = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    dead = tmp_path / f".out.partial-{int(ended.stdout)}"
    live = tmp_path / f".out.partial-{os.getppid()}"
    other = tmp_path / f".out2.partial-{int(ended.stdout)}"  # another output's
    for folder in (dead, live, other):
        folder.mkdir()
        (folder / "half.json").write_text("[")
    with staged(tmp_path / "out") as folder:
        (folder / "whole.json").write_text("[]")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", live.name, other.name])
