"""`evosyn audit` on a real synthesized campaign, and its one-line error for unknown ids."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.records import SynthTask, Verification
from evosyn.report.audit import audit_campaign, audit_rows, challenges_acted
from evosyn.storage import Lake

runner = CliRunner()


def test_audit_measures_a_synthesized_campaign(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    sets = ["--set", f"lake.root={root}"]
    made = runner.invoke(
        app,
        ["synth", "--domain", "retail", "--n", "12", "--seed", "5", "--campaign-id", "q", *sets],
    )
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["audit", "q", *sets])
    assert result.exit_code == 0, result.output
    for label in ("answers out of context", "do-nothing passes", "official overlap: gold write"):
        assert label in result.output
    (audit,) = audit_campaign(Lake(root), "q", "retail")
    tasks = Lake(root).read(SynthTask, "q")
    assert audit.brittle.total == len(tasks) == audit.do_nothing.total
    assert audit.official_do_nothing.total == 114
    assert sum(audit.contamination.values()) == 0  # synthesis rejects every overlap
    requested = [c for t in tasks for c in t.requested.get("interaction_challenge", [])]
    assert requested and sum(r.total for r in audit.challenges_acted.values()) == len(requested)
    assert any(row[0].startswith("challenge acted out: ") for row in audit_rows([audit]))
    assert sum(r.total for r in audit.personas_acted.values()) == len(tasks)
    assert all(r.count == r.total for r in audit.personas_acted.values())
    assert any(row[0].startswith("persona acted out: ") for row in audit_rows([audit]))


def test_a_requested_challenge_the_dialogue_misses_counts_against_it(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    args = ["synth", "--domain", "airline", "--n", "12", "--seed", "5", "--campaign-id", "m"]
    made = runner.invoke(app, [*args, "--set", f"lake.root={root}"])
    assert made.exit_code == 0, made.output
    tasks = Lake(root).read(SynthTask, "m")
    verdicts = Lake(root).read(Verification, "m")
    before = challenges_acted(tasks, verdicts)
    task = next(t for t in tasks if t.requested.get("interaction_challenge"))
    value = task.requested["interaction_challenge"][0]
    # The task's dialogue as if it had not acted the challenge out: the realize gate fails it.
    missed = [
        v.model_copy(
            update={"passed": False, "realized": {**v.realized, "interaction_challenges": "none"}}
        )
        if v.task_id == task.task_id
        else v
        for v in verdicts
    ]
    after = challenges_acted(tasks, missed)
    assert after[value].total == before[value].total
    assert after[value].count == before[value].count - 1


def test_audit_names_an_unknown_campaign(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    sets = ["--set", f"lake.root={root}"]
    runner.invoke(app, ["synth", "--n", "2", "--campaign-id", "known", *sets])
    result = runner.invoke(app, ["audit", "nope", *sets])
    assert result.exit_code == 2
    assert "unknown campaign 'nope'" in result.output and "known" in result.output


def test_gold_rows_count_what_the_dialogues_break() -> None:
    from synthesis_checks import exploration

    from evosyn.agents.planner.programmatic import ProgrammaticPlanner
    from evosyn.agents.synthesis import synthesize
    from evosyn.agents.verifier.replay import ReplayVerifier
    from evosyn.environments.registry import domain_plugin
    from evosyn.report.audit import gold_audit
    from evosyn.space import seed_space

    space = seed_space("airline", "g", round=1)
    blueprints = ProgrammaticPlanner().plan(space, exploration(space, 60, direction_id="d"), 4)
    plugin = domain_plugin("airline")
    batch = synthesize(
        blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier("airline"), 4
    )
    verified = {v.trajectory_id for v in batch.verified}
    clean = gold_audit(
        "airline", [t.messages for t in batch.trajectories if t.trajectory_id in verified]
    )
    assert clean.chosen_for_user.count == clean.internal_ids.count == clean.debris.count == 0
    assert clean.priced.total > 0 and clean.priced.count == clean.priced.total
    # Every rollout with a slip, as a lake written before the gate could hold them.
    slipping = plugin.teacher(mistake_rate=1.0)
    raw = [slipping.rollout(t, seed=4).messages for t in batch.tasks]
    dirty = gold_audit("airline", raw)
    broken = dirty.chosen_for_user.count + dirty.internal_ids.count
    assert broken > 0 or dirty.priced.count < dirty.priced.total
    assert clean.shared_agent_turns.total > 0
