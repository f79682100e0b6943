"""Episodes in chat format: the learner's view, whose each message is, and exported references."""

from __future__ import annotations

import pytest
from tau2.data_model.message import AssistantMessage, SystemMessage, ToolMessage, UserMessage

from evosyn.agents.episodes import EpisodeEnv, EpisodeError, TaskSet
from evosyn.agents.episodes.chat import (
    ChatEpisode,
    EpisodeRef,
    chat_messages,
    reference_sources,
    source_of,
)
from evosyn.agents.episodes.users import split_turns
from evosyn.agents.learner.export import learner_view
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.registry import get_domain


def _replay(chat: ChatEpisode, turns: list[AssistantMessage]) -> list[list[str]]:
    """Step the script's agent turns (as OpenAI messages); the sources heard after each."""
    heard = []
    for turn in chat_messages(turns):
        result = chat.step(turn)
        heard.append(result.sources)
        assert [source_of(m) for m in result.messages] == result.sources
        if result.done:
            break
    return heard


def test_the_prompt_is_the_learners_view_and_a_replay_scores_one(
    task_sets: dict[str, TaskSet],
) -> None:
    for domain, tasks in task_sets.items():
        env = EpisodeEnv(tasks)
        for item in list(tasks)[:6]:
            chat = ChatEpisode(env, item, seed=0)
            assert item.reference is not None
            # The stock system prompt, then the user's first line: the greeting is left out.
            view = chat_messages(learner_view(item.reference))
            assert chat.prompt == [
                {"role": "system", "content": stock_system_prompt(get_domain(domain))},
                view[0],
            ]
            assert chat.tools == get_domain(domain).tool_schemas("assistant")
            heard = _replay(chat, list(split_turns(item.task, item.reference).agent))
            assert chat.done and chat.verdict is not None and chat.verdict.reward == 1.0
            assert chat.termination_reason == "user_stop"
            # After a tool call the policy hears observations; after text, the user.
            assert all(set(s) <= {"observation"} or set(s) <= {"user"} for s in heard)
            assert any("observation" in s for s in heard) and any("user" in s for s in heard)
            with pytest.raises(EpisodeError, match="has ended"):
                chat.step({"role": "assistant", "content": "Anything else?"})


def test_every_message_has_a_source_and_the_users_own_tools_are_the_users() -> None:
    assert source_of(SystemMessage(role="system", content="p")) == "system"
    assert source_of(AssistantMessage(role="assistant", content="hi")) == "policy"
    assert source_of(UserMessage(role="user", content="hi")) == "user"
    mine = ToolMessage(id="a", role="tool", content="{}", requestor="assistant")
    theirs = ToolMessage(id="b", role="tool", content="{}", requestor="user")
    assert (source_of(mine), source_of(theirs)) == ("observation", "user")
    assert [source_of({"role": r}) for r in ("system", "assistant", "tool", "user")] == [
        "system",
        "policy",
        "observation",
        "user",
    ]
    with pytest.raises(ValueError, match="role 'developer' has no source"):
        source_of({"role": "developer"})


def test_a_references_greeting_is_the_orchestrators_not_the_policys(
    task_sets: dict[str, TaskSet],
) -> None:
    for item in task_sets["airline"]:
        assert item.reference is not None
        sources = reference_sources(item.task, item.reference)
        system, greeting, first = item.reference[:3]
        assert (system.role, greeting.role, first.role) == ("system", "assistant", "user")
        assert sources[:3] == ["system", "system", "user"]
        later = [
            s for m, s in zip(item.reference[3:], sources[3:], strict=True) if m.role == "assistant"
        ]
        assert set(later) == {"policy"}


def test_telecom_references_label_the_users_device_traffic_as_the_users(
    task_sets: dict[str, TaskSet],
) -> None:
    labelled = 0
    for item in task_sets["telecom"]:
        ref = EpisodeRef.of(item, "telecom", "train", seed=0)
        assert item.reference is not None and len(ref.reference_sources) == len(item.reference)
        for message, source in zip(item.reference, ref.reference_sources, strict=True):
            if isinstance(message, ToolMessage) and message.requestor == "user":
                assert source == "user"
                labelled += 1
            if isinstance(message, UserMessage) and message.tool_calls:
                assert source == "user"
    assert labelled > 0  # the telecom user acts on its phone in these tasks


def test_a_reference_travels_as_columns_and_rebuilds_its_episode(
    task_sets: dict[str, TaskSet],
) -> None:
    tasks = task_sets["airline"]
    item = next(iter(tasks))
    ref = EpisodeRef.of(item, "airline", "diagnostic", seed=7)
    columns = ref.columns(item.task)
    assert all(isinstance(columns[k], str) for k in ("task", "reference"))
    back, task = EpisodeRef.from_columns({**columns, "index": 3})
    assert back == ref and task == item.task
    rebuilt = back.item(task)
    assert rebuilt.reference == item.reference and rebuilt.task == item.task
    other = next(t for t in tasks if t.task_id != item.task_id).task
    with pytest.raises(ValueError, match="is not the reference's"):
        ref.item(other)
    with pytest.raises(ValueError, match="no verified conversation"):
        EpisodeRef.of(item.model_copy(update={"reference": None}), "airline", "train", 0)


def test_a_cut_episode_scores_zero_with_the_trainers_reason(
    task_sets: dict[str, TaskSet],
) -> None:
    tasks = task_sets["airline"]
    chat = ChatEpisode(EpisodeEnv(tasks), next(iter(tasks)), seed=0)
    chat.step({"role": "assistant", "content": "May I have your user id?"})
    verdict = chat.cut("the rollout reached response_length 64")
    assert verdict.reward == 0.0 and verdict.reasons == ["the rollout reached response_length 64"]
    assert chat.done and chat.termination_reason == "max_steps"
    assert chat.cut("again") is verdict
