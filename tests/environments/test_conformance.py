"""The domain contract, checked on every registered domain: a new domain is tested unedited.

For each name in the registry: the gold trajectory of every official task passes the replay
verifier (and τ²-bench's own evaluator agrees), except the domain's declared known-bad tasks,
which fail both and which ``evosyn env verify --split`` leaves out, naming them, with exit
status 0 on every split; the programmatic Generator and Teacher turn planned
blueprints into tasks that verify with reward 1, the Teacher taking the user's words from
the task's cues, never from a gold action's note; the requested factor values are realized;
a copy of an official test task is caught as contamination; and a second synthesis into the
same lake repeats nothing the first kept.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from synthesis_checks import exploration
from typer.testing import CliRunner

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, controllability, synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.cli import app
from evosyn.environments import get_domain
from evosyn.environments.contamination import contamination_reason
from evosyn.environments.dedup import SeenTasks
from evosyn.environments.registry import domain_plugin, domains_offering, list_domains
from evosyn.environments.tau2_data import known_bad
from evosyn.environments.trajectories import gold_trajectory
from evosyn.records import Blueprint, SynthTask, Verification
from evosyn.space import seed_space
from evosyn.storage import Lake

DOMAINS = list_domains()
#: The domains that synthesize offline (a programmatic Generator and Teacher); every domain
#: offers its environment, which the other tests check.
SYNTHESIZING = [n for n in domains_offering("generator") if domain_plugin(n).offers("teacher")]
#: Splits larger than this are checked through ``env verify`` only under ``slow``: the gold
#: replay test has already replayed each of their tasks (telecom's ``full``: 2,285 tasks).
LONG_SPLIT = 500
#: Blueprints planned and synthesized per domain.
BLUEPRINTS = 10
#: Least share of blueprints that must end in a verified sample.
MIN_VERIFIED = 0.6
#: Least share of requests each measured factor must realize.
MIN_REALIZED = 0.8

runner = CliRunner()


@functools.cache
def _synthesis(name: str) -> tuple[list[Blueprint], SynthesisBatch]:
    """Ten blueprints planned over the seed space and synthesized (once per domain)."""
    plugin = domain_plugin(name)
    space = seed_space(name, "conformance", round=1)
    direction = exploration(space, BLUEPRINTS, direction_id="r1-uniform")
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed=5)
    batch = synthesize(blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier(name), 5)
    return blueprints, batch


@pytest.mark.parametrize("name", DOMAINS)
def test_registration_is_complete(name: str) -> None:
    plugin = domain_plugin(name)
    assert plugin.name == name and get_domain(name).name == name
    assert seed_space(name, "c").domain == name
    if name in SYNTHESIZING:  # its Generator realizes the counts the Reflector may add
        assert set(plugin.realizable) >= {"num_write", "num_read"}


@functools.cache
def _verifier(name: str) -> ReplayVerifier:
    """One replay verifier per domain, shared by the tests (the domain object is shared too)."""
    return ReplayVerifier(name)


def _parts() -> list[object]:
    """(domain, part): the tasks of its short splits, then (``slow``) any others."""
    params: list[object] = []
    for name in DOMAINS:
        params.append(pytest.param(name, "short", id=f"{name}-short"))
        if _official_ids(name)[1]:
            params.append(pytest.param(name, "long", marks=pytest.mark.slow, id=f"{name}-long"))
    return params


@functools.cache
def _official_ids(name: str) -> tuple[frozenset[str], frozenset[str]]:
    """Ids of the official tasks in a split of at most ``LONG_SPLIT`` tasks, and of the rest."""
    domain = get_domain(name)
    short = {i for ids in domain.splits().values() if len(ids) <= LONG_SPLIT for i in ids}
    return frozenset(short), frozenset(t.id for t in domain.tasks()) - short


@pytest.mark.parametrize(("name", "part"), _parts())
def test_gold_replay_of_every_official_task_passes(name: str, part: str) -> None:
    domain = get_domain(name)
    verifier = _verifier(name)
    ids = _official_ids(name)[0 if part == "short" else 1]
    bad = {k: v for k, v in known_bad(name).items() if k in ids}
    failed: dict[str, list[str]] = {}
    tasks = [t for t in domain.tasks() if t.id in ids]
    for task in tasks:
        report = verifier.report(task, gold_trajectory(domain, task))
        if report.reward != 1.0 or report.policy_violations:
            failed[task.id] = [*report.reasons, *report.policy_violations]
    # Exactly the declared tasks fail: a new failure is a bug, a declared one that passes is
    # a stale entry.
    assert set(failed) == set(bad), {k: v for k, v in failed.items() if k not in bad}
    if part == "short":  # τ²-bench's evaluator agrees (it is slow: once is enough)
        first = next(t for t in tasks if t.id not in bad)
        assert stock_reward(name, first, gold_trajectory(domain, first)) == 1.0, first.id


def test_every_official_task_is_replayed_and_every_known_bad_one_is_official() -> None:
    for name in DOMAINS:
        short, long = _official_ids(name)
        assert short | long == {t.id for t in get_domain(name).tasks()}
        assert set(known_bad(name)) <= short | long, name


@pytest.mark.parametrize("name", [n for n in DOMAINS if known_bad(n)])
def test_known_bad_tasks_fail_for_tau2_too(name: str) -> None:
    domain = get_domain(name)
    official = {t.id: t for t in domain.tasks()}
    for task_id, reason in known_bad(name).items():
        assert reason.strip(), task_id
        task = official[task_id]
        assert stock_reward(name, task, gold_trajectory(domain, task)) != 1.0, task_id


def _splits() -> list[object]:
    params: list[object] = []
    for name in DOMAINS:
        for split, ids in get_domain(name).splits().items():
            long = [pytest.mark.slow] if len(ids) > LONG_SPLIT else []
            params.append(pytest.param(name, split, marks=long, id=f"{name}-{split}"))
    return params


@pytest.mark.parametrize(("name", "split"), _splits())
def test_env_verify_passes_every_split_and_names_what_it_leaves_out(name: str, split: str) -> None:
    args = ["env", "verify", "--domain", name, "--split", split, "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output[-2000:]
    summary = json.loads(result.stdout)
    in_split = set(get_domain(name).splits()[split])
    expected = {k: v for k, v in known_bad(name).items() if k in in_split}
    assert {r["task_id"]: r["reason"] for r in summary["left_out"]} == expected
    assert summary["passed"] == summary["total"] == len(in_split) - len(expected)
    if expected:  # the table says so too
        table = runner.invoke(app, args[:-1])
        assert table.exit_code == 0 and all(k in table.stdout for k in expected)


@pytest.mark.parametrize("name", SYNTHESIZING)
def test_programmatic_synthesis_verifies(name: str) -> None:
    blueprints, batch = _synthesis(name)
    assert len(blueprints) == BLUEPRINTS
    assert len(batch.verified) >= MIN_VERIFIED * BLUEPRINTS, [r.reason for r in batch.rejections]
    assert all(v.reward == 1.0 for v in batch.verified)
    # A rolled-out trajectory that fails verification is the Teacher's or Generator's bug.
    assert not [r.reason for r in batch.rejections if r.stage == "verify"]
    assert all(r.reason.strip() and "\n" not in r.reason for r in batch.rejections)


def _noteless(task: SynthTask) -> SynthTask:
    """``task`` with no gold action's ``info`` (the note exported with the τ²-bench task)."""
    criteria = task.task.evaluation_criteria
    assert criteria is not None
    actions = [a.model_copy(update={"info": None}) for a in criteria.actions or []]
    blank = criteria.model_copy(update={"actions": actions})
    return task.model_copy(
        update={"task": task.task.model_copy(update={"evaluation_criteria": blank})}
    )


