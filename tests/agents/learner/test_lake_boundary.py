"""The learner neither reads nor writes the lake: its tasks do (tasks/learner_lake.py)."""

from __future__ import annotations

import ast
from pathlib import Path

LEARNER = Path(__file__).resolve().parents[3] / "agents" / "learner"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_no_learner_module_imports_the_lake_or_the_tasks() -> None:
    modules = sorted(LEARNER.glob("*.py"))
    assert modules
    for path in modules:
        bad = {m for m in _imports(path) if m.startswith(("evosyn.storage", "evosyn.tasks"))}
        assert not bad, f"{path.name} imports {sorted(bad)}"
