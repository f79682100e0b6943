"""Check an `evosyn export nemo-gym` folder with NeMo Gym's own code and data.

Run with an interpreter that has nemo-gym (NEMO_GYM_PYTHON; see test_export_rl.py):

    python nemo_gym_check.py EXPORT_DIR OPENING_JSON WORK_DIR [--rows-only]

Checks, each with the installed package's own models, functions and shipped rows:

* every row against ``BaseRunRequest`` (its ``responses_create_params`` against
  ``NeMoGymResponseCreateParamsNonStreaming``) and ``compute_sample_metrics``, the per-row check
  of NeMo Gym's data preparation;
* every row against the τ²-bench agent's ``Tau2RunRequest``, its class body executed from the
  package's ``responses_api_agents/tau2/app.py``. That module imports τ²-bench types that exist
  only in a τ²-bench fork not on PyPI (``TextRunConfig``, the fork's ``Task``); they are stood in
  by models with exactly the keys of the package's own example rows (no other key allowed). The
  package's example rows pass the same check, as a control;
* the τ²-bench benchmark's ``normalize_row`` leaves every row as it is;
* OPENING_JSON (EvoSyn's retail system prompt and tools, made the export's way) equals what the
  package's example rows (retail) carry;
* ``ng_prepare_data`` (NeMo Gym's data preparation, run as its CLI) on the export's
  ``nemo_gym.yaml``: it parses the config, validates the datasets and collates every row.

Prints one JSON object. ``--rows-only`` leaves out the data preparation.
"""

from __future__ import annotations

import ast
import copy
import enum
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import responses_api_agents.tau2 as tau2_agent
from benchmarks.tau2.prepare_utils import normalize_row
from nemo_gym.base_resources_server import BaseRunRequest
from nemo_gym.train_data_utils import compute_sample_metrics
from pydantic import ConfigDict, ValidationError, create_model

AGENT_DIR = Path(tau2_agent.__file__).parent


def example_rows() -> list[dict[str, Any]]:
    """The rows NeMo Gym ships with its τ²-bench agent."""
    lines = (AGENT_DIR / "data" / "example.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def tau2_run_request(examples: list[dict[str, Any]]) -> Any:
    """``Tau2RunRequest`` from the package's source, fork-only τ²-bench types stood in."""
    source = (AGENT_DIR / "app.py").read_text()
    node = next(
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.ClassDef) and n.name == "Tau2RunRequest"
    )
    forbid = ConfigDict(extra="forbid")
    config_keys = {k for row in examples for k in row["config"]}
    task_keys = {k for row in examples for k in row["task"]}
    namespace: dict[str, Any] = {
        "BaseRunRequest": BaseRunRequest,
        "Literal": Literal,
        "TextRunConfig": create_model(
            "TextRunConfig", __config__=forbid, **{k: (Any, ...) for k in config_keys}
        ),
        "Task": create_model(
            "Task", __config__=forbid, **{k: (Any, None) for k in task_keys - {"id"}}, id=(str, ...)
        ),
        "EvaluationType": enum.Enum(
            "EvaluationType", {v.upper(): v for v in {r["evaluation_type"] for r in examples}}
        ),
    }
    exec(compile(ast.Module(body=[node], type_ignores=[]), "app.py", "exec"), namespace)
    model = namespace["Tau2RunRequest"]
    model.model_rebuild(_types_namespace=namespace)
    return model


def first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return ".".join(str(p) for p in error["loc"]) + ": " + error["msg"]


def check_rows(export: Path, request_model: Any) -> dict[str, Any]:
    report: dict[str, Any] = {"rows": {}, "errors": [], "normalize_changed": []}
    for path in sorted(export.glob("*.jsonl")):
        if path.stem.endswith(("_prepare", "_metrics")):
            continue
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        report["rows"][path.stem] = len(lines)
        for index, line in enumerate(lines):
            row = json.loads(line)
            where = f"{path.name}:{index}"
            try:
                BaseRunRequest.model_validate(row)
                request_model.model_validate(row)
            except ValidationError as exc:
                report["errors"].append(f"{where}: {first_error(exc)}")
            _, offending = compute_sample_metrics(line)
            if offending:
                report["errors"].append(f"{where}: compute_sample_metrics calls it offending")
            if normalize_row(copy.deepcopy(row)) != row:
                report["normalize_changed"].append(where)
    return report


def check_opening(opening: dict[str, Any], examples: list[dict[str, Any]]) -> dict[str, Any]:
    ours = {t["name"]: t for t in opening["tools"]}
    theirs = {t["name"]: t for t in examples[0]["responses_create_params"]["tools"]}
    shared = sorted(set(ours) & set(theirs))
    return {
        "system_prompt_equal": opening["system_prompt"]
        == examples[0]["responses_create_params"]["input"][0]["content"],
        "tools_shared": len(shared),
        "tools_differing": [name for name in shared if ours[name] != theirs[name]],
    }


def prepare_data(export: Path, work: Path) -> dict[str, Any]:
    """NeMo Gym's data preparation on the export's config, as its CLI runs it."""
    cli = Path(sys.executable).parent / "ng_prepare_data"
    out = work / "prepared"
    args = [
        str(cli),
        f"+config_paths=[{export / 'nemo_gym.yaml'}]",
        f"+output_dirpath={out}",
        "+mode=train_preparation",
    ]
    done = subprocess.run(args, cwd=work, capture_output=True, text=True, check=False)
    report: dict[str, Any] = {"returncode": done.returncode, "tail": done.stdout[-1500:]}
    report["stderr_tail"] = done.stderr[-1500:]
    for kind in ("train", "validation"):
        metrics = out / f"{kind}_metrics.json"
        if metrics.exists():
            report[f"{kind}_examples"] = json.loads(metrics.read_text())["Number of examples"]
            rows = [json.loads(x) for x in (out / f"{kind}.jsonl").read_text().splitlines()]
            report[f"{kind}_agents"] = sorted({r["agent_ref"]["name"] for r in rows})
    return report


def main(export: Path, opening_path: Path, work: Path, prepare: bool = True) -> dict[str, Any]:
    examples = example_rows()
    request_model = tau2_run_request(examples)
    controls = []
    for index, row in enumerate(examples):
        try:
            request_model.model_validate(row)
        except ValidationError as exc:
            controls.append(f"example {index}: {first_error(exc)}")
    return {
        "nemo_gym_version": importlib.metadata.version("nemo-gym"),
        "example_rows": len(examples),
        "example_errors": controls,
        "export": check_rows(export, request_model),
        "opening": check_opening(json.loads(opening_path.read_text()), examples),
        "prepare_data": prepare_data(export, work) if prepare else None,
    }


if __name__ == "__main__":
    export, opening, work = (Path(a) for a in sys.argv[1:4])
    print(json.dumps(main(export, opening, work, prepare="--rows-only" not in sys.argv)))
