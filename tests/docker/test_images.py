"""Static checks of the worker images and deployments (no Docker engine runs here)."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))


def test_images_copy_every_installed_folder_and_install_the_project() -> None:
    folders = set(PYPROJECT["tool"]["setuptools"]["package-dir"].values())
    for name, extras in (("synthesis-worker", set()), ("gpu-worker", {"train", "serve"})):
        text = (REPO / "docker" / f"{name}.Dockerfile").read_text("utf-8")
        copied = set(re.findall(r"^COPY (\S+) \./", text, re.M))
        assert folders <= copied, f"{name} misses {folders - copied}"
        assert "pyproject.toml" in text
        installs = re.findall(r'pip install "?\.(\[[a-z,]+\])?"?', text)
        assert installs, f"{name} never installs the project"
        wanted = {e for group in installs for e in group.strip("[]").split(",") if e}
        assert wanted == extras
        assert wanted <= set(PYPROJECT["project"]["optional-dependencies"])


def test_prefect_yaml_entrypoints_and_pools_exist() -> None:
    spec = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text("utf-8"))
    pools = {p["name"] for p in spec["definitions"]["work_pools"].values()}
    assert pools == {"cpu", "gpu"}
    for deployment in spec["deployments"]:
        path, func = deployment["entrypoint"].split(":")
        module_spec = importlib.util.spec_from_file_location("entry", REPO / path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        flow = getattr(module, func)
        assert hasattr(flow, "deploy"), f"{deployment['name']}: {func} is not a Prefect flow"
        assert deployment["work_pool"]["name"] in pools
        config = deployment["parameters"].get("config_path")
        if config:
            assert (REPO / config).is_file()
