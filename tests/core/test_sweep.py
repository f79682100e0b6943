"""The blind weakness sweep: pre-registered draws, cells, and the detection report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from evosyn.agents.learner import SimulatedSettings, Weakness
from evosyn.cli import app
from evosyn.config import CampaignConfig, ConfigError
from evosyn.records import (
    Campaign,
    EvalResult,
    ExperimentArm,
    Factor,
    Verification,
)
from evosyn.report.data import ReportError
from evosyn.report.sweep import (
    NAMEABLE,
    OUTSIDE,
    SEED,
    design_markdown,
    detection_rows,
    docs_blocks,
    effect_rows,
    false_rows,
    feature_classes,
    report_markdown,
    sweep_report,
    targeted_round,
)
from evosyn.space import add_factor, seed_space
from evosyn.storage import Lake
from evosyn.sweep import (
    Region,
    Sweep,
    candidate_regions,
    draw,
    is_sweep_file,
    load_sweep,
    plan,
)

BASE = Path("deployments/campaigns/airline-offline.yaml").resolve()
SWEEP = Path("deployments/experiments/airline-blind-sweep.yaml")

# Ten diagnostic tasks: task i reads i % 3 + 1 times, writes 3-4 times for i < 3.
REALIZED = [
    {
        "num_read": str(i % 3 + 1),
        "num_write": "3-4" if i < 3 else "1",
        "task_family": "flight_change" if i < 5 else "flight_booking",
        "tool_use_patterns": "multi_entity_retrieval;lookup_verify_then_modify"
        if i < 4
        else "none",
        "difficulty_profile": "hard" if i == 0 else "easy",
    }
    for i in range(10)
]


def _weaknesses(cfg: CampaignConfig) -> list[Weakness]:
    return cfg.agents.learner.kind_settings(SimulatedSettings).weaknesses


def _write(tmp_path: Path, **sweep: Any) -> Path:
    data = {
        "sweep": {
            "name": "sw",
            "campaign": str(BASE),
            "registration_seed": 7,
            "seeds": [0, 1],
            "penalties": [0.7],
            "several": {"count": 2, "penalty": 0.5},
            "features": ["num_read", "num_write", "task_family", "tool_use_pattern"],
            "max_share": 0.5,
            "set": {"lake.root": str(tmp_path / "lake")},
        }
        | sweep,
        "arms": {"evosyn": {}, "fixed_state": {"ablations.fixed_state": True}},
    }
    path = tmp_path / "sw.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    return path


def test_candidates_are_values_enough_tasks_and_not_most_realize() -> None:
    found = candidate_regions(REALIZED, ["num_write", "num_read", "tool_use_pattern"], 3, 0.4)
    assert [(r.feature, r.value, r.tasks) for r in found] == [
        ("num_write", "3-4", 3),
        # num_write=1 (7 of 10) is most of the set
        ("num_read", "1", 4),
        ("num_read", "2", 3),
        ("num_read", "3", 3),
        # a set-valued feature counts each value a task shows
        ("tool_use_pattern", "lookup_verify_then_modify", 4),
        ("tool_use_pattern", "multi_entity_retrieval", 4),
    ]


def test_draws_depend_on_the_registration_seed_alone() -> None:
    pool = candidate_regions(REALIZED, ["num_read", "num_write", "task_family"], 3, 0.5)
    first = draw(pool, 7, [0, 1, 2, 3], several=2)
    assert first == draw(pool, 7, [0, 1, 2, 3], several=2)
    # more seeds leave the earlier seeds' draws as they were
    assert draw(pool, 7, [0, 1, 2, 3, 4, 5], several=2).single[3] == first.single[3]
    others = [draw(pool, seed, [0, 1, 2, 3], several=2) for seed in range(8, 12)]
    assert any(o.single != first.single for o in others)
    for regions in first.several.values():
        assert len({r.feature for r in regions}) == 2 and all(r in pool for r in regions)
    with pytest.raises(ConfigError, match="only 3 features"):
        draw(pool, 7, [0], several=4)
    with pytest.raises(ConfigError, match="no feature value"):
        draw([], 7, [0])


def test_cells_plant_each_seeds_draw_and_the_null_plants_nothing(tmp_path: Path) -> None:
    sweep = load_sweep(_write(tmp_path, penalties=[0.35, 0.7]))
    candidates, draws = plan(sweep, REALIZED)
    cells = sweep.cells(draws)
    assert list(cells) == sweep.cell_names() == ["p35", "p70", "several", "null"]
    assert cells["p35"].name == "sw.p35" and cells["p35"].campaign_id("evosyn", 1) == (
        "sw.p35-evosyn-s1"
    )
    for seed in (0, 1):
        single = draws.single[seed]
        for cell, penalty in (("p35", 0.35), ("p70", 0.7)):
            cfg = cells[cell].config("fixed_state", seed)
            assert [w.model_dump() for w in _weaknesses(cfg)] == [single.weakness(penalty)]
            assert cfg.ablations.fixed_state and cfg.campaign.seed == seed
        several = _weaknesses(cells["several"].config("evosyn", seed))
        assert [(w.feature, w.values[0], w.penalty) for w in several] == [
            (r.feature, r.value, 0.5) for r in draws.several[seed]
        ]
        # the base campaign's own weakness is replaced, never added to
        assert _weaknesses(cells["null"].config("evosyn", seed)) == []
    assert {r.feature for r in candidates} <= {"num_read", "num_write", "task_family"} | {
        "tool_use_pattern"
    }


def test_a_bad_sweep_file_is_one_line_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="penalties repeat"):
        load_sweep(_write(tmp_path, penalties=[0.7, 0.701]))
    with pytest.raises(ConfigError, match=r"sweep\.reference 'r_zero' is not an arm"):
        load_sweep(_write(tmp_path, reference="r_zero"))
    with pytest.raises(ConfigError, match="has no sweep section"):
        path = tmp_path / "e.yaml"
        path.write_text("experiment: {name: e}\n", "utf-8")
        load_sweep(path)
    assert not is_sweep_file(path) and is_sweep_file(_write(tmp_path))


def test_the_committed_sweep_meets_the_protocol_and_draws_outside_the_probes() -> None:
    from evosyn.sweep import official_realized

    sweep = load_sweep(SWEEP)
    s = sweep.sweep
    assert len(s.seeds) >= 10 and len(s.penalties) >= 2 and s.null_cell
    assert s.several is not None and s.several.count >= 2
    assert set(sweep.arms) == {"evosyn", "r_zero", "autoplay", "fixed_state"}
    candidates, draws = plan(sweep, official_realized(sweep.domain()))
    cells = sweep.cells(draws)
    classes = feature_classes(cells["null"].config("evosyn", 0), s.features)
    assert classes["num_write"] == NAMEABLE and classes["task_family"] == SEED
    assert classes["functional_pattern"] == OUTSIDE and classes["num_tool_calls"] == OUTSIDE
    drawn = {classes[draws.single[seed].feature] for seed in s.seeds}
    drawn |= {classes[r.feature] for rs in draws.several.values() for r in rs}
    assert drawn == {NAMEABLE, SEED, OUTSIDE}
    text = design_markdown(sweep, candidates, draws)
    assert f"Registration seed **{s.registration_seed}**" in text


# --------------------------------------------------------------------------- the report


def test_targeting_is_a_one_sided_fisher_test_against_round_one() -> None:
    region = Region(feature="num_write", value="3-4", tasks=3)
    heavy, light = {"num_write": "3-4"}, {"num_write": "1"}
    rounds = {1: [light] * 20, 2: [heavy] * 2 + [light] * 18, 3: [heavy] * 8 + [light] * 12}
    assert targeted_round(rounds, region, 0.05) == 3  # 2 of 20 after 0 of 20: p = 0.24
    assert targeted_round({1: [heavy] * 8 + [light] * 12, 2: [light] * 20}, region, 0.05) is None
    assert targeted_round({1: [light]}, region, 0.05) is None


def _run(
    lake: Lake,
    sweep: Sweep,
    cell: str,
    arm: str,
    seed: int,
    planted: list[dict[str, Any]],
    heavy: tuple[int, int],
    failed: set[int],
    added: str | None = None,
) -> None:
    """One arm run: ``heavy`` = write-heavy verified samples (of 20) in rounds 1 and 2."""
    cid = f"{sweep.name}.{cell}-{arm}-s{seed}"
    config = {"agents": {"learner": {"kind": "simulated", "weaknesses": planted}}}
    lake.write(
        [Campaign(campaign_id=cid, round=0, name=cid, domain="airline", seed=seed, config=config)],
        batch="campaign",
    )
    space = seed_space("airline", cid)
    lake.write([space], batch="v1")
    if added is not None:
        lake.write([add_factor(space, Factor(name=added, values=["0", "1", "3-4"]), 2)], batch="v2")
    for r in (1, 2):
        verifications = [
            Verification(
                campaign_id=cid,
                round=r,
                task_id=f"t{r}-{i}",
                trajectory_id=f"j{r}-{i}",
                passed=True,
                reward=1.0,
                realized={"num_write": "3-4" if i < heavy[r - 1] else "1", "num_read": "1"},
            )
            for i in range(20)
        ]
        lake.write(verifications, batch="verify")
    lake.write(
        [
            EvalResult(
                campaign_id=cid,
                round=2,
                training_id="t",
                task_id=f"official:{i}",
                split="diagnostic",
                success=i not in failed,
                reward=float(i not in failed),
                realized={"num_write": "3-4" if i < 3 else "1"},
            )
            for i in range(10)
        ],
        batch="diagnostic",
    )
    row = ExperimentArm(
        campaign_id=cid,
        round=0,
        experiment=f"{sweep.name}.{cell}",
        arm=arm,
        seed=seed,
        rounds=2,
        seconds=1.0,
    )
    lake.write([row], batch="arm")


@pytest.fixture
def swept(tmp_path: Path) -> tuple[Lake, Sweep, list[Region], Any]:
    sweep = load_sweep(_write(tmp_path, several=None, features=["num_write"], seeds=[0, 1]))
    region = Region(feature="num_write", value="3-4", tasks=3)
    candidates, draws = [region], draw([region], 7, [0, 1])
    lake = Lake(tmp_path / "lake")
    planted = [region.weakness(0.7)]
    for seed in (0, 1):
        # evosyn adds num_write and shifts data into 3-4 writes; fixed_state does neither.
        _run(lake, sweep, "p70", "evosyn", seed, planted, (0, 12), {0}, added="num_write")
        _run(lake, sweep, "p70", "fixed_state", seed, planted, (1, 1), {0, 1, 2})
        # the null: evosyn adds a factor in seed 1 (a false discovery) and shifts nothing
        added = "num_read" if seed == 1 else None
        _run(lake, sweep, "null", "evosyn", seed, [], (1, 1), set(), added=added)
        _run(lake, sweep, "null", "fixed_state", seed, [], (1, 1), set())
    return lake, sweep, candidates, draws


def test_detection_false_discovery_and_effect(swept: tuple[Lake, Sweep, list[Region], Any]) -> None:
    lake, sweep, candidates, draws = swept
    report = sweep_report(lake, sweep, candidates, draws)
    assert report.campaigns == 8 and report.expected == 8
    assert report.can_add == {"evosyn": True, "fixed_state": False}
    _, rows = detection_rows(report)
    assert rows[0][:3] == ["p70", "evosyn", "2/2 [34.2, 100.0]"]
    assert rows[0][3] == "2.0 (r2: 2)" and rows[0][4].startswith("2/2")
    assert rows[1][:3] == ["p70", "fixed_state", "0/2 [0.0, 65.8]"]
    assert rows[1][4] == "cannot add"
    _, rows = false_rows(report)
    assert rows[0] == ["evosyn", "0/2 [0.0, 65.8]", "1/2 [9.5, 90.5]", "2 (0)", "0/2 [0.0, 65.8]"]
    assert rows[1][2] == "cannot add"
    _, rows = effect_rows(report)
    # evosyn fails one planted task a seed, fixed_state three: +20 points overall, and
    # +66.7 on the planted slice (3 tasks)
    assert rows[0][0] == "p70" and rows[0][2].startswith("fixed_state: 70.0")
    assert rows[0][3] == "+20.0 [20.0, 20.0]" and rows[0][5] == "+66.7 [66.7, 66.7]"
    text = report_markdown(report)
    assert text.index("(pre-registered)") < text.index("## Results")
    assert set(docs_blocks(report)) == {
        "design",
        "detection",
        "false",
        "effect",
        "classes",
        "draws",
    }


def test_a_run_that_planted_other_weaknesses_than_the_file_draws_is_refused(
    swept: tuple[Lake, Sweep, list[Region], Any],
) -> None:
    lake, sweep, _, _ = swept
    region = Region(feature="num_write", value="1", tasks=7)
    with pytest.raises(ReportError, match="the file changed after the run"):
        sweep_report(lake, sweep, [region], draw([region], 7, [0, 1]))


def test_the_command_prints_the_design_first(
    swept: tuple[Lake, Sweep, list[Region], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, _, candidates, draws = swept
    import evosyn.sweep as sweep_module

    # the draws of the fixture, not of airline's diagnostic tasks
    monkeypatch.setattr(sweep_module, "plan", lambda *_: (candidates, draws))
    monkeypatch.setattr(sweep_module, "official_realized", lambda _: [])
    out = tmp_path / "out"
    args = ["report", "--sweep", str(tmp_path / "sw.yaml"), "--lake", str(lake.location)]
    result = CliRunner().invoke(app, [*args, "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.output.index("pre-registered") < result.output.index("8 of 8 campaigns")
    assert (out / "sweep-sw.md").read_text("utf-8").startswith("# Sweep sw")
