"""The replay verifier agrees with τ²-bench's own evaluators, on gold and perturbed trajectories."""

from __future__ import annotations

import pytest
from tau2.data_model.message import AssistantMessage, Message, ToolCall, ToolMessage
from tau2.data_model.tasks import Action, RewardType, Task
from tau2.utils import get_dict_hash

from evosyn.agents.verifier import VERIFIERS, ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.config import CampaignConfig, ConfigError
from evosyn.environments import FunctionalSymbol, Tau2Domain, get_domain
from evosyn.environments.trajectories import gold_trajectory, trajectory_from_actions

pytestmark = pytest.mark.heavy

# A handful of tasks per domain keeps the stock evaluator (~1 s per airline call) affordable.
TASKS_PER_DOMAIN = {"airline": 2, "retail": 3, "telecom": 3}


def _writes(domain: Tau2Domain, actions: list[Action]) -> list[int]:
    return [
        i
        for i, a in enumerate(actions)
        if domain.tool_spec(a.name, a.requestor) is not None
        and domain.symbol(a.name, a.requestor) == FunctionalSymbol.WRITE
    ]


def _pick_tasks(domain: Tau2Domain, count: int) -> list[Task]:
    chosen = []
    for task in domain.tasks("base"):
        actions = task.evaluation_criteria.actions or []
        if len(_writes(domain, actions)) >= 2:
            chosen.append(task)
        if len(chosen) == count:
            break
    assert len(chosen) == count
    return chosen


def _changed(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list) and value:
        return value[:-1]
    return "changed"


def perturbations(domain: Tau2Domain, task: Task, stray: Action) -> dict[str, list[Message]]:
    """Gold trajectory of ``task`` and five perturbations of it (observations re-executed)."""
    actions = list(task.evaluation_criteria.actions or [])
    writes = _writes(domain, actions)
    first, second = writes[0], writes[1]
    out: dict[str, list[Message]] = {"gold": gold_trajectory(domain, task)}

    out["drop_write"] = trajectory_from_actions(
        domain, task, [a for i, a in enumerate(actions) if i != first]
    )

    changed = actions[first]
    if changed.arguments:
        key = sorted(changed.arguments)[0]
        arguments = dict(changed.arguments)
        arguments[key] = _changed(arguments[key])
        changed = changed.model_copy(update={"arguments": arguments})
    out["change_argument"] = trajectory_from_actions(
        domain, task, [changed if i == first else a for i, a in enumerate(actions)]
    )

    swapped = list(actions)
    swapped[first], swapped[second] = swapped[second], swapped[first]
    out["swap_writes"] = trajectory_from_actions(domain, task, swapped)

    out["stray_write"] = trajectory_from_actions(domain, task, [*actions, stray])

    out["no_final_message"] = out["gold"][:-1]

    tampered = list(out["gold"])
    for i, message in enumerate(tampered):
        if isinstance(message, ToolMessage):
            tampered[i] = message.model_copy(update={"content": '"tampered observation"'})
            break
    out["tampered_observation"] = tampered
    return out


def _stray_write(domain: Tau2Domain, task: Task) -> Action:
    """The first write of another task: a plausible but unrequested state change."""
    for other in domain.tasks("base"):
        if other.id == task.id:
            continue
        actions = other.evaluation_criteria.actions or []
        for index in _writes(domain, actions):
            return actions[index]
    raise AssertionError("no other task with a write")


@pytest.mark.parametrize("domain_name", sorted(TASKS_PER_DOMAIN))
def test_verdict_equals_tau2_on_perturbed_gold(domain_name: str) -> None:
    domain = get_domain(domain_name)
    verifier = ReplayVerifier(domain)
    failures_seen = 0
    for task in _pick_tasks(domain, TASKS_PER_DOMAIN[domain_name]):
        for kind, messages in perturbations(domain, task, _stray_write(domain, task)).items():
            ours = verifier.verify(task, messages)
            stock = stock_reward(domain_name, task, messages)
            assert ours.passed == (stock == 1.0), (domain_name, task.id, kind, ours.reasons)
            if kind == "gold":
                assert ours.passed and ours.reward == 1.0, ours.reasons
            if not ours.passed:
                failures_seen += 1
                assert ours.reasons, kind
    # The perturbations must actually break tasks, or the test would prove nothing.
    assert failures_seen >= TASKS_PER_DOMAIN[domain_name] * 2


