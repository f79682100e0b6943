"""Records at every boundary of the EvoSyn loop.

Each arrow of the loop (Designer -> Planner -> Generator -> Teacher -> Verifier -> learner ->
Feedback -> Reflector) takes and returns one of these pydantic models. Every record that is
stored in the lake carries ``campaign_id`` and ``round`` and names its table in ``TABLE``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from tau2.data_model.message import Message, ToolCall
from tau2.data_model.tasks import Task

from evosyn.names import SAFE_ID as SAFE_ID  # re-exported: the records' id rule


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


class Record(BaseModel):
    """A boundary record: strict about unknown fields so malformed input fails loudly."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LakeRecord(Record):
    """A record stored as one row of a lake table, partitioned by campaign and round."""

    TABLE: ClassVar[str]
    KEY: ClassVar[tuple[str, ...]]

    campaign_id: str = Field(description="Campaign this row belongs to (path-safe id).")
    round: int = Field(ge=0, description="Round of the campaign (0 = initial state).")

    @field_validator("campaign_id")
    @classmethod
    def _safe_campaign_id(cls, value: str) -> str:
        if not SAFE_ID.match(value):
            raise ValueError(
                f"campaign_id {value!r} must be 1-128 characters of letters, digits, '_', '.' "
                "or '-', starting with a letter or digit"
            )
        return value


# --------------------------------------------------------------------------- synthesis space


class FactorStatus(StrEnum):
    """Life cycle of a factor in the synthesis space."""

    SEED = "seed"
    EXPERIMENTAL = "experimental"
    STANDARD = "standard"
    DEPRECATED = "deprecated"


class FactorOrigin(StrEnum):
    """Why a factor is in the space."""

    SEED = "seed"
    FAILURE_DRIVEN = "failure_driven"
    COVERAGE_GAP = "coverage_gap"
    USER = "user"


