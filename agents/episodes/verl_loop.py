"""verl's agent loop over the episode API: a verl rollout plays exported τ²-bench tasks.

``evosyn export verl`` writes rows whose ``agent_name`` is :data:`AGENT_NAME` and an
``agent_loop.yaml`` that points verl at :class:`Tau2AgentLoop`
(``actor_rollout_ref.rollout.agent.agent_loop_config_path``). For each row the loop resets an
episode of the row's task (:class:`~evosyn.agents.episodes.chat.ChatEpisode`), renders the
prompt with verl's Continuous Token builder, and alternates: the rollout server generates the
policy's turn, verl's tool parser (``actor_rollout_ref.rollout.multi_turn.format``) reads its
tool calls, the episode answers with tool results or the user's next turn, and those are
appended as context. The episode ends as τ²-bench's orchestrator ends it and its reward (the
replay verifier's) is the rollout's ``reward_score``, so no reward function is configured.

What a trainer learns from: ``response_mask`` is 1 exactly on the policy's tokens (what the
rollout server generated); ``extra_fields["token_sources"]`` names every response token's
source, one letter each: ``p`` policy, ``o`` observation (tool results), ``u`` the user's turn.
Template tokens around a tool result or user turn count as that message's.

This module needs verl (and torch); the rest of the episode API does not.
"""

from __future__ import annotations

import asyncio
import functools
import re
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found]
    AgentLoopBase,
    AgentLoopOutput,
    register,
)
from verl.experimental.agent_loop.tool_parser import (  # type: ignore[import-not-found]
    ToolParser,
)

from evosyn.agents.episodes.chat import ChatEpisode, EpisodeRef, Source
from evosyn.agents.episodes.episode import EpisodeEnv, EpisodeError
from evosyn.agents.episodes.tasks import TaskSet

#: The agent loop's name in verl's registry and in the rows' ``agent_name`` column.
AGENT_NAME = "evosyn_tau2"
#: One letter per response token in ``extra_fields["token_sources"]``.
SOURCE_CODES: dict[Source, str] = {"policy": "p", "observation": "o", "user": "u", "system": "s"}
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)


@functools.cache
def episode_env(domain: str, user_config: str | None = None) -> EpisodeEnv:
    """The episode environment of ``domain``, one per process (episodes share it safely).

    ``user_config``: an evosyn campaign YAML whose ``user_simulator`` model plays the user;
    None plays the offline scripted user (the verified conversation's user turns).
    """
    tasks = TaskSet(domain, [])
    if user_config is None:
        return EpisodeEnv(tasks)
    from evosyn.config import load_config

    return EpisodeEnv.from_config(load_config(Path(user_config), []), tasks)