@pytest.mark.parametrize("domain_name", ["airline", "retail", "telecom"])
def test_every_base_gold_trajectory_passes(domain_name: str) -> None:
    domain = get_domain(domain_name)
    verifier = ReplayVerifier(domain_name)
    failed = {}
    for task in domain.tasks("base"):
        result = verifier.verify(task, gold_trajectory(domain, task))
        if not result.passed:
            failed[task.id] = result.reasons
    assert not failed


@pytest.mark.parametrize("domain_name", ["airline", "retail"])
def test_replays_leave_the_shared_database_untouched(domain_name: str) -> None:
    domain = get_domain(domain_name)
    verifier = ReplayVerifier(domain)
    base_db = domain._bases[0].db
    before = get_dict_hash(base_db.model_dump())
    for task in _pick_tasks(domain, 3):
        for messages in perturbations(domain, task, _stray_write(domain, task)).values():
            verifier.verify(task, messages)
    assert get_dict_hash(base_db.model_dump()) == before
    fresh = type(base_db).model_validate(base_db.model_dump())
    assert get_dict_hash(fresh.model_dump()) == before


def _retail_task() -> tuple[Tau2Domain, Task]:
    domain = get_domain("retail")
    return domain, _pick_tasks(domain, 1)[0]


def test_tool_call_issues_warn_by_default_and_fail_when_strict() -> None:
    domain, task = _retail_task()
    gold = gold_trajectory(domain, task)
    bogus = ToolCall(id="x1", name="get_user_details", arguments={"user": "nobody"})
    unknown = ToolCall(id="x2", name="teleport_package", arguments={})
    extra = [
        AssistantMessage(role="assistant", tool_calls=[bogus]),
        domain.initial_state(task).execute(bogus),
        AssistantMessage(role="assistant", tool_calls=[unknown]),
        domain.initial_state(task).execute(unknown),
    ]
    messages = [*extra, *gold]
    assert stock_reward("retail", task, messages) == 1.0
    lenient = ReplayVerifier(domain).verify(task, messages)
    assert lenient.passed
    joined = "\n".join(lenient.warnings)
    assert "missing arguments ['user_id']" in joined
    assert "unexpected arguments ['user']" in joined
    assert "unknown assistant tool" in joined
    assert "errored" in joined
    assert lenient.reasons == []
    strict = ReplayVerifier(domain, strict=True).verify(task, messages)
    assert not strict.passed
    assert strict.reward == 1.0


def test_malformed_trajectory_fails_like_tau2_crashes() -> None:
    domain, task = _retail_task()
    gold = gold_trajectory(domain, task)
    orphan = [gold[1], *gold]  # a tool message before any call
    assert stock_reward("retail", task, orphan) is None
    result = ReplayVerifier(domain).verify(task, orphan)
    assert not result.passed
    assert any(r.startswith("replay:") for r in result.reasons)


def test_record_fields_and_registry() -> None:
    domain, task = _retail_task()
    cfg = CampaignConfig.model_validate({"campaign": {"domain": "retail"}})
    verifier = VERIFIERS.build("programmatic", cfg)
    assert isinstance(verifier, ReplayVerifier) and verifier.domain.name == "retail"
    result = verifier.verify(
        task, gold_trajectory(domain, task), campaign_id="c1", round=2, trajectory_id="t-1"
    )
    assert (result.campaign_id, result.round, result.trajectory_id) == ("c1", 2, "t-1")
    assert result.task_id == task.id
    assert result.realized["num_write"] in {"2", "3-4", "5+"}
    assert result.seconds > 0
    with pytest.raises(ConfigError, match=r"agents\.verifier\.kind: unknown implementation 'nope'"):
        VERIFIERS.build("nope", cfg)