class Factor(Record):
    """One axis of the synthesis space with a finite set of values."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Snake-case factor name.")
    values: list[str] = Field(min_length=1, description="The finite values the factor can take.")
    guidance: str = Field(
        default="", description="How selecting a value of this factor guides generation."
    )
    min_select: int = Field(default=1, ge=0, description="Fewest values a blueprint selects.")
    max_select: int = Field(default=1, ge=1, description="Most values a blueprint selects.")
    status: FactorStatus = Field(default=FactorStatus.SEED, description="Life-cycle status.")
    origin: FactorOrigin = Field(default=FactorOrigin.SEED, description="Why it was added.")
    round_introduced: int = Field(default=0, ge=0, description="Round the factor entered.")
    definition: str = Field(
        default="",
        description="What the factor measures on a task and how its values are told apart: "
        "set for a factor the Reflector invented, whose values a labeller reads off each task.",
    )

    @model_validator(mode="before")
    @classmethod
    def _older_rows(cls, data: Any) -> Any:
        # A space stored before ``definition`` existed reads it back as null.
        if isinstance(data, dict) and data.get("definition", "") is None:
            return {k: v for k, v in data.items() if k != "definition"}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Factor:
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"factor {self.name!r} has duplicate values")
        if self.min_select > self.max_select:
            raise ValueError(f"factor {self.name!r}: min_select > max_select")
        if self.max_select > len(self.values):
            raise ValueError(f"factor {self.name!r}: max_select exceeds the number of values")
        return self


class SynthesisSpace(LakeRecord):
    """The revisable synthesis space O_r: a versioned list of factors for one domain."""

    TABLE: ClassVar[str] = "spaces"
    KEY: ClassVar[tuple[str, ...]] = ("version",)

    domain: str = Field(description="τ²-bench domain the space describes.")
    version: int = Field(ge=1, description="Space version; every added factor makes a new one.")
    factors: list[Factor] = Field(min_length=1, description="Factors in selection order.")

    @model_validator(mode="after")
    def _unique_names(self) -> SynthesisSpace:
        names = [f.name for f in self.factors]
        if len(set(names)) != len(names):
            raise ValueError(f"synthesis space has duplicate factor names: {names}")
        return self

    def factor(self, name: str) -> Factor:
        """The factor called ``name``; KeyError naming the known factors otherwise."""
        for f in self.factors:
            if f.name == name:
                return f
        raise KeyError(f"unknown factor {name!r}; the space has {[f.name for f in self.factors]}")

    @property
    def active_factors(self) -> list[Factor]:
        """Factors a blueprint selects from (all but deprecated ones)."""
        return [f for f in self.factors if f.status != FactorStatus.DEPRECATED]


# --------------------------------------------------------------------------- Designer


class ObjectiveType(StrEnum):
    """Why the Designer spends budget on a direction."""

    UNDER_COVERED = "under_covered"
    FAILURE_TARGETED = "failure_targeted"
    EXPLORATION = "exploration"
    REPAIR = "repair"
    OVER_MASTERED = "over_mastered"


class BudgetLevel(StrEnum):
    """Coarse budget level of a direction."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Direction(LakeRecord):
    """One Designer condition: where in the space to synthesize, and how much."""

    TABLE: ClassVar[str] = "directions"
    KEY: ClassVar[tuple[str, ...]] = ("direction_id",)

    direction_id: str = Field(description="Unique id of the direction within the campaign.")
    space_version: int = Field(ge=1, description="Space version the direction refers to.")
    objective: ObjectiveType = Field(description="Objective type of the direction.")
    preferred: dict[str, list[str]] = Field(
        default_factory=dict, description="Soft preferences: factor -> values to favour."
    )
    weights: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Soft mix: factor -> value -> relative sampling weight (values left out "
        "weigh nothing); for a factor named here it replaces the preferred values.",
    )
    allowed: dict[str, list[str]] = Field(
        default_factory=dict, description="Hard constraint: factor -> the only values allowed."
    )
    forbidden: dict[str, list[str]] = Field(
        default_factory=dict, description="Hard constraint: factor -> values never selected."
    )
    avoid_patterns: list[str] = Field(
        default_factory=list, description="Free-text patterns the Planner should avoid."
    )
    budget_level: BudgetLevel = Field(default=BudgetLevel.MEDIUM, description="Coarse level.")
    budget: int = Field(ge=0, description="Number of blueprints to plan for this direction.")
    target: str = Field(
        default="",
        description="The capability or structure the direction aims at, in the Designer's "
        "words; empty where it names none.",
    )
    rationale: str = Field(default="", description="Why the Designer chose this direction.")

    @field_validator("weights")
    @classmethod
    def _weights_positive(cls, weights: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for name, w in weights.items():
            if any(not math.isfinite(x) or x < 0 for x in w.values()) or not any(w.values()):
                raise ValueError(f"weights.{name} must be finite, non-negative, not all 0: {w}")
        return weights

    def validate_against(self, space: SynthesisSpace) -> None:
        """Raise ValueError if a constraint names a factor or value outside ``space``."""
        for kind, mapping in (
            ("preferred", self.preferred),
            ("allowed", self.allowed),
            ("forbidden", self.forbidden),
            ("weights", {name: list(w) for name, w in self.weights.items()}),
        ):
            for name, values in mapping.items():
                factor = space.factor(name)
                unknown = sorted(set(values) - set(factor.values))
                if unknown:
                    raise ValueError(
                        f"direction {self.direction_id}: {kind}.{name} has unknown values {unknown}"
                    )


class GenerationPlan(Record):
    """The Designer's output for one round: directions whose budgets sum to the round budget."""

    campaign_id: str = Field(description="Campaign the plan is for.")
    round: int = Field(ge=1, description="Round the plan is for.")
    total_budget: int = Field(ge=1, description="Blueprints to synthesize this round.")
    directions: list[Direction] = Field(min_length=1, description="The plan's directions.")

    @model_validator(mode="after")
    def _budget_sums(self) -> GenerationPlan:
        spent = sum(d.budget for d in self.directions)
        if spent != self.total_budget:
            raise ValueError(f"direction budgets sum to {spent}, not {self.total_budget}")
        return self


# --------------------------------------------------------------------------- Planner


class Blueprint(LakeRecord):
    """A grounded direction: one set of selected factor values plus the task's intent."""

    TABLE: ClassVar[str] = "blueprints"
    KEY: ClassVar[tuple[str, ...]] = ("blueprint_id",)

    # The paper's cardinalities for the six shared seed axes; evolved factors take one value.
    CARDINALITY: ClassVar[dict[str, tuple[int, int]]] = {
        "task_family": (1, 1),
        "expected_outcome": (1, 1),
        "policy_or_constraint_focus": (1, 2),
        "tool_use_pattern": (1, 3),
        "interaction_challenge": (0, 2),
        "difficulty_profile": (1, 1),
    }

    blueprint_id: str = Field(description="Unique id of the blueprint within the campaign.")
    direction_id: str = Field(description="Direction this blueprint grounds.")
    space_version: int = Field(ge=1, description="Space version the selections refer to.")
    selections: dict[str, list[str]] = Field(description="Factor -> selected values.")
    intent: str = Field(description="One-paragraph statement of what the task is about.")
    difficulty_controls: dict[str, int | str] = Field(
        default_factory=dict,
        description="Expected difficulty controls, e.g. number of writes or reads requested.",
    )
    seed: int = Field(default=0, description="Seed the Planner sampled with.")

    def validate_against(self, space: SynthesisSpace) -> None:
        """Raise ValueError unless selections cover every active factor with legal values."""
        for factor in space.active_factors:
            chosen = self.selections.get(factor.name, [])
            lo, hi = self.CARDINALITY.get(factor.name, (factor.min_select, factor.max_select))
            if not lo <= len(chosen) <= hi:
                raise ValueError(
                    f"blueprint {self.blueprint_id}: {factor.name} needs {lo}..{hi} values, "
                    f"got {len(chosen)}"
                )
            unknown = sorted(set(chosen) - set(factor.values))
            if unknown:
                raise ValueError(
                    f"blueprint {self.blueprint_id}: {factor.name} has unknown values {unknown}"
                )
            if len(set(chosen)) != len(chosen):
                raise ValueError(f"blueprint {self.blueprint_id}: {factor.name} repeats a value")
        extra = sorted(set(self.selections) - {f.name for f in space.active_factors})
        if extra:
            raise ValueError(f"blueprint {self.blueprint_id}: unknown factors {extra}")


# --------------------------------------------------------------------------- Generator, Teacher


class Answer(BaseModel):
    """A fact the agent must tell the user, and the question it answers.

    The Generator's message to the Teacher: ``value`` is what τ²-bench's communicate check
    looks for, ``topic`` what the user asks about, ``phrase`` how the agent says the value.
    """

    model_config = ConfigDict(extra="forbid")

    value: str = Field(min_length=1, description="The communicate_info string.")
    topic: str = Field(
        min_length=1, description="What it answers, in the second person: 'the total bag fee'."
    )
    phrase: str = Field(default="", description="The value in a sentence ('$89'); default value.")

    @property
    def said(self) -> str:
        """How the agent says the value."""
        return self.phrase or self.value


class SynthTask(LakeRecord):
    """A synthesized task: a τ²-bench ``Task`` plus what the blueprint requested."""

    TABLE: ClassVar[str] = "tasks"
    KEY: ClassVar[tuple[str, ...]] = ("task_id",)

    task_id: str = Field(description="Unique id of the task (equals ``task.id``).")
    blueprint_id: str = Field(description="Blueprint the task grounds.")
    domain: str = Field(description="τ²-bench domain the task runs in.")
    task: Task = Field(description="The τ²-bench task: user scenario and evaluation criteria.")
    requested: dict[str, list[str]] = Field(
        default_factory=dict, description="Factor values the blueprint requested."
    )
    generator: str = Field(default="programmatic", description="Generator implementation.")
    answers: list[Answer] = Field(
        default_factory=list,
        description="The task's communicate_info values with the questions they answer.",
    )
    cues: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "What the user says when the conversation reaches a gold action, by action id, "
            "worded as the user's instructions are (a further request, the reason for a "
            "cancellation): the Generator's words for the programmatic Teacher."
        ),
    )
    refused: list[ToolCall] = Field(
        default_factory=list,
        description=(
            "The writes the user asks for that the policy forbids (a refusal), with the "
            "arguments the request names: what the agent refuses, and the family a refusal "
            "realizes. Empty where the task refuses nothing or its Generator did not say."
        ),
    )

    @model_validator(mode="after")
    def _ids_match(self) -> SynthTask:
        if self.task.id != self.task_id:
            raise ValueError(f"task_id {self.task_id!r} differs from task.id {self.task.id!r}")
        criteria = self.task.evaluation_criteria
        actions = {a.action_id for a in (criteria.actions if criteria else None) or []}
        unknown = sorted(set(self.cues) - actions)
        if unknown:
            raise ValueError(f"cues name no gold action of the task: {', '.join(unknown)}")
        return self


