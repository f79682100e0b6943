"""The round's Generator step: which kept tasks a new task must not repeat."""

from __future__ import annotations

from pathlib import Path

from synthesis_checks import hand_blueprint

from evosyn.config import load_config
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.records import SynthTask, Verification
from evosyn.storage import Lake
from evosyn.tasks.loop import kept_tasks


def _store(lake: Lake, campaign_id: str, round: int, index: int, passed: bool) -> SynthTask:
    bp = hand_blueprint(
        "billing_issue",
        "fulfill",
        focus=("eligibility_check",),
        patterns=("multi_hop_retrieval",),
        blueprint_id=f"{campaign_id}-r{round}-b{index}",
    )
    synth = TelecomGenerator().generate(bp, seed=index)
    synth = synth.model_copy(update={"campaign_id": campaign_id, "round": round})
    verdict = Verification(
        campaign_id=campaign_id,
        round=round,
        task_id=synth.task_id,
        trajectory_id=f"{synth.task_id}-traj0",
        passed=passed,
        reward=float(passed),
    )
    lake.write([synth], batch=f"b{index}")
    lake.write([verdict], batch=f"b{index}")
    return synth


def test_kept_tasks_are_this_campaigns_earlier_verified_ones_or_the_whole_lakes(
    tmp_path: Path,
) -> None:
    lake = Lake(tmp_path / "lake")
    earlier = _store(lake, "mine", 1, 0, passed=True)
    _store(lake, "mine", 1, 1, passed=False)  # failed verification: not kept
    _store(lake, "mine", 2, 2, passed=True)  # the round being generated, or later
    other = _store(lake, "other", 1, 3, passed=True)

    cfg = load_config(None, ["campaign.domain=telecom", f"lake.root={tmp_path / 'lake'}"])
    seen = kept_tasks(cfg, lake, "mine", round=2)
    assert seen.task_ids == [earlier.task_id]
    assert seen.reason(earlier.task) is not None

    overrides = ["campaign.domain=telecom", "agents.generator.dedup=lake"]
    everywhere = load_config(None, [*overrides, f"lake.root={tmp_path / 'lake'}"])
    seen = kept_tasks(everywhere, lake, "mine", round=2)
    assert sorted(seen.task_ids) == sorted([earlier.task_id, other.task_id])