def test_nl_assertions_in_basis_are_unchecked() -> None:
    domain = get_domain("airline")
    task = domain.tasks("base")[0]
    criteria = task.evaluation_criteria.model_copy(
        update={"reward_basis": [*task.evaluation_criteria.reward_basis, RewardType.NL_ASSERTION]}
    )
    nl_task = task.model_copy(update={"evaluation_criteria": criteria})
    result = ReplayVerifier(domain).verify(nl_task, gold_trajectory(domain, task))
    assert result.passed
    assert result.unchecked and all(u.startswith("nl_assertion: ") for u in result.unchecked)


@pytest.mark.slow
@pytest.mark.parametrize("domain_name", ["airline", "retail", "telecom"])
def test_full_base_split_agrees_with_tau2(domain_name: str) -> None:
    domain = get_domain(domain_name)
    verifier = ReplayVerifier(domain)
    for task in domain.tasks("base"):
        messages = gold_trajectory(domain, task)
        ours = verifier.verify(task, messages)
        assert ours.passed == (stock_reward(domain_name, task, messages) == 1.0), task.id
        no_final = messages[:-1]
        assert verifier.verify(task, no_final).passed == (
            stock_reward(domain_name, task, no_final) == 1.0
        ), task.id


@pytest.mark.parametrize("domain_name", ["airline", "telecom"])
def test_realized_includes_the_candidate_factors_read_from_gold(domain_name: str) -> None:
    from evosyn.environments.features import factor_values
    from evosyn.environments.shapes import shape_values
    from evosyn.environments.telecom.faults import fault_kinds

    domain = get_domain(domain_name)
    verifier = ReplayVerifier(domain)
    tasks = domain.tasks("base")
    # A booking shows trip_shape and payment_split; a telecom task shows its faults.
    task = next(
        t
        for t in tasks
        if domain_name == "telecom"
        or any(a.name == "book_reservation" for a in t.evaluation_criteria.actions or [])
    )
    result = verifier.verify(task, gold_trajectory(domain, task), campaign_id="c", round=0)
    shapes = shape_values(domain_name, task)
    expected = {"telecom": {"fault_kinds"}, "airline": {"write_mix", "trip_shape", "payment_split"}}
    assert shapes.keys() == expected[domain_name]
    assert result.realized.items() >= shapes.items()
    assert result.realized["num_write"]  # the replay's own features stay
    if domain_name == "telecom":
        assert fault_kinds(task)
        assert factor_values(result.realized, "fault_kind") == tuple(fault_kinds(task))


def test_controllability_counts_the_candidate_factors() -> None:
    # A request for write_mix or fault_kind is measured against the value read from the gold.
    from evosyn.agents.synthesis import SynthesisBatch, controllability
    from evosyn.environments.shapes import shape_values
    from evosyn.environments.telecom.faults import fault_kinds
    from evosyn.records import Blueprint, SynthTask

    def measured(domain_name: str, task: Task, factor: str, values: list[str]) -> list[int]:
        domain = get_domain(domain_name)
        verdicts, blueprints, synths = [], [], []
        for i, value in enumerate(values):
            made = task.model_copy(update={"id": f"t{i}"})
            blueprints.append(
                Blueprint(
                    campaign_id="c",
                    round=1,
                    blueprint_id=f"bp{i}",
                    direction_id="d",
                    space_version=1,
                    selections={factor: [value]},
                    intent="",
                )
            )
            synths.append(
                SynthTask(
                    campaign_id="c",
                    round=1,
                    task_id=made.id,
                    blueprint_id=f"bp{i}",
                    domain=domain_name,
                    task=made,
                )
            )
            verdicts.append(
                ReplayVerifier(domain).verify(
                    made, gold_trajectory(domain, made), campaign_id="c", round=1
                )
            )
        batch = SynthesisBatch(tasks=synths, verifications=verdicts)
        [row] = [c for c in controllability(blueprints, batch) if c.factor == factor]
        return [row.matched, row.total]

    telecom = next(t for t in get_domain("telecom").tasks("base") if fault_kinds(t))
    kind = fault_kinds(telecom)[0]
    assert measured("telecom", telecom, "fault_kind", [kind, "no_such_kind"]) == [1, 2]
    airline = get_domain("airline").tasks("base")[0]
    mix = shape_values("airline", airline)["write_mix"]
    other = "several_kinds" if mix != "several_kinds" else "no_write"
    assert measured("airline", airline, "write_mix", [mix, other]) == [1, 2]
