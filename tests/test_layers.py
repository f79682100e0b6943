"""The import layers of docs/architecture.md (``.importlinter``) and the import circles left.

import-linter and grimp find a package on disk from its import name, and setuptools' editable
hook maps ``evosyn.agents`` to ``agents/`` out of their sight, so each check runs in a tree of
links laid out as the installed ``evosyn.*`` namespace, as ``make lint`` builds it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("agents", "environments", "storage", "tasks", "flows")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# The import circles at run time that are known, each by one module in it: the most modules it
# may hold, and why it is there. A new circle, or a known one that grows, fails; a circle that
# is gone must leave this table. None is left: the config checks kinds against evosyn.kinds
# (no agents code), a role package registers the implementations that import its base module,
# and the feasibility value types import nothing of the grounding kit.
KNOWN_CIRCLES: dict[str, int] = {}

# Printed by a child process: grimp, like import-linter, must import `evosyn` from the link tree
# in its working directory, not the editable install this process has loaded. Imports named
# only for type checking are left out: they never run, so they close no circle.
_CIRCLES = """
import json
import grimp
graph = grimp.build_graph("evosyn", cache_dir=None, exclude_type_checking_imports=True)
circles = set()
for module in graph.modules:
    others = graph.find_upstream_modules(module) & graph.find_downstream_modules(module)
    if others:
        circles.add(tuple(sorted({module, *others})))
print(json.dumps(sorted(circles)))
"""


def link_tree(root: Path) -> Path:
    """A tree under ``root`` laid out as the installed namespace, its files links to the repo's."""
    package = root / "evosyn"
    package.mkdir(parents=True)
    for path in (REPO / "evosyn").iterdir():
        if path.name != "__pycache__":
            (package / path.name).symlink_to(path)
    for folder in FOLDERS:
        (package / folder).symlink_to(REPO / folder)
    return root


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the repository's contracts over ``tree``."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(REPO / ".importlinter")],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_code_keeps_its_layers(tmp_path: Path) -> None:
    result = lint_imports(link_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert ", 0 broken." in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("module", "source", "reported"),
    [
        # storage/ and agents/ are siblings that must not import each other.
        (
            "storage/_probe.py",
            "import evosyn.agents.roles\n",
            "evosyn.storage._probe -> evosyn.agents.roles",
        ),
        # storage/ imports the core only, though environments/ is the layer below it.
        (
            "storage/_probe.py",
            "from evosyn.environments.registry import list_domains\n",
            "evosyn.storage._probe -> evosyn.environments.registry",
        ),
        # A layer imports none above it.
        (
            "environments/_probe.py",
            "from evosyn.tasks import loop\n",
            "evosyn.environments._probe -> evosyn.tasks.loop",
        ),
        # A module directly under evosyn/ is placed in a layer, so that its imports are checked.
        ("_probe.py", "import evosyn.records\n", "- evosyn._probe"),
    ],
    ids=["siblings", "storage-not-environments", "upwards", "unplaced"],
)
def test_an_import_across_a_layer_fails(
    tmp_path: Path, module: str, source: str, reported: str
) -> None:
    tree = link_tree(tmp_path)
    folder = Path(module).parts[0]
    if folder in FOLDERS:
        # The probe goes into a copy of its folder, never into the repository the links name.
        copy = tree / "evosyn" / folder
        copy.unlink()
        shutil.copytree(REPO / folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "evosyn" / module).write_text(source)

    result = lint_imports(tree)

    assert result.returncode != 0, result.stdout
    assert reported in result.stdout, result.stdout


def test_no_new_import_circle(tmp_path: Path) -> None:
    found = json.loads(
        subprocess.run(
            [sys.executable, "-c", _CIRCLES],
            cwd=link_tree(tmp_path),
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
    )
    seen = set()
    for circle in found:
        known = [m for m in circle if m in KNOWN_CIRCLES]
        assert len(known) == 1, f"a new import circle of {len(circle)} modules: {circle}"
        (anchor,) = known
        seen.add(anchor)
        assert len(circle) <= KNOWN_CIRCLES[anchor], (
            f"the circle through {anchor} grew to {len(circle)} modules: {circle}"
        )
    gone = set(KNOWN_CIRCLES) - seen
    assert not gone, f"no circle runs through {gone} any more: remove it from KNOWN_CIRCLES"