class Trajectory(LakeRecord):
    """A multi-turn conversation in τ²-bench's message format that solves a task."""

    TABLE: ClassVar[str] = "trajectories"
    KEY: ClassVar[tuple[str, ...]] = ("trajectory_id",)

    trajectory_id: str = Field(description="Unique id of the trajectory.")
    task_id: str = Field(description="Task the trajectory solves.")
    messages: list[Message] = Field(
        min_length=1, description="System, user, assistant and tool messages in order."
    )
    teacher: str = Field(default="programmatic", description="Teacher implementation.")
    attempt: int = Field(default=0, ge=0, description="0 = first rollout, k = k-th repair.")


class Verification(LakeRecord):
    """The Verifier's deterministic replay verdict for one trajectory."""

    TABLE: ClassVar[str] = "verifications"
    KEY: ClassVar[tuple[str, ...]] = ("trajectory_id",)

    task_id: str = Field(description="Task that was verified.")
    trajectory_id: str = Field(description="Trajectory that was replayed.")
    passed: bool = Field(description="True iff the benchmark reward is 1 under the reward basis.")
    reward: float = Field(ge=0.0, le=1.0, description="Benchmark reward of the replay.")
    reasons: list[str] = Field(default_factory=list, description="Failing checks, if any.")
    warnings: list[str] = Field(
        default_factory=list,
        description="Tool-call issues (schema violations, errors) that did not fail the verdict.",
    )
    unchecked: list[str] = Field(
        default_factory=list, description="Criteria outside the deterministic verdict (NL)."
    )
    realized: dict[str, str] = Field(
        default_factory=dict,
        description="Factor values re-derived from the realized tool calls, and the task's "
        "shape values read from its gold.",
    )
    repair_attempts: int = Field(default=0, ge=0, description="Repairs tried before this verdict.")
    repaired_from: list[str] = Field(
        default_factory=list,
        description="Why each earlier attempt failed (all its reasons, '; '-joined), in order: "
        "what Repair made right or could not.",
    )
    seconds: float = Field(default=0.0, ge=0.0, description="Wall time of the replay.")


