"""Retail task shapes: the write combinations of τ²-bench's official tasks, made and verified.

A caller with several requests makes them on several orders (cancel one, return from another),
on one pending order (its address changed before its items) or on the default address; every
such task verifies with reward 1 and passes the gates. The feasibility rule counts the reads
the Generator must make (the profile a caller without order ids needs, a second order or
product), so every blueprint it admits is generated.
"""

from __future__ import annotations

import functools

import pytest
from synthesis_checks import exploration, hand_blueprint, promoted_space, verified_rollout
from tau2.data_model.message import AssistantMessage, UserMessage
from tau2.data_model.tasks import Task

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import gate_breaks
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.information_flow import repeat_breaks
from evosyn.environments.kit.dialogue import first_person
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.registry import domain_plugin
from evosyn.environments.retail.flow import RULES
from evosyn.environments.retail.generator import RetailGenerator, infeasible
from evosyn.environments.retail.intents import _options, _told_apart
from evosyn.environments.retail.teacher import RetailTeacher
from evosyn.records import SynthTask
from evosyn.space import seed_space

CANCEL = "cancel_pending_order"
ADDRESS = "modify_pending_order_address"
ITEMS = "modify_pending_order_items"
RETURN = "return_delivered_order_items"
EXCHANGE = "exchange_delivered_order_items"
PROFILE = "modify_user_address"
SHORT = {
    CANCEL: "cancel",
    ADDRESS: "address",
    ITEMS: "items",
    RETURN: "return",
    EXCHANGE: "exchange",
    PROFILE: "profile",
}
#: Seeds tried for a blueprint before a shape counts as never made.
SEEDS = 60

#: Official write combinations with several kinds of write: (family, num_write, tools).
SHAPES = [
    ("return_delivered_order", "2", {CANCEL, RETURN}),
    ("exchange_delivered_order", "2", {EXCHANGE, RETURN}),
    ("exchange_delivered_order", "2", {CANCEL, EXCHANGE}),
    ("exchange_delivered_order", "2", {EXCHANGE, ITEMS}),
    ("return_delivered_order", "2", {ITEMS, RETURN}),
    ("order_item_modification", "2", {CANCEL, ITEMS}),
    ("order_item_modification", "2", {ADDRESS, ITEMS}),
    ("order_cancellation", "2", {CANCEL, ADDRESS}),
    ("order_item_modification", "3-4", {CANCEL, ADDRESS, ITEMS}),
    ("exchange_delivered_order", "3-4", {EXCHANGE, ADDRESS, ITEMS}),
    ("order_item_modification", "3-4", {ADDRESS, ITEMS, PROFILE}),
    ("return_delivered_order", "3-4", {ADDRESS, ITEMS, RETURN}),
]


@pytest.fixture(scope="module")
def generator() -> RetailGenerator:
    return RetailGenerator()


@pytest.fixture(scope="module")
def teacher() -> RetailTeacher:
    return RetailTeacher()


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("retail")


def _writes(task: SynthTask) -> list[tuple[str, dict[str, object]]]:
    """(tool, arguments) of every gold write, in order."""
    domain = get_domain("retail")
    actions = task.task.evaluation_criteria.actions or []
    return [
        (a.name, a.arguments) for a in actions if domain.symbol(a.name) == FunctionalSymbol.WRITE
    ]


def _made(
    generator: RetailGenerator, family: str, writes: str, tools: set[str], *, same_order: bool
) -> SynthTask:
    """The first task of a hard ``family`` blueprint whose gold writes with exactly ``tools``.

    ``same_order``: its address and items change act on one order (else on several).
    """
    bp = hand_blueprint(
        family,
        "fulfill",
        focus=["order_status_precondition"],
        patterns=["authenticate_then_act"],
        controls={"num_write": writes},
        difficulty="hard",
        blueprint_id=f"bp-shape-{family}-{writes}",
    )
    for seed in range(SEEDS):
        task = generator.generate(bp, seed)
        made = _writes(task)
        orders = {str(args.get("order_id")) for _, args in made if "order_id" in args}
        if {name for name, _ in made} == tools and (len(orders) == 1) == same_order:
            return task
    raise AssertionError(f"{sorted(tools)} never made for {family} in {SEEDS} seeds")


@pytest.mark.parametrize(
    ("family", "writes", "tools"),
    SHAPES,
    ids=["+".join(sorted(SHORT[t] for t in tools)) for _, _, tools in SHAPES],
)
def test_official_write_combinations_are_made_and_verify(
    family: str,
    writes: str,
    tools: set[str],
    generator: RetailGenerator,
    teacher: RetailTeacher,
    verifier: ReplayVerifier,
) -> None:
    task = _made(generator, family, writes, tools, same_order=False)
    verdict, messages = verified_rollout(task, teacher, verifier)
    loaded = Task.model_validate_json(task.task.model_dump_json())
    assert stock_reward("retail", loaded, messages) == 1.0
    assert gate_breaks("retail", messages) == []
    assert verdict.realized["task_family"] == family
    # The caller voices each further request once the agent has made the first write.
    first_write = next(
        i
        for i, m in enumerate(messages)
        if isinstance(m, AssistantMessage) and m.tool_calls and m.tool_calls[0].name in tools
    )
    later = " ".join(m.content or "" for m in messages[first_write:] if isinstance(m, UserMessage))
    assert task.cues
    assert all(first_person(cue) in later for cue in task.cues.values()), task.cues


