"""The replay verifier: τ²-bench's reward, recomputed by replaying a trajectory's tool calls.

The verdict mirrors ``tau2.evaluator.evaluator.evaluate_simulation`` with evaluation type ALL:

* environment: the trajectory's tool calls are replayed from the task's initial state (each
  observation must come out as recorded); the final databases must hash like those reached by
  the task's gold actions (``DB``), and the task's environment assertions must hold
  (``ENV_ASSERTION``);
* actions: every gold action must match some tool call (``ACTION``), via τ²-bench's own
  ``ActionEvaluator``;
* communication: every ``communicate_info`` string must appear in an assistant message
  (``COMMUNICATE``), via τ²-bench's ``CommunicateEvaluator``;
* natural-language assertions (``NL_ASSERTION``) are graded by the configured judge
  (:mod:`~evosyn.agents.verifier.nl_judge`): the reward is multiplied by 1 if it finds every
  assertion met and by 0 otherwise, and each unmet one is a reason. Without a judge (the
  default) they are reported as unchecked and do not count. A judge that fails (its call, or
  its reply after the repair turn) raises: an error, not a verdict.

Only the criteria of the task's reward basis count.

Beyond τ²-bench's reward, every assistant write is checked against the domain's policy model
just before it runs: the ``violation(db, tool, arguments)`` of the domain's registration
names the rule a call breaks on the live database (or returns None). A trajectory that breaks
a rule fails with that rule among its reasons, whatever its reward; a domain without such a
function is not checked. By default the check guards synthesized tasks only: on an official
task τ²-bench's gold is the reference, even where it departs from the written policy (airline
tasks 7, 9, 29 and 37 do, e.g. sierra-research/tau2-bench#84); ``policy="all"`` checks those
too. Where τ²-bench's evaluator would raise (a malformed
trajectory, an observation that does not replay), the verdict is a failure with the reason.

It is fast because databases are parsed once per process and every replay runs on a
copy-on-write view (:mod:`evosyn.environments.cow`); the gold state of a task is cached.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.tasks import RewardType, Task
from tau2.evaluator.evaluator_action import ActionEvaluator
from tau2.evaluator.evaluator_communicate import CommunicateEvaluator

from evosyn.agents.gateway import Gateway
from evosyn.agents.verifier.base import VERIFIERS, Verifier
from evosyn.agents.verifier.nl_judge import NL_JUDGES, NLJudge, NLVerdict, nl_reward
from evosyn.agents.verifier.realize_judge import REALIZE_JUDGES, RealizeJudge
from evosyn.config import CampaignConfig
from evosyn.environments.base import DomainState, FunctionalSymbol, Requestor, Tau2Domain
from evosyn.environments.cow import set_read_only
from evosyn.environments.features import realized_features
from evosyn.environments.registry import PolicyCheck, domain_plugin, get_domain, list_domains
from evosyn.environments.shapes import shape_values
from evosyn.records import Verification

_ENV_BASES = {RewardType.DB, RewardType.ENV_ASSERTION}


def policy_check(domain: str) -> PolicyCheck | None:
    """The policy model registered with ``domain``, or None if it has none (or is unknown)."""
    return domain_plugin(domain).violation if domain in list_domains() else None


def write_violation(
    policy: PolicyCheck | None,
    domain: Tau2Domain,
    state: DomainState,
    name: str,
    arguments: Mapping[str, object],
    requestor: Requestor = "assistant",
) -> str | None:
    """The rule ``policy`` says an assistant write ``name(arguments)`` breaks on ``state``.

    None without a policy, for a call of the user or of a tool that only reads, and for a
    write the policy allows. The check only reads: the database is read-only meanwhile, so no
    record is copied as if a tool had touched it.
    """
    if policy is None or requestor != "assistant":
        return None
    spec = domain.tool_spec(name, requestor)
    if spec is None or spec.symbol != FunctionalSymbol.WRITE:
        return None
    db = state.db
    previous = set_read_only(db, True)
    try:
        return policy(db, name, arguments)
    finally:
        set_read_only(db, previous)


class ReplayReport(BaseModel):
    """Everything a replay found, beyond the verdict record."""

    model_config = ConfigDict(extra="forbid")

    reward: float = Field(description="Benchmark reward under the task's reward basis.")
    reward_basis: list[str] = Field(default_factory=list, description="The task's basis.")
    breakdown: dict[str, float] = Field(
        default_factory=dict, description="Reward per criterion of the basis."
    )
    db_match: bool | None = Field(default=None, description="Final DBs equal the gold DBs.")
    reasons: list[str] = Field(default_factory=list, description="Failing checks.")
    tool_issues: list[str] = Field(
        default_factory=list, description="Schema violations and erroring tool calls."
    )
    unchecked: list[str] = Field(
        default_factory=list, description="NL assertions, where no judge grades them."
    )
    nl_verdicts: list[NLVerdict] = Field(
        default_factory=list, description="The NL judge's verdict on each assertion, in order."
    )
    policy_violations: list[str] = Field(
        default_factory=list,
        description="Rules of the domain policy model that assistant writes broke, in order.",
    )


class _GoldState:
    """The state the gold actions reach, or why it cannot be built."""

    def __init__(self, state: DomainState | None, error: str | None) -> None:
        self.state = state
        self.error = error


class _TauCrash(Exception):
    """Where τ²-bench's evaluator itself would raise."""