@pytest.mark.parametrize("name", SYNTHESIZING)
def test_the_teacher_hears_the_generator_through_cues_not_notes(name: str) -> None:
    _, batch = _synthesis(name)
    noted = [t for t in batch.tasks if _noteless(t) != t]
    if not noted:
        pytest.skip(f"no gold action of {name}'s batch carries a note to ignore")
    teacher = domain_plugin(name).teacher()
    for task in noted:
        rollout = teacher.rollout(task, seed=5).model_dump_json()
        assert teacher.rollout(_noteless(task), seed=5).model_dump_json() == rollout, task.task_id


@pytest.mark.parametrize("name", SYNTHESIZING)
def test_requested_factor_values_are_realized(name: str) -> None:
    blueprints, batch = _synthesis(name)
    rates = {c.factor: c for c in controllability(blueprints, batch)}
    assert rates["task_family"].total > 0
    for factor, c in rates.items():
        if c.total:
            assert c.rate >= MIN_REALIZED, (factor, c)


@pytest.mark.parametrize("name", DOMAINS)
def test_contamination_guard_rejects_an_official_test_task(name: str) -> None:
    official = get_domain(name).test_tasks()[0]
    copy = official.model_copy(update={"id": "synth-copy"}, deep=True)
    assert contamination_reason(copy, name)
    if name not in SYNTHESIZING:
        return
    _, batch = _synthesis(name)
    assert batch.tasks and all(contamination_reason(t, name) is None for t in batch.tasks)


def _synth(lake: Path, name: str, campaign_id: str) -> int:
    args = ["synth", "-d", name, "-n", "3", "--seed", "2", "--campaign-id", campaign_id]
    args += ["--lake", str(lake), "--set", "agents.generator.dedup=lake"]
    return runner.invoke(app, args).exit_code


@pytest.mark.parametrize("name", SYNTHESIZING)
def test_a_second_synthesis_into_the_lake_repeats_nothing(name: str, tmp_path: Path) -> None:
    lake_root = tmp_path / "lake"
    assert _synth(lake_root, name, "first") == 0
    lake = Lake(str(lake_root))
    first = {t.task_id: t for t in lake.read(SynthTask, "first")}
    assert first
    # The same campaign again is refused and stores nothing.
    assert _synth(lake_root, name, "first") == 2
    assert len(lake.read(SynthTask, "first")) == len(first)
    # Another campaign with the same seed keeps only tasks the first did not.
    assert _synth(lake_root, name, "second") == 0
    passed = {v.task_id for v in lake.read(Verification, "first") if v.passed}
    seen = SeenTasks(name)
    for task_id in passed:
        seen.add(first[task_id].task)
    kept = {v.task_id for v in lake.read(Verification, "second") if v.passed}
    for task in lake.read(SynthTask, "second"):
        if task.task_id in kept:
            assert seen.reason(task.task) is None, task.task_id
