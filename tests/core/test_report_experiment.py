"""``evosyn report --experiment``: Table 1 with intervals and paired differences, mechanisms."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.records import (
    Campaign,
    EvalResult,
    ExperimentArm,
    Factor,
    RoundSummary,
)
from evosyn.report.data import ReportError
from evosyn.report.experiment import (
    Gaps,
    _alignment,
    _excess,
    added_factors,
    experiment_report,
    recovering_factors,
    report_markdown,
    seed_interval,
)
from evosyn.space import add_factor, seed_space
from evosyn.storage import Lake

WEAK = {"feature": "num_write", "values": ["3-4", "5+"], "penalty": 0.7}
TASKS = 10
PLANTED = 4  # official:0 .. official:3 are write-heavy


def _arm(lake: Lake, arm: str, seed: int, failed: set[int], recovered: bool) -> None:
    cid = f"x-{arm}-s{seed}"
    config = {"agents": {"learner": {"kind": "simulated", "weaknesses": [WEAK]}}}
    lake.write(
        [
            Campaign(
                campaign_id=cid,
                round=0,
                name=f"x-{arm}",
                domain="airline",
                seed=seed,
                config=config,
            )
        ],
        batch="campaign",
    )
    space = seed_space("airline", cid)
    lake.write([space], batch="v1")
    if recovered:
        factor = Factor(name="num_write", values=["0", "1", "2", "3-4", "5+"])
        lake.write([add_factor(space, factor, 2)], batch="v2")
    results = [
        EvalResult(
            campaign_id=cid,
            round=2,
            training_id="t",
            task_id=f"official:{i}",
            split="diagnostic",
            success=i not in failed,
            reward=float(i not in failed),
            realized={"num_write": "3-4" if i < PLANTED else "1", "task_family": "flight_change"},
        )
        for i in range(TASKS)
    ]
    # Held-out synthesized tasks are not the fixed set: they must not count.
    results.append(results[0].model_copy(update={"task_id": "syn-1", "success": False}))
    lake.write(results, batch="diagnostic")
    # The final test: two official test tasks, three trials each; task 0 fails trial 2 where
    # ``failed`` holds 0 (so pass^1 = 5/6, pass^2 = (1/3 + 1) / 2, pass^3 = 1/2), else passes.
    test = [
        EvalResult(
            campaign_id=cid,
            round=2,
            training_id="t",
            task_id=f"official:t{task}#trial{trial}",
            split="test",
            success=not (task == 0 and trial == 2 and 0 in failed),
            reward=1.0,
            realized={},
        )
        for task in range(2)
        for trial in range(3)
    ]
    lake.write(test, batch="test")
    for r in (1, 2):
        summary = RoundSummary(
            campaign_id=cid, round=r, space_version=1, budget=10, n_verified=5, status="succeeded"
        )
        lake.write([summary], batch="summary")
    lake.write(
        [
            ExperimentArm(
                campaign_id=cid, round=0, experiment="x", arm=arm, seed=seed, rounds=2, seconds=3.0
            )
        ],
        batch="arm",
    )


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path / "lake")
    # evosyn fails one planted task per seed; r_zero fails three planted tasks per seed.
    _arm(lake, "evosyn", 0, {0}, recovered=True)
    _arm(lake, "evosyn", 1, {1}, recovered=False)
    _arm(lake, "r_zero", 0, {0, 1, 2}, recovered=False)
    _arm(lake, "r_zero", 1, {1, 2, 3}, recovered=False)
    return lake


def test_success_paired_differences_planted_slice_and_recovery(lake: Lake) -> None:
    report = experiment_report(lake, "x")
    assert [a.arm for a in report.arms] == ["evosyn", "r_zero"]
    evosyn, r_zero = report.arms
    assert evosyn.success.mean == pytest.approx(0.9) and evosyn.episodes == TASKS
    assert r_zero.success.mean == pytest.approx(0.7)
    # The same episodes, two fewer successes per seed: -0.2 in both seeds.
    assert r_zero.diff is not None and r_zero.diff.mean == pytest.approx(-0.2)
    assert r_zero.diff.low == pytest.approx(-0.2) and r_zero.diff.n == 2
    assert evosyn.planted.mean == pytest.approx(0.75) and r_zero.planted.mean == pytest.approx(0.25)
    assert r_zero.planted_diff is not None and r_zero.planted_diff.mean == pytest.approx(-0.5)
    assert evosyn.recovered is not None and (evosyn.recovered.successes, evosyn.recovered.n) == (
        1,
        2,
    )
    assert evosyn.recovery_rounds == [2]
    assert r_zero.recovered is not None and r_zero.recovered.successes == 0
    assert report.planted == ["num_write"] and report.seconds == pytest.approx(12.0)
    text = report_markdown(report)
    assert "| r_zero | 2 | 70.0 [70.0, 70.0] | -20.0 [-20.0, -20.0] |" in text
    # Final test: evosyn seed 0 (fails one trial) and seed 1 (passes all), averaged.
    assert evosyn.test is not None and evosyn.test.mean == pytest.approx((5 / 6 + 1) / 2)
    assert evosyn.pass_k[2].mean == pytest.approx(((1 / 3 + 1) / 2 + 1) / 2)
    assert evosyn.pass_k[3].mean == pytest.approx((0.5 + 1) / 2)
    assert r_zero.pass_k[3].mean == pytest.approx(0.75)  # only its seed 0 fails a trial
    assert "## Final test" in text and "pass^3 %" in text


def test_seed_interval_is_a_student_t_interval() -> None:
    e = seed_interval([0.1, 0.2, 0.3])
    # mean 0.2, sd 0.1, t(0.975, 2) = 4.303: half-width 0.2484
    assert e.mean == pytest.approx(0.2) and e.high is not None and e.low is not None
    assert e.high - e.mean == pytest.approx(4.3027 * 0.1 / 3**0.5, rel=1e-3)
    assert seed_interval([0.5]).low is None and seed_interval([]).mean is None


def test_the_command_prints_the_tables_and_writes_markdown(lake: Lake, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["report", "--experiment", "x", "--lake", str(lake.location), "--out", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "-20.0 [-20.0, -20.0]" in result.output and "1/2" in result.output
    assert (out / "experiment-x.md").read_text("utf-8").startswith("# Experiment x")
    missing = CliRunner().invoke(
        app, ["report", "--experiment", "nope", "--lake", str(lake.location)]
    )
    assert missing.exit_code == 2 and "experiments there: x" in missing.output
    with pytest.raises(ReportError):
        experiment_report(lake, "nope")
    both = CliRunner().invoke(
        app, ["report", "c", "--experiment", "x", "--lake", str(lake.location)]
    )
    assert both.exit_code == 2 and "one of them" in both.output


def test_recovery_counts_only_factors_the_reflector_added(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    # a baseline whose first space already holds num_write (its request space): no recovery
    _arm(lake, "evosyn", 0, set(), recovered=True)
    _arm(lake, "autoplay", 0, set(), recovered=False)
    request = seed_space("airline", "x-autoplay-s0")
    request = request.model_copy(
        update={"factors": [*request.factors, Factor(name="num_write", values=["1", "3-4"])]}
    )
    lake.write([request], batch="v1")
    report = experiment_report(lake, "x")
    arms = {a.arm: a for a in report.arms}
    assert arms["evosyn"].recovered is not None and arms["evosyn"].recovered.successes == 1
    assert arms["autoplay"].recovered is not None and arms["autoplay"].recovered.successes == 0
    assert added_factors(lake, "x-evosyn-s0") == {"num_write": 2}
    assert added_factors(lake, "x-autoplay-s0") == {}
    # a probe's stand-in factor recovers its feature
    assert recovering_factors("num_numeric_args") == {"num_numeric_args", "computation"}


def _gaps(gap: dict[str, float], shift: dict[str, float]) -> Gaps:
    return [(1, ("task_family", v), gap[v], shift[v]) for v in sorted(gap)]


def test_held_out_gaps_count_in_excess_of_the_nulls_other_seeds() -> None:
    # Real difficulty: "hard" always has the largest gap and the Designer moves budget to it,
    # so the raw gaps align with the shifts in the null too...
    base = {"easy": 0.05, "medium": 0.15, "hard": 0.30, "refusal": 0.10}
    toward = {"easy": -0.10, "medium": 0.0, "hard": 0.10, "refusal": -0.05}
    noise = [{"easy": e, "medium": -e, "hard": e / 2, "refusal": -e / 2} for e in (0.02, -0.03)]
    null = {
        seed: _gaps({v: g + noise[seed % 2][v] for v, g in base.items()}, toward)
        for seed in range(6)
    }
    raw = _alignment([(g, s) for gaps in null.values() for _, _, g, s in gaps])
    assert raw.rho is not None and raw.rho > 0.9 and raw.p_value is not None
    assert raw.p_value < 0.01
    assert _excess(null, {}).n == 0
    # ... but not in excess of the null's mean: what is left is noise the shifts ignore.
    calibrated = _excess(null, null)
    assert calibrated.rho is not None and abs(calibrated.rho) < 0.5
    assert calibrated.p_value is not None and calibrated.p_value > 0.05
    # A weakness on "medium" that the Designer moves budget to: its excess gap leads.
    weak = {"easy": 0.05, "medium": 0.45, "hard": 0.30, "refusal": 0.10}
    moved = {"easy": -0.08, "medium": 0.12, "hard": 0.0, "refusal": -0.04}
    planted = {
        seed: _gaps({v: g + noise[seed % 2][v] for v, g in weak.items()}, moved)
        for seed in range(6)
    }
    found = _excess(planted, null)
    assert found.rho is not None and found.rho > 0.5 and found.p_value is not None
    assert found.p_value < 0.01 and found.n == 24


def test_the_command_rewrites_and_checks_the_blocks_of_a_page(lake: Lake, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    head = "# Notes\n\n<!-- generated by `evosyn report --experiment x`: table -->\n"
    page.write_text(f"{head}| stale |\n<!-- end generated -->\nprose\n", "utf-8")
    args = ["report", "--experiment", "x", "--lake", str(lake.location), "--docs", str(page)]
    runner = CliRunner()
    stale = runner.invoke(app, [*args, "--check"], env={"COLUMNS": "200"})
    assert stale.exit_code == 1 and "figures differ" in stale.output, stale.output
    assert "| stale |" in page.read_text("utf-8")  # --check writes nothing
    written = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert written.exit_code == 0, written.output
    text = page.read_text("utf-8")
    assert "| r_zero | 2 | 70.0 [70.0, 70.0] | -20.0 [-20.0, -20.0] |" in text
    assert text.startswith(head) and text.endswith("<!-- end generated -->\nprose\n")
    current = runner.invoke(app, [*args, "--check"], env={"COLUMNS": "200"})
    assert current.exit_code == 0 and "is current" in current.output
    # a page without a block of this command, or an unknown part, is a usage error
    page.write_text(head.replace("table", "nothing") + "<!-- end generated -->\n", "utf-8")
    unknown = runner.invoke(app, args)
    assert unknown.exit_code == 2 and "renders no part named nothing" in unknown.output
    other = runner.invoke(app, [*args[:2], "y", *args[3:]])
    assert other.exit_code == 2