class ReplayVerifier:
    """Deterministic replay verifier with τ²-bench's verdict.

    Args:
        domain: Domain name or instance the tasks belong to.
        strict: Also fail trajectories with tool-call issues (schema violations, errors).
            Off by default so that the verdict is exactly τ²-bench's; the issues are then
            listed in ``warnings``.
        gold_cache_size: How many tasks' gold states to keep.
        policy: Which trajectories the domain policy model checks: ``"synthetic"`` (tasks
            that are not official tasks of the domain; the default), ``"all"`` or ``"off"``.
        nl_judge: Grades the tasks' natural-language assertions; None: they are unchecked.
        realize_judge: Judges, for synthesis, the requested challenges and persona kind the
            dialogue-act detectors miss (:mod:`~evosyn.agents.verifier.realize_judge`); None:
            the detectors alone decide. The verdict itself never calls it.
    """

    name = "replay"

    def __init__(
        self,
        domain: str | Tau2Domain,
        strict: bool = False,
        gold_cache_size: int = 256,
        policy: str = "synthetic",
        nl_judge: NLJudge | None = None,
        realize_judge: RealizeJudge | None = None,
    ) -> None:
        if policy not in ("synthetic", "all", "off"):
            raise ValueError(f"policy must be 'synthetic', 'all' or 'off', not {policy!r}")
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self.strict = strict
        self.policy = policy
        self._policy = None if policy == "off" else policy_check(self.domain.name)
        self._official: dict[str, Task] | None = None
        self._gold: OrderedDict[str, _GoldState] = OrderedDict()
        self._gold_cache_size = gold_cache_size
        self._gold_lock = threading.Lock()
        self.nl_judge = nl_judge
        self.gateways: tuple[Gateway, ...] = nl_judge.gateways if nl_judge else ()
        self.realize_judge = realize_judge
        if realize_judge is not None:
            self.gateways += realize_judge.gateways

    # ---------------------------------------------------------------- public

    def verify(
        self,
        task: Task,
        messages: Sequence[Message],
        *,
        campaign_id: str = "adhoc",
        round: int = 0,
        trajectory_id: str | None = None,
    ) -> Verification:
        """The verdict on ``messages`` as an attempt at ``task``.

        Args:
            task: The τ²-bench task attempted.
            messages: The full trajectory (including the task's message history, if any).
            campaign_id: Campaign of the verification record.
            round: Round of the verification record.
            trajectory_id: Id of the trajectory (default: a digest of task and messages).

        Returns:
            The verification record; ``passed`` iff τ²-bench's reward would be 1.
        """
        start = time.perf_counter()
        report = self.report(task, messages)
        reasons = list(report.reasons)
        warnings: list[str] = []
        if report.tool_issues:
            (reasons if self.strict else warnings).extend(report.tool_issues)
        passed = (
            report.reward == 1.0
            and not report.policy_violations
            and not (self.strict and report.tool_issues)
        )
        return Verification(
            campaign_id=campaign_id,
            round=round,
            task_id=task.id,
            trajectory_id=trajectory_id or _trajectory_digest(task, messages),
            passed=passed,
            reward=report.reward,
            reasons=reasons,
            warnings=warnings,
            unchecked=report.unchecked,
            # The candidate factors' values (write_mix, trip_shape, ...) are read from the gold.
            realized=realized_features(self.domain, messages).as_values()
            | shape_values(self.domain.name, task),
            seconds=time.perf_counter() - start,
        )

    def report(self, task: Task, messages: Sequence[Message]) -> ReplayReport:
        """Replay ``messages`` and evaluate them against ``task`` (no record, no features).

        Raises:
            OutputRejected: the NL judge's reply stayed unusable after its repair turn.
            LLMError: an NL judge's call failed for good.
        """
        criteria = task.evaluation_criteria
        tool_issues = self._schema_issues(messages)
        if criteria is None:
            return ReplayReport(reward=1.0, tool_issues=tool_issues)
        basis = set(criteria.reward_basis)
        reasons: list[str] = []
        breakdown: dict[str, float] = {}
        unchecked: list[str] = []
        if RewardType.NL_ASSERTION in basis and self.nl_judge is None:
            unchecked = [f"nl_assertion: {a}" for a in criteria.nl_assertions or []]

        # τ²-bench evaluates the environment whatever the basis; a crash there is a failure.
        db_match: bool | None = None
        violations: list[str] = []
        try:
            env_reward, db_match = self._environment(
                task, messages, reasons, breakdown, tool_issues, violations
            )
        except _TauCrash as crash:
            env_reward = 0.0
            reasons.append(str(crash))
        reward = env_reward if basis & _ENV_BASES else 1.0

        if RewardType.ACTION in basis:
            info = ActionEvaluator.calculate_reward(task=task, full_trajectory=list(messages))
            breakdown[RewardType.ACTION.value] = info.reward
            reward *= info.reward
            for check in info.action_checks or []:
                if not check.action_match:
                    action = check.action
                    reasons.append(
                        f"action: gold action {action.action_id} "
                        f"{_call_text(action.name, action.arguments)} was not made"
                        + (f" (compared: {action.compare_args})" if action.compare_args else "")
                    )
        verdicts: list[NLVerdict] = []
        if RewardType.NL_ASSERTION in basis and self.nl_judge is not None:
            verdicts = self.nl_judge.judge(criteria.nl_assertions or [], messages)
            breakdown[RewardType.NL_ASSERTION.value] = nl_reward(verdicts)
            reward *= nl_reward(verdicts)
            reasons += [f"nl_assertion: {v.assertion} — {v.reason}" for v in verdicts if not v.met]
        if RewardType.COMMUNICATE in basis:
            info = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=list(messages))
            breakdown[RewardType.COMMUNICATE.value] = info.reward
            reward *= info.reward
            for comm in info.communicate_checks or []:
                if not comm.met:
                    reasons.append(f"communicate: {comm.info!r} was not told to the user")
        reasons += [f"policy: {v}" for v in violations]
        return ReplayReport(
            reward=reward,
            reward_basis=[RewardType(b).value for b in criteria.reward_basis],
            breakdown=breakdown,
            db_match=db_match,
            reasons=reasons,
            tool_issues=tool_issues,
            unchecked=unchecked,
            nl_verdicts=verdicts,
            policy_violations=violations,
        )

    # ---------------------------------------------------------------- environment criteria

    def _environment(
        self,
        task: Task,
        messages: Sequence[Message],
        reasons: list[str],
        breakdown: dict[str, float],
        tool_issues: list[str],
        violations: list[str],
    ) -> tuple[float, bool | None]:
        criteria = task.evaluation_criteria
        assert criteria is not None
        if criteria.actions is None and criteria.env_assertions is None:
            if self._policy_applies(task):
                self._replay(task, messages, tool_issues, violations)
            return 1.0, True

        predicted = self._replay(task, messages, tool_issues, violations)
        gold = self._gold_state(task)
        if gold.state is None:
            raise _TauCrash(f"gold: {gold.error}")
        db_match = predicted.same_db(gold.state)

        basis = set(criteria.reward_basis)
        assertion_reward = 1.0
        for assertion in criteria.env_assertions or []:
            try:
                met = predicted.env.run_env_assertion(assertion, raise_assertion_error=False)
            except Exception as exc:  # τ²-bench would raise here too
                raise _TauCrash(
                    f"env_assertion: {assertion.func_name} could not run: {exc}"
                ) from None
            if not met:
                assertion_reward = 0.0
            if not met and RewardType.ENV_ASSERTION in basis:
                reasons.append(
                    f"env_assertion: {assertion.env_type}."
                    f"{_call_text(assertion.func_name, assertion.arguments)} "
                    f"is not {assertion.assert_value}"
                    + (f" ({assertion.message})" if assertion.message else "")
                )
        reward = 1.0
        if RewardType.DB in basis:
            breakdown[RewardType.DB.value] = 1.0 if db_match else 0.0
            reward *= 1.0 if db_match else 0.0
            if not db_match:
                reasons.insert(0, "db: final database differs from the gold actions' state")
        if RewardType.ENV_ASSERTION in basis:
            breakdown[RewardType.ENV_ASSERTION.value] = assertion_reward
            reward *= assertion_reward
        return reward, db_match

    def _replay(
        self,
        task: Task,
        messages: Sequence[Message],
        tool_issues: list[str],
        violations: list[str],
    ) -> DomainState:
        """Replay the trajectory's tool calls as ``Environment.set_state`` does."""
        try:
            state = self.domain.initial_state(task, sync=False)
        except Exception as exc:
            raise _TauCrash(f"initialization: the task's initial state fails: {exc}") from None
        pairs = _pair_calls(messages)
        # Calls of the task's own message history are the task's premise, not the attempt.
        history = task.initial_state.message_history if task.initial_state else None
        premise = len(_pair_calls(history)) if history else 0
        checked = self._policy_applies(task)
        for index, (call, recorded) in enumerate(pairs):
            if checked and index >= premise:
                self._check_policy(state, call, index, violations)
            response = state.execute(call)
            if response.error:
                tool_issues.append(
                    f"tool call #{index} {call.name} errored: {_short(response.content)}"
                )
            if _content(response) != _content(recorded):
                raise _TauCrash(
                    f"replay: tool call #{index} {call.name} returns a different observation "
                    f"than recorded ({_short(response.content)!r} vs "
                    f"{_short(recorded.content)!r})"
                )
        state.sync()
        return state

    def _policy_applies(self, task: Task) -> bool:
        if self._policy is None:
            return False
        if self.policy == "all":
            return True
        if self._official is None:
            self._official = {t.id: t for t in self.domain.tasks()}
        return bool(self._official.get(task.id) != task)

    def _check_policy(
        self, state: DomainState, call: ToolCall, index: int, violations: list[str]
    ) -> None:
        """Ask the policy model about an assistant write before it runs on ``state``."""
        broken = write_violation(
            self._policy, self.domain, state, call.name, call.arguments, call.requestor
        )
        if broken:
            violations.append(f"tool call #{index} {call.name}: {broken}")

    def _gold_state(self, task: Task) -> _GoldState:
        key = hashlib.sha256(task.model_dump_json().encode()).hexdigest()
        # Rollouts verify on several threads at once (a round's chunks, a chunk's conversations).
        with self._gold_lock:
            cached = self._gold.get(key)
            if cached is not None:
                self._gold.move_to_end(key)
                return cached
        gold = self._build_gold(task)
        with self._gold_lock:
            self._gold[key] = gold
            if len(self._gold) > self._gold_cache_size:
                self._gold.popitem(last=False)
        return gold

    def _build_gold(self, task: Task) -> _GoldState:
        try:
            state = self.domain.initial_state(task, sync=False)
            history = task.initial_state.message_history if task.initial_state else None
            for call, recorded in _pair_calls(history or []):
                response = state.execute(call)
                if _content(response) != _content(recorded):
                    raise _TauCrash(f"the task's message history does not replay at {call.name}")
            state.sync()
        except Exception as exc:
            return _GoldState(None, str(exc))
        criteria = task.evaluation_criteria
        for action in (criteria.actions if criteria else None) or []:
            try:
                state.execute_gold(action)
            except Exception:  # τ²-bench logs and skips gold actions that raise
                continue
        return _GoldState(state, None)

    # ---------------------------------------------------------------- tool-call hygiene

    def _schema_issues(self, messages: Sequence[Message]) -> list[str]:
        issues: list[str] = []
        index = 0
        for message in messages:
            if not isinstance(message, AssistantMessage | UserMessage) or not message.tool_calls:
                continue
            for call in message.tool_calls:
                spec = self.domain.tool_spec(call.name, call.requestor)
                where = f"tool call #{index} {call.name}"
                index += 1
                if spec is None:
                    issues.append(f"{where}: unknown {call.requestor} tool")
                    continue
                given = set(call.arguments)
                missing = sorted(spec.required - given)
                extra = sorted(given - spec.properties)
                if missing:
                    issues.append(f"{where}: missing arguments {missing}")
                if extra:
                    issues.append(f"{where}: unexpected arguments {extra}")
        return issues


