"""Static checks of the worker images and deployments (no Docker engine runs here)."""

from __future__ import annotations

import importlib.util
import inspect
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
SPEC = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text("utf-8"))
IMAGES = {"synthesis-worker": {"ray"}, "gpu-worker": {"train", "serve"}}
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==[0-9][^\s]*$")


def _dockerfile(name: str) -> str:
    return (REPO / "docker" / f"{name}.Dockerfile").read_text("utf-8")


def _pins(path: Path) -> dict[str, str]:
    lines = [ln.strip() for ln in path.read_text("utf-8").splitlines()]
    pins = {}
    for line in lines:
        if line and not line.startswith("#"):
            assert PIN.match(line), f"{path.name}: {line!r} is not pinned as name==version"
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


def _entry(deployment: dict[str, Any]) -> Any:
    path, func = deployment["entrypoint"].split(":")
    module_spec = importlib.util.spec_from_file_location(f"entry_{func}", REPO / path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, func)


def test_images_copy_every_installed_folder_and_install_the_project() -> None:
    folders = set(PYPROJECT["tool"]["setuptools"]["package-dir"].values())
    for name, extras in IMAGES.items():
        text = _dockerfile(name)
        copied = set(re.findall(r"^COPY (\S+) \./", text, re.M))
        assert folders <= copied, f"{name} misses {folders - copied}"
        assert "pyproject.toml" in text
        installs = re.findall(r'pip install (?:-c \S+ )*"?\.(\[[a-z,]+\])?"?(?=\s|$)', text)
        assert installs, f"{name} never installs the project"
        wanted = {e for group in installs for e in group.strip("[]").split(",") if e}
        assert wanted == extras
        assert wanted <= set(PYPROJECT["project"]["optional-dependencies"])
        assert "ENV " in text and "EVOSYN_HOME=/opt/evosyn" in text
        assert "WORKDIR /opt/evosyn" in text  # where the deployments' pull step goes


def test_images_install_pinned_versions_only() -> None:
    for name, extras in IMAGES.items():
        text = _dockerfile(name)
        files = set(re.findall(r"-c (\S+)", text))
        assert "docker/constraints.txt" in files
        copied = " ".join(re.findall(r"^COPY (.+) \./docker/$", text, re.M)).split()
        assert files <= set(copied), f"{name} uses constraints it does not copy"
        pins: dict[str, str] = {}
        for file in files:
            pins |= _pins(REPO / file)
        needed = {
            _name(r) for e in extras for r in PYPROJECT["project"]["optional-dependencies"][e]
        }
        assert needed <= set(pins), f"{name} leaves {needed - set(pins)} unpinned"
        assert pins["prefect"] == SPEC["prefect-version"], "workers run the deployed Prefect"


def test_prefect_yaml_deploys_every_flow_on_its_pool() -> None:
    pools = {p["name"] for p in SPEC["definitions"]["work_pools"].values()}
    assert pools == {"cpu", "gpu"}
    # The worker's own EVOSYN_HOME, read when a run starts (not filled in at deploy time).
    assert SPEC["pull"] == [
        {"evosyn.flows.steps.set_working_directory_from_env": {"variable": "EVOSYN_HOME"}}
    ]
    by_flow: dict[str, str] = {}
    for deployment in SPEC["deployments"]:
        flow = _entry(deployment)
        assert hasattr(flow, "deploy"), f"{deployment['name']}: not a Prefect flow"
        assert deployment["work_pool"]["name"] in pools
        accepted = set(inspect.signature(flow.fn).parameters)
        given = set(deployment.get("parameters", {}))
        assert given <= accepted, f"{deployment['name']}: {given - accepted} are not parameters"
        config = deployment["parameters"].get("config_path")
        if config:
            assert (REPO / config).is_file()
        by_flow[flow.name] = deployment["work_pool"]["name"]
    assert by_flow == {
        "evosyn-campaign-deployment": "cpu",
        "evosyn-round-deployment": "cpu",
        "evosyn-train": "gpu",
        "evosyn-evaluate": "gpu",
    }


def test_a_schedule_runs_a_multi_round_campaign_nightly() -> None:
    scheduled = [d for d in SPEC["deployments"] if d.get("schedules")]
    assert scheduled
    for deployment in scheduled:
        assert deployment["entrypoint"].endswith(":campaign_deployment")
        # No fixed campaign id: each run gets a new one from its scheduled start.
        assert "campaign_id" not in deployment["parameters"]
        assert not any(o.startswith("campaign.id=") for o in deployment["parameters"]["overrides"])
        for schedule in deployment["schedules"]:
            assert len(schedule["cron"].split()) == 5