class Attempt(BaseModel):
    """A rollout and the Verifier's verdict on it: what a Repair starts from (not stored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trajectory: Trajectory = Field(description="The rollout that was verified.")
    verification: Verification = Field(description="The Verifier's verdict on it.")


class Rejection(LakeRecord):
    """A request that produced no verified sample, with the stage and the reason."""

    TABLE: ClassVar[str] = "rejections"
    KEY: ClassVar[tuple[str, ...]] = ("blueprint_id",)

    blueprint_id: str = Field(description="Blueprint whose sample was rejected.")
    stage: Literal[
        "plan", "generate", "contamination", "duplicate", "rollout", "verify", "gate", "realize"
    ] = Field(
        description="Where the sample stopped (``gate``: the gold agent used what it had not "
        "seen, chose for the user, agreed a charge without its amount or told the user an "
        "internal id)."
    )
    reason: str = Field(description="Why, in one line.")
    error_class: str | None = Field(default=None, description="Exception class, if an error.")


# --------------------------------------------------------------------------- learner


class Training(LakeRecord):
    """One training run of the task agent on the accumulated verified data D_<=r."""

    TABLE: ClassVar[str] = "trainings"
    KEY: ClassVar[tuple[str, ...]] = ("training_id",)

    training_id: str = Field(description="Unique id of the training run.")
    learner: str = Field(description="Learner implementation: simulated, icl or sft.")
    recipe: dict[str, Any] = Field(default_factory=dict, description="Training recipe used.")
    dataset_snapshot: str = Field(description="URI or digest of the training set used.")
    n_samples: int = Field(ge=0, description="Verified samples trained on.")
    checkpoint_uri: str | None = Field(default=None, description="Where the checkpoint lives.")
    seconds: float = Field(default=0.0, ge=0.0, description="Wall time of the run.")
    status: Literal["succeeded", "failed"] = Field(description="Exit status of the run.")
    error: str | None = Field(default=None, description="Error message when it failed.")


class EvalResult(LakeRecord):
    """The learner's result on one diagnostic or test task."""

    TABLE: ClassVar[str] = "evaluations"
    KEY: ClassVar[tuple[str, ...]] = ("training_id", "task_id")

    training_id: str = Field(description="Training run whose learner was evaluated.")
    task_id: str = Field(description="Evaluated task.")
    split: str = Field(description="Split of the task: diagnostic or test.")
    success: bool = Field(description="True iff the reward was 1.")
    reward: float = Field(ge=0.0, le=1.0, description="Reward of the episode.")
    realized: dict[str, str] = Field(
        default_factory=dict, description="Realized properties of the task's gold trajectory."
    )
    failure_reason: str | None = Field(default=None, description="Why it failed, if it did.")