def _pair_calls(messages: Sequence[Message]) -> list[tuple[ToolCall, ToolMessage]]:
    """Tool calls with their tool messages, under ``Environment.set_state``'s rules."""
    pairs: list[tuple[ToolCall, ToolMessage]] = []
    queue = list(messages)
    position = 0
    while position < len(queue):
        message = queue[position]
        position += 1
        if isinstance(message, ToolMessage):
            raise _TauCrash("replay: a tool message does not follow a tool call")
        if isinstance(message, AssistantMessage | UserMessage) and message.is_tool_call():
            for call in message.tool_calls or []:
                if position >= len(queue):
                    raise _TauCrash(f"replay: tool call {call.name} has no tool message")
                answer = queue[position]
                position += 1
                if not isinstance(answer, ToolMessage):
                    raise _TauCrash(
                        f"replay: tool call {call.name} is followed by a "
                        f"{type(answer).__name__}, not its tool message"
                    )
                if call.id != answer.id:
                    raise _TauCrash(
                        f"replay: tool call id {call.id!r} answered by id {answer.id!r}"
                    )
                pairs.append((call, answer))
    return pairs


def _content(message: ToolMessage) -> Any:
    # τ²-bench compares observations as JSON when they parse, as text otherwise.
    if message.content is None:
        raise _TauCrash(f"replay: tool message {message.id!r} has no content")
    try:
        return json.loads(message.content)
    except json.JSONDecodeError:
        return message.content


def _short(text: str | None, limit: int = 120) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({json.dumps(arguments, sort_keys=True, default=str)})"


def _trajectory_digest(task: Task, messages: Sequence[Message]) -> str:
    digest = hashlib.sha256(task.id.encode())
    for message in messages:
        digest.update(message.model_dump_json(exclude={"timestamp"}).encode())
    return f"traj-{digest.hexdigest()[:16]}"


@VERIFIERS.register("programmatic")
def _replay(cfg: CampaignConfig) -> Verifier:
    judge = NL_JUDGES.build(cfg.agents.verifier.nl_judge.kind, cfg)
    realize = REALIZE_JUDGES.build(cfg.agents.verifier.realize_judge.kind, cfg)
    return ReplayVerifier(domain=cfg.campaign.domain, nl_judge=judge, realize_judge=realize)
