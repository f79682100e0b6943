"""``make deploy``: ``prefect deploy --all`` that keeps each schedule as the operator left it.

Every schedule in deployments/prefect.yaml has a slug, so Prefect updates it in place (same id)
instead of replacing it. Its ``active`` in the file is the state of a first deployment; a
schedule that already exists keeps the state it has on the server (switched on in the UI, or
paused), which ``prefect deploy`` alone would reset to the file's. Prefect drops a deployment's
upcoming scheduled runs on every update; its scheduler makes them again for active schedules.

Usage: ``python -m evosyn.flows.deploy PREFECT_YAML [prefect deploy options]``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound


def scheduled_deployments(prefect_yaml: Path) -> list[str]:
    """``flow/deployment`` names of the file's deployments that have schedules."""
    from prefect.flows import load_flow_from_entrypoint

    spec = yaml.safe_load(prefect_yaml.read_text("utf-8"))
    names = []
    for deployment in spec.get("deployments", []):
        if deployment.get("schedules"):
            for schedule in deployment["schedules"]:
                if not schedule.get("slug"):
                    raise SystemExit(
                        f"error: {prefect_yaml}: a schedule of {deployment['name']} has no slug "
                        "(make deploy keeps schedules by slug)"
                    )
            flow_name = load_flow_from_entrypoint(deployment["entrypoint"]).name
            names.append(f"{flow_name}/{deployment['name']}")
    return names


def schedule_states(names: list[str]) -> dict[tuple[str, str], bool]:
    """(deployment, slug) -> active, for the schedules that exist on the server."""
    states: dict[tuple[str, str], bool] = {}
    with get_client(sync_client=True) as client:
        for name in names:
            try:
                deployment = client.read_deployment_by_name(name)
            except ObjectNotFound:
                continue
            for schedule in deployment.schedules:
                if schedule.slug:
                    states[(name, schedule.slug)] = schedule.active
    return states


def restore(states: dict[tuple[str, str], bool]) -> list[str]:
    """Set each schedule back to its state before the deploy; the ones changed."""
    restored = []
    with get_client(sync_client=True) as client:
        for (name, slug), active in states.items():
            deployment = client.read_deployment_by_name(name)
            for schedule in deployment.schedules:
                if schedule.slug == slug and schedule.active != active:
                    client.update_deployment_schedule(deployment.id, schedule.id, active=active)
                    restored.append(f"{name} schedule {slug}: kept {'on' if active else 'off'}")
    return restored


def main(argv: list[str]) -> int:
    """Deploy every deployment of ``argv[0]``, keeping existing schedules' states."""
    if not argv:
        print("usage: python -m evosyn.flows.deploy PREFECT_YAML [options]", file=sys.stderr)
        return 2
    prefect_yaml = Path(argv[0])
    before = schedule_states(scheduled_deployments(prefect_yaml))
    prefect = str(Path(sys.executable).with_name("prefect"))
    command = [prefect, "--no-prompt", "deploy", "--all", "--prefect-file", str(prefect_yaml)]
    done = subprocess.run([*command, *argv[1:]], check=False)
    if done.returncode != 0:
        return done.returncode
    for line in restore(before):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