class UnscoredEpisode(LakeRecord):
    """An evaluation episode left unscored: the user simulator or the infrastructure broke it.

    Never the learner's failure: it is in no success rate, and neither the Reflector nor the
    probes see it.
    """

    TABLE: ClassVar[str] = "unscored_episodes"
    KEY: ClassVar[tuple[str, ...]] = ("training_id", "task_id")

    training_id: str = Field(description="Training run whose learner was evaluated.")
    task_id: str = Field(description="Evaluated task, named as in evaluations.")
    split: str = Field(description="Split of the task: diagnostic or test.")
    kind: str = Field(
        description="What broke it: user_sim_fault (the user broke its instructions), "
        "user_sim_error (the user simulator broke the turn protocol), server_down, "
        "server_error or context_overflow."
    )
    attempts: int = Field(ge=1, description="Times the episode was played.")
    message: str = Field(description="What went wrong, e.g. the fact the user invented.")


# --------------------------------------------------------------------------- feedback, Reflector


class ValueFeedback(LakeRecord):
    """Coverage and learner success for one value of one factor after a round."""

    TABLE: ClassVar[str] = "feedback"
    KEY: ClassVar[tuple[str, ...]] = ("factor", "value")

    factor: str = Field(description="Factor name.")
    value: str = Field(description="Factor value.")
    coverage: float = Field(ge=0.0, le=1.0, description="Share of verified data with the value.")
    n_verified: int = Field(ge=0, description="Verified samples with the value.")
    round_coverage: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Share of this round's verified data with the value (None: none verified).",
    )
    success: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Learner success on diagnostic tasks with it."
    )
    n_diagnostic: int = Field(
        default=0, ge=0, description="Diagnostic episodes with the value (each trial counts once)."
    )
    success_delta: float | None = Field(
        default=None, description="Change of success since the previous round."
    )


class Probe(LakeRecord):
    """A candidate property not yet in the space, measured on the diagnostic trajectories."""

    TABLE: ClassVar[str] = "probes"
    KEY: ClassVar[tuple[str, ...]] = ("name",)

    name: str = Field(description="Probe name, e.g. num_write.")
    distribution: dict[str, int] = Field(description="Bucket -> diagnostic tasks in it.")
    failure_rate: dict[str, float] = Field(description="Bucket -> learner failure rate.")
    coverage: dict[str, float] = Field(description="Bucket -> share of verified data.")
    spearman: float | None = Field(default=None, description="Rank correlation with failure.")
    cmi: float = Field(ge=0.0, description="I(fail; probe | current factors), in nats.")
    cmi_null: float = Field(
        default=0.0, ge=0.0, description="Mean CMI with the probe permuted: the estimator's bias."
    )
    p_value: float = Field(ge=0.0, le=1.0, description="Permutation p-value of the CMI.")
    suggested: Factor | None = Field(default=None, description="Factor it would become.")


class Feedback(Record):
    """Everything the Reflector and Designer learn from one round."""

    campaign_id: str = Field(description="Campaign the feedback is for.")
    round: int = Field(ge=0, description="Round the feedback describes.")
    values: list[ValueFeedback] = Field(default_factory=list, description="Per-value report.")
    probes: list[Probe] = Field(default_factory=list, description="Candidate properties.")