def test_an_orders_address_changes_before_its_items_in_the_opening_request(
    generator: RetailGenerator, teacher: RetailTeacher, verifier: ReplayVerifier
) -> None:
    task = _made(generator, "order_item_modification", "2", {ADDRESS, ITEMS}, same_order=True)
    names = [name for name, _ in _writes(task)]
    # An item change ends further changes of the order: the address goes first.
    assert names == [ADDRESS, ITEMS]
    address = _writes(task)[0][1]
    reason = task.task.user_scenario.instructions.reason_for_call
    assert str(address["address1"]) in reason and "change" in reason
    assert not task.cues  # both are asked for at once
    _, messages = verified_rollout(task, teacher, verifier)
    assert gate_breaks("retail", messages) == []


def test_a_payment_method_the_order_does_not_show_is_read_in_the_profile(
    generator: RetailGenerator,
) -> None:
    bp = hand_blueprint(
        "return_delivered_order",
        "fulfill",
        focus=["payment_or_giftcard_balance"],
        patterns=["authenticate_then_act"],
        controls={"num_write": "1"},
        difficulty="hard",
    )
    checked = 0
    for seed in range(SEEDS):
        task = generator.generate(bp, seed)
        actions = task.task.evaluation_criteria.actions or []
        write = next(a for a in actions if a.name == RETURN)
        order = generator.db.orders[write.arguments["order_id"]]
        if write.arguments["payment_method_id"] == order.payment_history[0].payment_method_id:
            continue
        # A refund to a gift card: only the profile shows its id, so it is read first.
        names = [a.name for a in actions]
        assert "get_user_details" in names[: names.index(RETURN)]
        checked += 1
    assert checked


@functools.cache
def _planned(promoted: bool, seed: int, count: int) -> list[object]:
    plugin = domain_plugin("retail")
    space = promoted_space("retail") if promoted else seed_space("retail", "ctl")
    return list(ProgrammaticPlanner(plugin.infeasible).plan(space, exploration(space, count), seed))


@pytest.mark.parametrize("promoted", [False, True])
def test_every_blueprint_the_rule_admits_is_generated(
    promoted: bool, generator: RetailGenerator
) -> None:
    # Before the rule counted the profile read (missing_information, a proposal) and a second
    # order's or product's read (multi_entity_retrieval), 13 and 8 of these failed to fit.
    failed = []
    for bp in _planned(promoted, 31, 150):
        try:
            generator.generate(bp, 31)  # type: ignore[arg-type]
        except GeneratorRejection as exc:
            failed.append(str(exc))
    assert failed == []


@pytest.mark.parametrize(
    ("selections", "needle"),
    [
        # The caller, the profile (where their order ids are) and the order.
        (
            {"interaction_challenge": ["missing_information"], "num_read": ["2"]},
            "num_read=2",
        ),
        # A refusal reads the caller and one order: a second order needs the profile too.
        (
            {
                "expected_outcome": ["refuse"],
                "tool_use_pattern": ["multi_entity_retrieval"],
                "difficulty_profile": ["easy"],
            },
            "difficulty_profile=easy",
        ),
    ],
)
def test_the_rule_counts_the_reads_the_task_must_make(
    selections: dict[str, list[str]], needle: str
) -> None:
    base = {"task_family": ["order_cancellation"], "expected_outcome": ["fulfill"]}
    reason = infeasible(base | selections)
    assert reason is not None and needle in reason


def test_options_are_worded_so_the_caller_tells_each_item_apart(
    generator: RetailGenerator,
) -> None:
    boots = next(p for p in generator.db.products.values() if p.name == "Hiking Boots")
    dry = next(v for v in boots.variants.values() if v.options.get("waterproof") == "no")
    assert "not waterproof" in _options(dry) and "waterproof no" not in _options(dry)
    shades = next(p for p in generator.db.products.values() if p.name == "Sunglasses")
    # "brown, brown, polarized, plastic": every value is also another variant's.
    assert not _told_apart(generator.db, shades.product_id, "9672174103")
    assert _told_apart(generator.db, boots.product_id, dry.item_id)


def test_an_order_named_by_items_another_order_also_has_is_not_named_so(
    generator: RetailGenerator,
) -> None:
    # The one bookshelf of #W9336725 is in #W5777276 too: "the order with the bookshelf"
    # names neither.
    assert not generator._told_by_items("#W9336725")
    assert generator._told_by_items("#W5777276")


def test_a_zipper_is_no_zip_code() -> None:
    messages = [
        UserMessage(
            role="user",
            content="I want the fleece jacket with a half zipper, shipped to 12 Elm St, "
            "Austin, TX 78701.",
        ),
        AssistantMessage(role="assistant", content="Could you give me your name and zip code?"),
    ]
    assert repeat_breaks(RULES, messages) == []
    said = UserMessage(role="user", content="My zip code is 78701.")
    assert repeat_breaks(RULES, [said, messages[1]]) != []
