"""The card's folders install under `evosyn.*` the same way editable and from a wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
MAPPING: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]


def tree_modules() -> dict[str, Path]:
    """Every module the mapping installs, from the source tree: import name -> source file."""
    modules: dict[str, Path] = {}
    for package, folder in MAPPING.items():
        base = REPO / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if any(
                not (base.joinpath(*rel.parts[:i]) / "__init__.py").exists()
                for i in range(1, len(rel.parts))
            ):
                continue
            name = ".".join([package, *parts])
            modules.setdefault(name, path)
    return modules


def test_pyproject_lists_every_package_in_the_tree() -> None:
    packages = {name for name, path in tree_modules().items() if path.name == "__init__.py"}
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == packages


IMPORTER = """
import importlib, importlib.util, json, sys
from importlib import resources
# Modules that run inside another trainer's environment (verl's agent loop) import it at the
# top: where it is absent, the module is found, not executed.
OPTIONAL = {"verl"}
out = {}
for name in json.loads(sys.argv[1]):
    if name.endswith("__main__"):
        continue
    try:
        out[name] = importlib.import_module(name).__file__
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in OPTIONAL:
            raise
        out[name] = importlib.util.find_spec(name).origin
airline = resources.files("evosyn.environments.airline")
out["_ontology"] = airline.joinpath("ontology.yaml").read_text()[:40]
print(json.dumps(out))
"""


def _import_all(env: dict[str, str], extra: list[str]) -> dict[str, str]:
    names = sorted(tree_modules())
    proc = subprocess.run(
        [sys.executable, *extra, "-c", IMPORTER, json.dumps(names)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_editable_and_wheel_installs_import_the_same_modules(tmp_path: Path) -> None:
    editable = _import_all(dict(os.environ), [])
    for name, file in editable.items():
        if not name.startswith("_"):
            assert Path(file).is_relative_to(REPO), f"{name} not from the working tree: {file}"
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheel_dir.glob("evosyn-*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # -S skips .pth files, so setuptools' editable hook cannot answer for the wheel.
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]])
    )
    installed = _import_all(env, ["-S"])
    assert installed.keys() == editable.keys()
    assert installed["_ontology"] == editable["_ontology"]
    for name, file in installed.items():
        if not name.startswith("_"):
            assert Path(file).is_relative_to(target), f"{name} not from the wheel: {file}"
            assert Path(file).relative_to(target).parts[0] == "evosyn"
    assert {n for n in installed if n.startswith("evosyn.agents.")}, "nested packages included"


def test_no_test_folder_shadows_the_package() -> None:
    # tests/ is on sys.path: a folder there named like the package would turn ``evosyn`` into
    # a namespace package and skip evosyn/__init__.py (offline litellm, quiet τ²-bench logs).
    import evosyn

    assert evosyn.__file__ == str(REPO / "evosyn" / "__init__.py")
    assert os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") == "True"
