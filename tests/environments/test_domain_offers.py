"""What every registered domain offers, checked for what it offers: a new domain is tested
unedited.

Every domain offers its environment: tools whose schemas a model can call, a database model that
forbids unknown fields and loads to the same hash, a policy, and official tasks whose gold
replays to reward 1 under EvoSyn's verifier and under τ²-bench's own evaluator (the domain's
declared known-bad tasks aside), and a copy of one of its official test tasks is caught as
contamination. Its optional capabilities are checked where it registers them: choice
parameters that name real tool arguments, rule sentences that state only real check ids, a
programmatic Generator and Teacher that build, and, where it registers none, the one-line
error naming the domain and the setting to use instead.
"""

from __future__ import annotations

import functools

import pytest
from tau2.environment.db import DB

from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.cli import known_bad
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.contamination import contamination_reason
from evosyn.environments.registry import MissingCapability, domain_plugin, list_domains
from evosyn.environments.trajectories import gold_trajectory

DOMAINS = list_domains()
#: Splits larger than this are replayed only under ``slow`` (telecom's ``full``: 2,285 tasks).
LONG_SPLIT = 500
#: Domains with more official tasks than this are checked by τ²-bench's evaluator (seconds a
#: task in airline and retail) only under ``slow``.
QUICK_STOCK = 20


@functools.cache
def _ids(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Ids of the official tasks in splits of at most ``LONG_SPLIT`` tasks, and of the rest."""
    domain = get_domain(name)
    short = {i for ids in domain.splits().values() if len(ids) <= LONG_SPLIT for i in ids}
    rest = {t.id for t in domain.tasks()} - short
    return tuple(sorted(short)), tuple(sorted(rest))


def _replays() -> list[object]:
    params: list[object] = []
    for name in DOMAINS:
        short, rest = _ids(name)
        params.append(pytest.param(name, "replay", short, id=f"{name}-replay"))
        if rest:
            params.append(
                pytest.param(name, "replay", rest, marks=pytest.mark.slow, id=f"{name}-replay-long")
            )
        slow = [pytest.mark.slow] if len(short) + len(rest) > QUICK_STOCK else []
        params.append(pytest.param(name, "tau2", short, marks=slow, id=f"{name}-tau2"))
    return params


@pytest.mark.parametrize("name", DOMAINS)
def test_tools_have_schemas_a_model_can_call(name: str) -> None:
    domain = get_domain(name)
    specs = domain.tool_specs("assistant")
    assert specs and any(s.symbol == FunctionalSymbol.WRITE for s in specs)
    for spec in domain.tool_specs():
        function = spec.openai_schema["function"]
        assert function["name"] == spec.name and function["description"].strip(), spec.name
        assert spec.required <= spec.properties, spec.name
    for task in domain.tasks():
        for action in task.evaluation_criteria.actions or [] if task.evaluation_criteria else []:
            assert domain.tool_spec(action.name, action.requestor), (task.id, action.name)


@pytest.mark.parametrize("name", DOMAINS)
def test_the_database_forbids_unknown_fields_and_reloads_to_its_hash(name: str) -> None:
    db = get_domain(name).blank_state().db
    assert isinstance(db, DB)
    assert type(db).model_config.get("extra") == "forbid"
    assert type(db).model_validate(db.model_dump()).get_hash() == db.get_hash()


@pytest.mark.parametrize("name", DOMAINS)
def test_the_policy_is_the_environments_own(name: str) -> None:
    policy = get_domain(name).policy()
    assert len(policy) > 200
    assert domain_plugin(name).stock_environment().get_policy() == policy


@pytest.mark.parametrize(("name", "judge", "ids"), _replays())
def test_every_official_gold_replays_to_reward_1(name: str, judge: str, ids: tuple[str]) -> None:
    domain = get_domain(name)
    bad = known_bad(name)
    verifier = ReplayVerifier(domain)
    failed: dict[str, object] = {}
    for task_id in ids:
        task = domain.task(task_id)
        messages = gold_trajectory(domain, task)
        if judge == "tau2":
            reward: object = stock_reward(name, task, messages)
        else:
            report = verifier.report(task, messages)
            reward = report.reward if not report.policy_violations else report.policy_violations
        if reward != 1.0:
            failed[task_id] = reward
    # Exactly the declared known-bad tasks fail.
    assert set(failed) == {i for i in bad if i in ids}, failed


@pytest.mark.parametrize("name", DOMAINS)
def test_a_copy_of_an_official_test_task_is_contamination(name: str) -> None:
    official = get_domain(name).test_tasks()[0]
    copy = official.model_copy(update={"id": "synth-copy"}, deep=True)
    assert contamination_reason(copy, name)


@pytest.mark.parametrize("name", DOMAINS)
def test_the_choice_parameters_name_real_arguments(name: str) -> None:
    plugin, domain = domain_plugin(name), get_domain(name)
    if plugin.flow is None:
        pytest.skip(f"{name} declares no choice parameters")
    for choice in plugin.flow.choices:
        spec = domain.tool_spec(choice.tool)
        assert spec is not None, choice.tool
        head = choice.argument.split(".")[0].removesuffix("[]")
        assert head in spec.properties, (choice.tool, choice.argument)
    for tool in plugin.flow.priced_writes:
        assert domain.symbol(tool) == FunctionalSymbol.WRITE, tool


@pytest.mark.parametrize("name", DOMAINS)
def test_rule_sentences_state_only_rules_the_domain_checks(name: str) -> None:
    plugin = domain_plugin(name)
    for rule in plugin.rules():
        assert rule.text.strip() and set(rule.ids) <= set(plugin.checks.ids), rule.text
    if not plugin.offers("checks"):
        assert plugin.infeasible({}) is None and plugin.checks.conflicts({}) == []


@pytest.mark.parametrize("name", DOMAINS)
@pytest.mark.parametrize("capability", ["generator", "teacher"])
def test_a_programmatic_role_builds_or_says_what_to_set_instead(name: str, capability: str) -> None:
    plugin = domain_plugin(name)
    build = getattr(plugin, capability)
    if plugin.offers(capability):
        built = build()
        assert callable(getattr(built, "generate" if capability == "generator" else "rollout"))
        assert plugin.lacking(capability) is None
        return
    with pytest.raises(MissingCapability) as info:
        build()
    message = str(info.value)
    assert message == plugin.lacking(capability) and "\n" not in message
    assert f"domain {name!r}" in message and f"agents.{capability}.kind: llm" in message
