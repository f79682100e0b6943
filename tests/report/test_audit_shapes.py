"""`evosyn audit`'s official-shape rows on a real synthesized telecom campaign."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.registry import get_domain
from evosyn.environments.telecom.faults import fault_kinds
from evosyn.records import SynthTask, Verification
from evosyn.report.audit import audit_campaign, audit_rows, shape_rows
from evosyn.storage import Lake

runner = CliRunner()


def _writes(tasks: list, requestor: str) -> set[frozenset[str]]:
    """Per task, the write tools its gold has the requestor call (read independently here)."""
    env = get_domain("telecom")
    out = set()
    for task in tasks:
        names = set()
        for action in task.evaluation_criteria.actions or []:
            spec = env.tool_spec(action.name, action.requestor)
            if action.requestor == requestor and spec and spec.symbol == FunctionalSymbol.WRITE:
                names.add(action.name)
        out.add(frozenset(names))
    return out


def test_audit_compares_the_verified_gold_with_the_official_shapes(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    sets = ["--set", f"lake.root={root}"]
    args = ["synth", "--domain", "telecom", "--n", "24", "--seed", "5", "--campaign-id", "s"]
    made = runner.invoke(app, [*args, *sets])
    assert made.exit_code == 0, made.output
    lake = Lake(root)
    passed = {v.task_id for v in lake.read(Verification, "s") if v.passed}
    verified = [t.task for t in lake.read(SynthTask, "s") if t.task_id in passed]
    official = get_domain("telecom").tasks("base")
    (audit,) = audit_campaign(lake, "s", "telecom")
    shapes = audit.shapes
    assert shapes is not None and shapes.tasks == len(verified) > 0
    assert shapes.official_tasks == len(official)

    ours, theirs = _writes(verified, "assistant"), _writes(official, "assistant")
    combos = shapes.write_combinations
    assert (combos.synthesized, combos.official) == (len(ours), len(theirs))
    assert combos.made == len(ours & theirs)
    assert len(combos.never_made) == len(theirs - ours)
    assert shapes.multi_write == sum(len(_writes([t], "assistant").pop()) >= 2 for t in verified)
    devices = shapes.device_tool_sets
    assert devices is not None
    assert devices.made == len(_writes(verified, "user") & _writes(official, "user"))
    kinds = shapes.fault_kinds
    assert kinds is not None
    made_kinds = {k for t in verified for k in fault_kinds(t)}
    official_kinds = {k for t in official for k in fault_kinds(t)}
    assert (kinds.synthesized, kinds.official) == (len(made_kinds), len(official_kinds))
    assert kinds.never_made == sorted(official_kinds - made_kinds)

    rows = {row[0]: row[1] for row in audit_rows([audit])}
    assert rows["shapes: write combinations"] == (
        f"{len(ours)} synthesized / {len(theirs)} official, {len(ours & theirs)} made"
    )
    multi = shapes.multi_write / len(verified)
    official_multi = shapes.official_multi_write / len(official)
    assert rows["shapes: >= 2 kinds of write"] == f"{multi:.1%} vs {official_multi:.1%} official"
    assert rows["shapes: official fault kinds never made"] == (
        "; ".join(kinds.never_made) or "none"
    )
    printed = runner.invoke(app, ["audit", "s", *sets])
    assert printed.exit_code == 0, printed.output
    assert "shapes: write combinations" in printed.output
    assert "shapes: fault kinds" in printed.output


def test_a_domain_without_a_device_has_no_device_or_fault_rows(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    sets = ["--set", f"lake.root={root}"]
    args = ["synth", "--domain", "retail", "--n", "8", "--seed", "5", "--campaign-id", "r"]
    made = runner.invoke(app, [*args, *sets])
    assert made.exit_code == 0, made.output
    (audit,) = audit_campaign(Lake(root), "r", "retail")
    labels = [row[0] for row in shape_rows([audit])]
    assert "shapes: write combinations" in labels
    assert not [label for label in labels if "device" in label or "fault" in label]
    assert audit.shapes is not None and audit.shapes.official_tasks == len(
        get_domain("retail").tasks("base")
    )
