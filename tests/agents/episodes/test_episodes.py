"""The episode API: reset, step, τ²-bench's endings, rewards equal to the verifier's verdicts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from tau2.agent.base import BaseAgent
from tau2.data_model.message import AssistantMessage, Message, ToolCall, UserMessage
from tau2.data_model.simulation import TerminationReason
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.utils.utils import get_now

from evosyn.agents.episodes import (
    FILLER,
    Episode,
    EpisodeEnv,
    EpisodeError,
    EpisodeSettings,
    ReplayPolicy,
    ScriptedUser,
    TaskSet,
    play,
    run_episodes,
)
from evosyn.agents.episodes.users import fresh, script_of
from evosyn.agents.synthesis import SynthesisBatch
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.registry import get_domain

_KEYS = {"timestamp", "turn_idx", "cost", "usage", "raw_data"}


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as comparable dicts (no stamps, turn numbers or costs)."""
    return [m.model_dump(exclude=_KEYS) for m in messages]


class Skipping:
    """The replay policy with some script turns left out: a seeded, imperfect agent."""

    def __init__(self, skip: set[int]) -> None:
        self.skip = skip

    def __call__(self, episode: Episode) -> AssistantMessage:
        assert episode.script is not None
        kept = [t for i, t in enumerate(episode.script.agent) if i not in self.skip]
        if episode.policy_turns < len(kept):
            turn: AssistantMessage = fresh(kept[episode.policy_turns])
            return turn
        return AssistantMessage(role="assistant", content=ReplayPolicy.closing)


class SeededPolicy:
    """Per episode seed: replay (seed % 3 == 0) or skip one seeded script turn."""

    def __call__(self, episode: Episode) -> AssistantMessage:
        assert episode.script is not None
        if episode.seed % 3 == 0:
            return ReplayPolicy()(episode)
        turns = len(episode.script.agent)
        skip = {random.Random(f"{episode.task.id}/{episode.seed}").randrange(turns)}
        return Skipping(skip)(episode)


def test_reset_gives_the_system_prompt_tools_and_opening(task_sets: dict[str, TaskSet]) -> None:
    tasks = task_sets["airline"]
    env = EpisodeEnv(tasks)
    item = next(iter(tasks))
    episode = env.reset(item.task_id, seed=1)
    domain = get_domain("airline")
    assert episode.opening.system_prompt == stock_system_prompt(domain)
    assert episode.opening.tools == domain.tool_schemas("assistant")
    greeting, first = episode.opening.messages
    assert isinstance(greeting, AssistantMessage) and greeting.content == item.reference[1].content
    assert isinstance(first, UserMessage) and first.content == item.reference[2].content
    assert not episode.done
    prompt = episode.openai_messages()
    assert prompt[0] == {"role": "system", "content": episode.opening.system_prompt}
    assert [m["role"] for m in prompt[1:]] == ["assistant", "user"]


def test_step_answers_a_tool_call_with_the_tool_and_text_with_the_user(
    task_sets: dict[str, TaskSet],
) -> None:
    tasks = task_sets["airline"]
    env = EpisodeEnv(tasks)
    item = next(iter(tasks))
    episode = env.reset(item.task_id)
    ask = {"role": "assistant", "content": "What is your user id?"}
    turn = episode.step(ask)
    assert [type(m).__name__ for m in turn.messages] == ["UserMessage"]
    call = {
        "role": "assistant",
        "content": "ignored: tool calls win",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_user_details", "arguments": '{"user_id": "nobody_0"}'},
            }
        ],
    }
    turn = episode.step(call)
    (answer,) = turn.messages
    assert answer.role == "tool" and answer.id == "c1" and answer.error
    assert "nobody_0" in answer.content and not turn.done


def test_the_replay_policy_reproduces_the_verified_conversation(
    task_sets: dict[str, TaskSet],
) -> None:
    for domain, tasks in task_sets.items():
        env = EpisodeEnv(tasks)
        for item in tasks:
            outcome = play(env.reset(item.task_id, seed=0), ReplayPolicy())
            # The scripted user's filler may also be a real turn of the reference ("Okay." after
            # the agent answered a side question): compared without it on both sides.
            said = [m for m in outcome.messages if getattr(m, "content", None) != FILLER]
            meant = [m for m in item.reference if getattr(m, "content", None) != FILLER]
            assert dump(said) == dump(meant), (domain, item.task_id)
            assert outcome.termination_reason == TerminationReason.USER_STOP.value
            assert outcome.reward == 1.0 and outcome.verdict.passed, outcome.verdict.reasons