class ReviewAction(StrEnum):
    """What the Reflector does with an experimental factor."""

    PROMOTE = "promote"
    KEEP = "keep"
    DEPRECATE = "deprecate"


class FactorReview(Record):
    """The Reflector's review of one experimental factor."""

    factor: str = Field(description="Reviewed factor.")
    action: ReviewAction = Field(description="Promote, keep or deprecate.")
    evidence: str = Field(description="The measurements the decision rests on.")


class ReflectorDecision(LakeRecord):
    """The Reflector's decision turning (S_r, feedback) into S_{r+1}."""

    TABLE: ClassVar[str] = "reflections"
    KEY: ClassVar[tuple[str, ...]] = ()

    action: Literal["reallocate", "add_factor"] = Field(description="What changes next round.")
    new_factor: Factor | None = Field(default=None, description="The factor added, if any.")
    reviews: list[FactorReview] = Field(default_factory=list, description="Factor reviews.")
    evidence: str = Field(default="", description="Evidence for the decision.")
    rationale: str = Field(default="", description="Why this decision.")
    next_space_version: int = Field(ge=1, description="Space version of the next round.")
    dropped_factor: Factor | None = Field(
        default=None,
        description="A factor the Reflector proposed and then dropped because the probe of its "
        "labelled values did not support it (the evidence says why).",
    )
    probe: Probe | None = Field(
        default=None,
        description="The probe of a factor the Reflector invented, on its labelled values, that "
        "kept (new_factor) or dropped (dropped_factor) it; also a probes row of this round.",
    )

    @model_validator(mode="after")
    def _factor_iff_added(self) -> ReflectorDecision:
        if (self.action == "add_factor") != (self.new_factor is not None):
            raise ValueError("new_factor is required for add_factor and only for it")
        return self

    def in_words(self) -> str:
        """What changed, briefly.

        The factor added (and why), factors promoted or deprecated, or ``reallocated budget``
        when the space stayed as it was.
        """
        parts = []
        if self.new_factor is not None:
            why = self.new_factor.origin.value.replace("_", "-")
            parts.append(f"added {self.new_factor.name} ({why})")
        verbs = {ReviewAction.PROMOTE: "promoted", ReviewAction.DEPRECATE: "deprecated"}
        parts += [f"{verbs[r.action]} {r.factor}" for r in self.reviews if r.action in verbs]
        if self.dropped_factor is not None:
            parts.append(f"dropped proposed {self.dropped_factor.name} (unsupported by its probe)")
        return "; ".join(parts) or "reallocated budget"


# --------------------------------------------------------------------------- campaign


class Campaign(LakeRecord):
    """A campaign: its identity and the validated configuration it ran with."""

    TABLE: ClassVar[str] = "campaigns"
    KEY: ClassVar[tuple[str, ...]] = ()

    name: str = Field(description="Human-readable campaign name.")
    domain: str = Field(description="τ²-bench domain.")
    seed: int = Field(description="Campaign seed.")
    config: dict[str, Any] = Field(description="The full validated campaign config.")
    created_at: datetime = Field(default_factory=utcnow, description="When it was created.")
    tau2: str | None = Field(
        default=None,
        description="The τ²-bench it ran with: package version and where the official tasks "
        "came from (packaged, or a source checkout's data at its git revision with the tasks "
        "file's sha256); null in lakes written before it was recorded.",
    )