@register(AGENT_NAME)
class Tau2AgentLoop(AgentLoopBase):  # type: ignore[misc]  # verl is untyped
    """Plays one exported row's τ²-bench task through the episode API.

    Args:
        *args: verl's agent-loop arguments (config, server manager, tokenizer...).
        tools: verl's configured tools; unused, the task's domain brings its own.
        user_config: Path of an evosyn campaign YAML whose user simulator model plays the user
            (set in ``agent_loop.yaml``); None: the offline scripted user.
        **kwargs: verl's agent-loop keyword arguments.
    """

    def __init__(
        self, *args: Any, tools: Any = None, user_config: str | None = None, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        multi_turn = self.rollout_config.multi_turn
        self.response_length: int = self.rollout_config.response_length
        self.max_assistant_turns: int | None = multi_turn.max_assistant_turns
        self.tool_parser = ToolParser.get_tool_parser(multi_turn.format, self.tokenizer)
        self.user_config = user_config

    async def run(
        self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any
    ) -> AgentLoopOutput:
        """Play the row's episode; the rollout with its reward and token sources."""
        ref, task = EpisodeRef.from_columns(kwargs["extra_info"])
        env = episode_env(ref.domain, self.user_config)
        chat = await self._call(ChatEpisode, env, ref.item(task), ref.seed)
        messages = list(chat.prompt)
        full_determinism = getattr(self.rollout_config, "full_determinism", False)
        request_id = f"det-{int(priority)}" if full_determinism else uuid4().hex
        metrics: dict[str, Any] = {}
        runtime: list[int] = await self.ct_build_initial_tokens(messages, tools=chat.tools)
        prompt_length = len(runtime)
        mask: list[int] = []
        logprobs: list[float] | None = None
        sources: list[str] = []
        turns = 0
        while True:
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=runtime, sampling_params=sampling_params
            )
            if logprobs is None and output.log_probs:
                logprobs = [0.0] * len(mask)
            merge, mask, logprobs = await self.ct_merge_assistant_token(
                runtime,
                output.token_ids,
                mask,
                logprobs,
                assistant_logprobs=output.log_probs or None,
            )
            sources = _aligned(sources, merge, "p")
            runtime = merge.token_ids
            turns += 1
            message = await self._assistant_message(output.token_ids, turns)
            if len(mask) >= self.response_length:
                chat.cut(f"the rollout reached response_length {self.response_length}")
                break
            turn = await self._call(chat.step, message)
            messages.append(message)
            if turn.done:
                break
            if not turn.messages:
                raise EpisodeError(f"episode of {ref.task_id} went on with nothing said")
            if self.max_assistant_turns and turns >= self.max_assistant_turns:
                chat.cut(f"the rollout reached max_assistant_turns {self.max_assistant_turns}")
                break
            previous = list(messages)
            messages.extend(turn.messages)
            merge, mask, logprobs = await self.ct_merge_context_msg(
                previous, messages, runtime, mask, logprobs, tools=chat.tools
            )
            sources = _aligned(sources, merge, SOURCE_CODES[turn.sources[-1]])
            runtime = merge.token_ids
            if len(mask) >= self.response_length:
                chat.cut(f"the rollout reached response_length {self.response_length}")
                break
        verdict = chat.verdict
        assert verdict is not None  # the loop leaves only once the episode ended or was cut
        cut = self.response_length
        response = runtime[prompt_length:]
        return AgentLoopOutput(
            prompt_ids=runtime[:prompt_length],
            response_ids=response[:cut],
            response_mask=mask[:cut],
            response_logprobs=logprobs[:cut] if logprobs else None,
            reward_score=verdict.reward,
            num_turns=len(messages) - len(chat.prompt) + 1,
            metrics=metrics,
            extra_fields={
                "turn_scores": [],
                "tool_rewards": [],
                "token_sources": "".join(sources)[:cut],
                "task_id": ref.task_id,
                "termination_reason": chat.termination_reason,
                "reward_reasons": list(verdict.reasons),
                "reward_extra_info": {
                    "tau2_reward": verdict.tau2_reward,
                    "passed": float(verdict.passed),
                },
            },
        )

    async def _call(self, fn: Any, *args: Any) -> Any:
        # Replays and a model user block: off the event loop, which other rollouts share.
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def _assistant_message(self, token_ids: list[int], turn: int) -> dict[str, Any]:
        """The policy's ``turn``-th message in OpenAI format: its text (no thinking), its calls.

        Calls the model gave no id get one unique in the episode (τ²-bench pairs each result
        with its call by id).
        """
        content, calls = await self.tool_parser.extract_tool_calls(token_ids)
        for special in {self.tokenizer.eos_token, self.tokenizer.pad_token} - {None}:
            content = content.replace(special, "")
        message: dict[str, Any] = {
            "role": "assistant",
            "content": _THINKING.sub("", content).strip(),
        }
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.tool_call_id or f"call_{turn}_{index}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for index, call in enumerate(calls)
            ]
        return message


def _aligned(sources: list[str], merge: Any, code: str) -> list[str]:
    """Source letters after a Continuous Token merge, edited as verl edits the response mask."""
    kept = sources[: len(sources) - merge.removed_prefix_token_count]
    # A boundary token is template, never the policy's: it goes with the message it opens, or
    # (before a policy turn, which no builder here does) with the message before it.
    boundary = code if code != SOURCE_CODES["policy"] else (kept[-1] if kept else "u")
    return kept + [boundary] * len(merge.inserted_token_ids) + [code] * merge.appended_token_count