def test_a_thousand_parallel_episodes_score_as_the_verifier_and_repeat(
    task_sets: dict[str, TaskSet],
) -> None:
    jobs_by_domain: dict[str, list[tuple[str, int]]] = {}
    for domain, tasks in task_sets.items():
        ids = tasks.ids()
        jobs_by_domain[domain] = [(ids[i % len(ids)], i // len(ids)) for i in range(500)]
    rewards: list[float] = []
    for domain, jobs in jobs_by_domain.items():
        env = EpisodeEnv(task_sets[domain])
        outcomes = run_episodes(env, SeededPolicy(), jobs, workers=8)
        verifier = ReplayVerifier(domain)  # a fresh one: no state shared with the episodes
        for (task_id, seed), outcome in zip(jobs, outcomes, strict=True):
            assert (outcome.task_id, outcome.seed) == (task_id, seed)
            verdict = verifier.verify(task_sets[domain][task_id].task, outcome.messages)
            assert outcome.verdict.passed == verdict.passed, (task_id, seed)
            assert outcome.verdict.tau2_reward == verdict.reward
            assert outcome.verdict.reasons == verdict.reasons
            rewards.append(outcome.reward)
        # The same jobs again, one at a time: the same conversations and rewards.
        again = run_episodes(env, SeededPolicy(), jobs[:120], workers=1)
        for first, second in zip(outcomes, again, strict=False):
            assert dump(first.messages) == dump(second.messages)
            assert first.verdict == second.verdict
    assert len(rewards) == 1000
    # Skipped turns fail some episodes, not all: the rewards are informative.
    assert 0.3 < sum(rewards) / len(rewards) < 0.9


def test_each_episode_has_its_own_databases(task_sets: dict[str, TaskSet]) -> None:
    tasks = task_sets["airline"]
    env = EpisodeEnv(tasks)
    item = next(t for t in tasks if t.task.evaluation_criteria.actions)
    untouched = env.reset(item.task_id)
    before = untouched.environment.get_db_hash()
    played = env.reset(item.task_id)
    play(played, ReplayPolicy())
    assert played.environment.get_db_hash() != before
    assert untouched.environment.get_db_hash() == before
    assert env.reset(item.task_id).environment.get_db_hash() == before


class _ListAgent(BaseAgent):  # type: ignore[misc]
    """τ²-bench agent saying fixed turns, for running its own orchestrator alongside."""

    def __init__(self, turns: Sequence[AssistantMessage]) -> None:
        self.turns = list(turns)

    def get_init_state(self, message_history: Any = None) -> None:
        return None

    def generate_next_message(self, message: Any, state: None) -> tuple[AssistantMessage, None]:
        turn = fresh(self.turns.pop(0)) if self.turns else _text("Anything else?")
        return turn.model_copy(update={"timestamp": get_now()}), state

    def set_seed(self, seed: int) -> None:
        pass

    def stop(self, message: Any = None, state: Any = None) -> None:
        pass


def _text(content: str) -> AssistantMessage:
    return AssistantMessage(role="assistant", content=content)


def _bad_call(index: int) -> AssistantMessage:
    call = ToolCall(id=f"bad{index}", name="no_such_tool", arguments={}, requestor="assistant")
    return AssistantMessage(role="assistant", tool_calls=[call])


@pytest.mark.parametrize(
    ("case", "settings"),
    [
        ("replay", EpisodeSettings()),
        ("replay", EpisodeSettings(max_steps=7)),
        ("chatter", EpisodeSettings(max_steps=9)),
        ("errors", EpisodeSettings(max_errors=3)),
        ("errors", EpisodeSettings(max_steps=4, max_errors=3)),
    ],
)
def test_episodes_end_where_tau2s_orchestrator_ends_them(
    task_sets: dict[str, TaskSet], case: str, settings: EpisodeSettings
) -> None:
    tasks = task_sets["telecom"]
    env = EpisodeEnv(tasks, settings=settings)
    for item in list(tasks)[:6]:
        script = script_of(item, "telecom", 0)
        turns = {
            "replay": list(script.agent),
            "chatter": [_text(f"Let me think ({i}).") for i in range(20)],
            "errors": [_bad_call(i) for i in range(20)],
        }[case]
        domain = get_domain("telecom")
        orchestrator = Orchestrator(
            domain="telecom",
            agent=_ListAgent(turns),
            user=ScriptedUser(script.user),
            environment=domain.blank_state().env,
            task=item.task,
            max_steps=settings.max_steps,
            max_errors=settings.max_errors,
            seed=0,
        )
        run = orchestrator.run()
        episode = env.reset(item.task_id, seed=0)
        queue = list(turns)
        while not episode.done:
            episode.step(queue.pop(0) if queue else _text("Anything else?"))
        outcome = episode.outcome
        assert outcome is not None
        assert outcome.termination_reason == run.termination_reason.value
        assert dump(outcome.messages[1:]) == dump(run.messages)
        if run.termination_reason not in (
            TerminationReason.USER_STOP,
            TerminationReason.AGENT_STOP,
        ):
            assert outcome.reward == 0.0
            assert outcome.verdict.reasons == [f"terminated: {run.termination_reason.value}"]


def test_an_empty_turn_is_an_agent_error_and_the_episode_is_over(
    task_sets: dict[str, TaskSet],
) -> None:
    env = EpisodeEnv(task_sets["airline"])
    episode = env.reset(task_sets["airline"].ids()[0])
    turn = episode.step({"role": "assistant", "content": ""})
    assert turn.done and turn.outcome is not None
    assert turn.outcome.termination_reason == TerminationReason.AGENT_ERROR.value
    assert turn.outcome.reward == 0.0
    with pytest.raises(EpisodeError):
        episode.step(_text("hello?"))


def test_tasks_without_a_stored_conversation_get_the_teachers_script(
    task_sets: dict[str, TaskSet],
) -> None:
    stored = task_sets["telecom"]
    bare = TaskSet("telecom", (t.model_copy(update={"reference": None}) for t in stored))
    env = EpisodeEnv(bare)
    outcomes = run_episodes(env, ReplayPolicy(), [(i, 3) for i in bare.ids()[:10]], workers=4)
    again = run_episodes(env, ReplayPolicy(), [(i, 3) for i in bare.ids()[:10]], workers=1)
    assert [dump(o.messages) for o in outcomes] == [dump(o.messages) for o in again]
    # The Teacher's conversation solves the task wherever the stored one did.
    assert all(o.reward == 1.0 for o in outcomes), [o.verdict.reasons for o in outcomes]


def test_a_task_set_from_the_lake_and_from_a_tau2_export(
    batches: dict[str, SynthesisBatch], tmp_path: Any
) -> None:
    from evosyn.export.tau2 import export_tau2
    from evosyn.records import Campaign
    from evosyn.storage import Lake

    batch = batches["airline"]
    lake = Lake(tmp_path / "lake")
    cid = batch.tasks[0].campaign_id
    lake.write(
        [Campaign(campaign_id=cid, round=0, name="ep", domain="airline", seed=5, config={})], "c"
    )
    lake.write(batch.tasks, "t")
    lake.write(batch.trajectories, "tr")
    lake.write(batch.verifications, "v")
    from_lake = TaskSet.from_lake(lake, cid, up_to=1)
    passed = {v.task_id for v in batch.verifications if v.passed}
    assert set(from_lake.ids()) == passed
    assert all(item.reference for item in from_lake)
    assert len(TaskSet.from_lake(lake, cid, round=1)) == len(passed)
    with pytest.raises(ValueError, match="round 2"):
        TaskSet.from_lake(lake, cid, round=2)

    export_tau2(lake, cid, tmp_path / "t2")
    exported = TaskSet.from_tau2_export(tmp_path / "t2")
    assert len(exported) == len(passed) and exported.domain == "airline"
    assert all(item.reference is None for item in exported)
    outcome = play(EpisodeEnv(exported).reset(exported.ids()[0], seed=2), ReplayPolicy())
    assert outcome.reward == 1.0, outcome.verdict.reasons