class RoundSummary(LakeRecord):
    """What one round did, in counts."""

    TABLE: ClassVar[str] = "rounds"
    KEY: ClassVar[tuple[str, ...]] = ()

    space_version: int = Field(ge=1, description="Space version the round synthesized in.")
    budget: int = Field(ge=0, description="Blueprints requested.")
    n_blueprints: int = Field(default=0, ge=0, description="Blueprints planned.")
    n_tasks: int = Field(default=0, ge=0, description="Tasks generated.")
    n_verified: int = Field(default=0, ge=0, description="Trajectories that passed.")
    n_rejected: int = Field(default=0, ge=0, description="Trajectories rejected with a reason.")
    n_failed: int = Field(default=0, ge=0, description="Requests that failed with an error.")
    n_repaired: int = Field(
        default=0, ge=0, description="Verified trajectories that needed at least one Repair."
    )
    n_user_faults: int = Field(
        default=0,
        ge=0,
        description="Diagnostic episodes left unscored because the user simulator broke them "
        "(unscored_episodes of kind user_sim_*); in no success rate.",
    )
    fixed_success: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Learner success on the fixed diagnostic set: the domain's official "
        "diagnostic split, the same tasks every round, so rounds compare.",
    )
    fixed_n: int = Field(
        default=0, ge=0, description="Episodes behind fixed_success (tasks times trials)."
    )
    diagnostic_success: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Learner success on the whole diagnostic set: the official split plus the "
        "held-out synthesized tasks so far, a set that grows (and changes) every round.",
    )
    diagnostic_n: int = Field(
        default=0, ge=0, description="Episodes behind diagnostic_success (tasks times trials)."
    )
    planted_success: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Simulated learner only: success on the fixed set's episodes whose realized "
        "properties fall in a planted weakness (the slice the loop should find and close).",
    )
    planted_n: int = Field(default=0, ge=0, description="Episodes behind planted_success.")
    decision: str = Field(
        default="",
        description="The decision that shaped this round's space, in words: the Reflector's "
        "after the previous round (its reflections row has round - 1), with the probe's CMI "
        "and p-value behind an added factor, or why there is none.",
    )
    status: Literal["running", "succeeded", "failed"] = Field(description="Round status.")
    started_at: datetime = Field(default_factory=utcnow, description="When it started.")
    finished_at: datetime | None = Field(default=None, description="When it finished.")


class LLMCall(LakeRecord):
    """One attempt of one model call through the LLM gateway."""

    TABLE: ClassVar[str] = "llm_calls"
    KEY: ClassVar[tuple[str, ...]] = ("call_id", "attempt")

    call_id: str = Field(description="Id shared by all attempts of one request.")
    attempt: int = Field(ge=0, description="Attempt number, 0 first.")
    role: str = Field(description="Role that made the call.")
    model: str = Field(description="litellm model string.")
    tokens_in: int = Field(default=0, ge=0, description="Prompt tokens.")
    tokens_out: int = Field(default=0, ge=0, description="Completion tokens.")
    cost: float | None = Field(default=None, ge=0.0, description="Cost in USD if known.")
    latency_s: float = Field(default=0.0, ge=0.0, description="Wall time of the attempt.")
    outcome: Literal["ok", "error", "cached"] = Field(description="How the attempt ended.")
    error_class: str | None = Field(default=None, description="Exception class on error.")
    note: str | None = Field(
        default=None,
        description="What the gateway did because of this attempt, e.g. why its circuit "
        "breaker opened and paused the role.",
    )
    started_at: datetime = Field(default_factory=utcnow, description="When it started.")


class ExperimentArm(LakeRecord):
    """One finished arm of an experiment: a campaign run for one condition and seed.

    ``campaign_id`` is the arm's campaign; the row is written once the campaign has finished,
    so ``evosyn experiment run`` skips the arms it finds here.
    """

    TABLE: ClassVar[str] = "experiment_arms"
    KEY: ClassVar[tuple[str, ...]] = ()

    experiment: str = Field(description="Experiment name.")
    arm: str = Field(description="Condition (arm) name, e.g. evosyn, fixed_state, r_zero.")
    seed: int = Field(description="Campaign seed of this run of the arm.")
    overrides: dict[str, Any] = Field(
        default_factory=dict, description="The arm's config overrides (key.path -> value)."
    )
    rounds: int = Field(ge=0, description="Rounds the campaign ran.")
    seconds: float = Field(ge=0.0, description="Wall time of the campaign run.")
    finished_at: datetime = Field(default_factory=utcnow, description="When it finished.")


LAKE_RECORDS: tuple[type[LakeRecord], ...] = (
    Campaign,
    RoundSummary,
    SynthesisSpace,
    Direction,
    Blueprint,
    SynthTask,
    Trajectory,
    Verification,
    Rejection,
    Training,
    EvalResult,
    UnscoredEpisode,
    ValueFeedback,
    Probe,
    ReflectorDecision,
    LLMCall,
    ExperimentArm,
)
"""Every record type with a lake table, in loop order."""

TABLES: dict[str, type[LakeRecord]] = {cls.TABLE: cls for cls in LAKE_RECORDS}
"""Lake table name -> record type."""
