"""Campaign configuration: a YAML file, ``EVOSYN_*`` environment variables, ``--set`` overrides.

Precedence, lowest first: model defaults, the YAML file, environment variables, ``--set``.
An environment variable ``EVOSYN_LAKE__ROOT`` sets ``lake.root`` (``__`` separates levels).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from evosyn import kinds
from evosyn.environments.registry import list_domains
from evosyn.experiment_pool import PARENT
from evosyn.names import SAFE_ID

ENV_PREFIX = "EVOSYN_"
# Environment variables of the project that are settings of the CLI, not campaign config
# (PARENT: an experiment worker's parent process).
NON_CONFIG_ENV = {"EVOSYN_TAU2_LOG", "EVOSYN_HOME", PARENT}


class ConfigError(ValueError):
    """A campaign config that cannot be used; the message is one line naming the field."""


class Section(BaseModel):
    """A config section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class CampaignSection(Section):
    """Identity and size of the campaign."""

    name: str = Field(default="campaign", description="Human-readable name.")
    id: str | None = Field(
        default=None, description="Campaign id; default: NAME-YYYYMMDD-HHMMSS at start."
    )
    domain: str = Field(default="airline", description="τ²-bench domain.")
    rounds: int = Field(default=3, ge=1, le=100, description="Rounds to run.")
    budget_per_round: int = Field(default=60, ge=1, description="Blueprints per round.")
    seed: int = Field(
        default=0,
        description="Seed of every random choice in the campaign (the id is a name: two ids "
        "with one config and seed write the same rows).",
    )
    patience: int | None = Field(
        default=2,
        ge=1,
        description="The paper's stop rule: end the campaign after this many consecutive "
        "rounds without a synthesis-space update; null: run every round (experiments, so "
        "that arms whose space never changes get the same budget).",
    )
    strategy: str = Field(
        default="evosyn",
        description="Synthesis strategy: evosyn, or the paper's baselines r_zero (learner "
        "failures as unstructured guidance, fixed space) and autoplay (novelty-driven "
        "exploration, no learner signal); same roles, verifier, learner and budget.",
    )
    task_runner: Literal["thread", "ray"] = Field(
        default="thread",
        description="Prefect task runner for fan-out inside a round: thread pool or Ray.",
    )
    synthesis_workers: int = Field(
        default=1,
        ge=0,
        description="Worker processes a programmatic round's Generator, teacher and Verifier "
        "run on (0: every core this process may use; 1: this process). Same rows as one "
        "process; EVOSYN_SYNTH_WORKERS overrides it on a machine.",
    )

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, value: str) -> str:
        if value not in list_domains():
            raise ValueError(f"unknown domain {value!r}; choose one of {list_domains()}")
        return value

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        # The default id is NAME-YYYYMMDD-HHMMSS and ids name lake folders: no '/' or '..'.
        if not SAFE_ID.match(f"{value}-20000101-000000"):
            raise ValueError(
                "must be 1-112 letters, digits, '_', '.' or '-', starting with a letter or "
                "digit (it makes the default campaign id, a lake folder name)"
            )
        return value

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str | None) -> str | None:
        if value is not None and not SAFE_ID.match(value):
            raise ValueError(
                "must be letters, digits, '_', '.' or '-', starting with a letter or digit"
            )
        return value

    def resolved_id(self, now: datetime | None = None) -> str:
        """The configured id, or one made from the name and the start time."""
        if self.id:
            return self.id
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
        return f"{self.name}-{stamp}"


class LakeSection(Section):
    """Where the lake lives."""

    root: str = Field(default="lake", description="Local folder or s3://bucket/prefix.")
    s3_endpoint: str | None = Field(
        default=None, description="S3 endpoint URL (MinIO, moto, ...); default: AWS."
    )
    cache_dir: str | None = Field(
        default=None, description="Local cache of S3 partitions for SQL; default: .evosyn-cache."
    )


S = TypeVar("S", bound=BaseModel)


class RoleSection(Section):
    """Which implementation runs a role: a name registered for it beside its code.

    The section's fields are what every implementation of the role shares; any other key is
    a setting of the chosen kind, declared with the kind in :mod:`evosyn.kinds` and validated
    by its settings model (:func:`evosyn.kinds.settings`).
    """

    model_config = ConfigDict(extra="allow")
    role: ClassVar[str]
    kind: str = Field(default="programmatic", description="Implementation.")

    @field_validator("kind")
    @classmethod
    def _registered(cls, value: str) -> str:
        kinds.get(cls.role, value)  # ValueError listing the role's kinds if it has none
        return value

    @model_validator(mode="after")
    def _kind_settings(self) -> Self:
        # A section without keys of its own kind's keeps none: it dumps their defaults all
        # the same (_with_kind_defaults).
        if not self.model_extra:
            return self
        own = kinds.settings(self.role, self.kind, self.model_extra, type(self).model_fields)
        # Kept with their defaults, so the section dumps (and a campaign stores) every setting.
        self.__pydantic_extra__ = own.model_dump() if own is not None else {}
        return self

    @model_serializer(mode="wrap")
    def _with_kind_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A section validated without settings of its kind dumps their defaults all the same:
        # a campaign stores, and a resume compares, every setting of its kind.
        if self.model_extra:
            return handler(self)
        declared = kinds.get(self.role, self.kind).settings
        if declared is None:
            return handler(self)
        return handler(self.model_copy(update=declared().model_dump()))

    def kind_settings(self, model: type[S]) -> S:
        """The chosen kind's own settings, typed: ``model`` is its settings model or a base of it.

        TypeError if the kind declares no such settings (code asked for another kind's).
        """
        declared = kinds.get(self.role, self.kind).settings
        own = declared.model_validate(self.model_extra or {}) if declared is not None else None
        if not isinstance(own, model):
            raise TypeError(f"agents.{self.role}: kind {self.kind!r} has no {model.__name__}")
        return own


class DesignerSection(RoleSection):
    """Which implementation allocates each round's budget."""

    role = "designer"
    kind: str = Field(
        default="programmatic", description="Implementation: programmatic, llm or none."
    )


class PlannerSection(RoleSection):
    """Which implementation grounds directions into blueprints."""

    role = "planner"
    kind: str = Field(default="programmatic", description="Implementation: programmatic or llm.")


class JudgeSection(Section):
    """A judge model the Verifier may consult: which one (``kind``) and its model settings."""

    judge: ClassVar[str]
    """Its kinds (``verifier.<judge>`` in :mod:`evosyn.kinds`) and model role (``nl_judge``,
    ``realize_judge``)."""
    title: ClassVar[str]
    """What an error calls it."""
    kind: str = Field(default="none", description="none, or llm: a judge model.")
    llm: ModelSettings | None = Field(
        default=None,
        description="The judge's model settings over llm.default (the keys of llm.default); "
        "null: llm.default's.",
    )

    @field_validator("kind")
    @classmethod
    def _registered(cls, value: str) -> str:
        names = kinds.names(f"verifier.{cls.judge}")
        if value not in names:
            raise ValueError(f"unknown {cls.title} {value!r}; choose one of {names}")
        return value


class NLJudgeSection(JudgeSection):
    """Whether, and with which model, the Verifier grades natural-language assertions."""

    judge = "nl_judge"
    title = "NL judge"
    kind: str = Field(
        default="none",
        description="none: a task's NL assertions are listed unchecked and do not count; llm: "
        "a judge model grades each one, and the reward is 0 unless all are met (τ²-bench's rule).",
    )


class RealizeJudgeSection(JudgeSection):
    """Whether, and with which model, synthesis asks a judge what the detectors did not find."""

    judge = "realize_judge"
    title = "realization judge"
    kind: str = Field(
        default="none",
        description="none: the dialogue-act detectors alone decide whether a dialogue acts out "
        "its requested interaction challenges and persona kind; llm: a requested one they do not "
        "find is put to a judge model (one call per trajectory), and what it finds counts.",
    )


class VerifierSection(RoleSection):
    """Which implementation judges trajectories."""

    role = "verifier"
    kind: str = Field(
        default="programmatic", description="Implementation: programmatic (τ²-bench replay)."
    )
    nl_judge: NLJudgeSection = Field(
        default_factory=NLJudgeSection,
        description="The judge of natural-language assertions (NL_ASSERTION in a reward basis).",
    )
    realize_judge: RealizeJudgeSection = Field(
        default_factory=RealizeJudgeSection,
        description="The judge of requested challenges and personas the detectors miss.",
    )


class ReflectorSection(RoleSection):
    """Which implementation revises the synthesis space."""

    role = "reflector"
    kind: str = Field(
        default="programmatic", description="Implementation: programmatic, llm or none."
    )


class GeneratorSection(RoleSection):
    """Which implementation grounds blueprints, and which kept tasks it must not repeat."""

    role = "generator"
    kind: str = Field(default="programmatic", description="Implementation: programmatic or llm.")

    dedup: Literal["campaign", "lake"] = Field(
        default="campaign",
        description="Kept tasks a new task must not repeat: this campaign's (the same config "
        "and seed give the same data under any id), or every campaign of the domain in the "
        "lake (new data across campaigns, but what a campaign keeps depends on the lake).",
    )


class TeacherSection(RoleSection):
    """Which implementation rolls tasks out (the programmatic one's slip rate is its own)."""

    role = "teacher"
    kind: str = Field(default="programmatic", description="Implementation: programmatic or llm.")


class LearnerSection(RoleSection):
    """Which task agent is trained and evaluated, and how a round runs and evaluates it.

    Its fields are every learner's; the settings of one kind (the simulated learner's planted
    weaknesses, the SFT learner's recipe, ...) are declared with the kind (:mod:`evosyn.kinds`)
    and read with :meth:`RoleSection.kind_settings`.
    """

    role = "learner"
    kind: str = Field(default="simulated", description="Learner: simulated, icl, sft or rl.")
    dispatch: Literal["auto", "inline", "deployments"] = Field(
        default="auto",
        description="Where a round trains and evaluates the learner: inline in the round, or "
        "as runs of the evosyn-train and evosyn-evaluate deployments on their work pool (gpu), "
        "waited for; auto: deployments for a learner that needs a GPU (sft), inline otherwise.",
    )
    worker_wait_s: float = Field(
        default=300.0,
        gt=0,
        description="Dispatch: seconds to wait for an online worker on the pool, and again "
        "for a worker to pick up the dispatched run (which is then cancelled), before the "
        "round fails.",
    )
    run_timeout_s: float = Field(
        default=86_400.0,
        gt=0,
        description="Dispatch: seconds to wait for a dispatched train or evaluate run to "
        "finish before the round fails (the run goes on; a resume picks up what it stores).",
    )
    trials: int = Field(default=1, ge=1, description="Episodes per evaluated task (seeds).")
    max_steps: int = Field(default=60, ge=2, description="Orchestrator steps per episode.")
    infra_retries: int = Field(
        default=2, ge=0, description="Retries of an episode broken by infrastructure."
    )
    concurrency: int | None = Field(
        default=None,
        ge=1,
        description="Evaluation episodes at once (ICL, SFT); None: the learner role's gateway "
        "concurrency (llm.roles.learner.concurrency). Results equal a serial run's, and spend "
        "caps hold at any value.",
    )
    checkpoint_prefix: str = Field(
        default="checkpoints",
        description="Key prefix in the lake of the checkpoints a learner trains (SFT, RL).",
    )


class AgentsSection(Section):
    """Implementation of every role of the loop."""

    designer: DesignerSection = Field(default_factory=DesignerSection)
    planner: PlannerSection = Field(default_factory=PlannerSection)
    generator: GeneratorSection = Field(default_factory=GeneratorSection)
    teacher: TeacherSection = Field(default_factory=TeacherSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    reflector: ReflectorSection = Field(default_factory=ReflectorSection)
    learner: LearnerSection = Field(default_factory=LearnerSection)


def _declared(role: str, kind: str) -> set[str]:
    """The settings kind ``kind`` of ``role`` declares; none if it is unknown or fails to load."""
    try:
        found = kinds.find(role, kind)
    except ValueError:  # a plug-in that fails to load: a config choosing it says so
        return set()
    return set(found.settings.model_fields) if found is not None and found.settings else set()


def without_other_kinds(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A config read back from the lake, less each role section's keys another kind owns.

    A config a user writes fails on such a key (:meth:`RoleSection._kind_settings`); a stored
    one must not. Before each kind declared its own settings, role sections were flat and a
    campaign stored every key of its role whichever kind it chose (the programmatic teacher's
    ``mistake_rate`` under ``kind: llm``, an experiment arm's ``draw_stream`` under
    ``kind: sft``), where they configured nothing; dropping them loads the config the campaign
    ran, so it resumes. A key no kind owns stays, for validation to refuse.
    """
    tree: dict[str, Any] = json.loads(json.dumps(dict(stored)))
    agents = tree.get("agents")
    if not isinstance(agents, dict):
        return tree
    defaults = AgentsSection()
    for role in AgentsSection.model_fields:
        section = agents.get(role)
        if not isinstance(section, dict):
            continue
        default: RoleSection = getattr(defaults, role)
        kind = str(section.get("kind", default.kind))
        own = {*type(default).model_fields, *_declared(role, kind)}
        others = {
            key for name in kinds.names(role) if name != kind for key in _declared(role, name)
        }
        for key in [k for k in section if k not in own and k in others]:
            del section[key]
    return tree


class ModelSettings(Section):
    """Settings of one model behind the LLM gateway. API keys come only from the environment."""

    model: str | None = Field(default=None, description="litellm model string.")
    api_base: str | None = Field(default=None, description="Base URL of the endpoint.")
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="Sampling.")
    max_tokens: int | None = Field(default=None, ge=1, description="Completion token limit.")
    timeout: float | None = Field(default=None, gt=0, description="Seconds per attempt.")
    concurrency: int | None = Field(
        default=None, ge=1, description="Requests in flight per model string (default 8)."
    )
    max_attempts: int | None = Field(
        default=None, ge=1, description="Attempts per call, the first included (default 5)."
    )
    backoff_base_s: float | None = Field(
        default=None, ge=0, description="Backoff scale: attempt k waits up to base*2**k (1.0)."
    )
    backoff_max_s: float | None = Field(
        default=None, ge=0, description="Cap of one backoff wait in seconds (default 60)."
    )
    retry_after_max_s: float | None = Field(
        default=None, ge=0, description="Cap on a server's Retry-After in seconds (default 300)."
    )
    cache: bool | None = Field(
        default=None,
        description="Answer repeated requests from the disk cache (default on, per campaign).",
    )
    cache_dir: str | None = Field(
        default=None,
        description="Folder of the response cache, a subfolder per campaign "
        "(default .evosyn-cache/llm).",
    )
    client: Literal["auto", "litellm"] | None = Field(
        default=None,
        description="auto: openai/ and hosted_vllm/ models at an api_base are called with the "
        "openai SDK, others through litellm; litellm: always litellm (default auto).",
    )
    adaptive_concurrency: bool | None = Field(
        default=None,
        description="Adapt the model's limit to latency and 429/5xx (AIMD) between "
        "min_concurrency and concurrency (default on).",
    )
    min_concurrency: int | None = Field(
        default=None, ge=1, description="Floor of the adaptive limit (default 1)."
    )
    latency_tolerance: float | None = Field(
        default=None,
        gt=1.0,
        description="A reply slower than this times the model's baseline latency halves the "
        "adaptive limit (default 2.0).",
    )
    breaker_failures: int | None = Field(
        default=None,
        ge=1,
        description="Consecutive transient failures of a role that open its circuit breaker "
        "(default 10).",
    )
    breaker_pause_s: float | None = Field(
        default=None,
        ge=0,
        description="Seconds an open circuit breaker pauses the role before one probe call "
        "(default 30).",
    )


# Every caller of the LLM gateway, by the role name its settings are looked up under.
LLM_ROLES = (
    "designer",
    "planner",
    "generator",
    "teacher",
    "user_simulator",
    "reflector",
    "labeller",
    "single_agent",
    "learner",
)


class ModelPrice(Section):
    """What one model costs, for models litellm prices at $0 or not at all (self-hosted)."""

    input_per_mtok: float = Field(default=0.0, ge=0.0, description="USD per 1M prompt tokens.")
    output_per_mtok: float = Field(default=0.0, ge=0.0, description="USD per 1M completion tokens.")
    gpu_hour: float = Field(
        default=0.0,
        ge=0.0,
        description="USD per hour of the server's GPUs (all of them), shared among the requests "
        "in flight: an attempt costs latency x gpu_hour / 3600 / requests in flight.",
    )


class LLMSection(Section):
    """Model settings: a default and per-role overrides, prices and the spend caps."""

    default: ModelSettings = Field(default_factory=ModelSettings)
    roles: dict[str, ModelSettings] = Field(
        default_factory=dict, description="Per-role overrides of llm.default."
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Prices by litellm model string, used when litellm prices a reply at $0 "
        "or not at all.",
    )
    budget_usd: float | None = Field(
        default=None,
        gt=0.0,
        description="Most USD the campaign's model calls may cost, all rounds and roles "
        "together (counted from its llm_calls rows); a call past it raises BudgetExceeded.",
    )
    round_budget_usd: float | None = Field(
        default=None,
        gt=0.0,
        description="Most USD one round's model calls may cost, every role together, the "
        "learner's evaluation and its user simulator included (counted from the llm_calls rows "
        "of that round; the Reflector's review of a round counts toward it); a call past it "
        "raises BudgetExceeded naming llm.round_budget_usd, the round stops, and a resume with "
        "a larger cap finishes it.",
    )

    @field_validator("roles")
    @classmethod
    def _known_roles(cls, roles: dict[str, ModelSettings]) -> dict[str, ModelSettings]:
        # A misspelt role would otherwise silently fall back to llm.default.
        unknown = sorted(set(roles) - set(LLM_ROLES))
        if unknown:
            raise ValueError(f"unknown role {unknown[0]!r}; roles are {list(LLM_ROLES)}")
        return roles


class AblationsSection(Section):
    """The paper's ablations, as switches at the same budget."""

    no_feedback: bool = Field(
        default=False, description="Reflector and Designer get no learner feedback."
    )
    no_reflector: bool = Field(default=False, description="The space is never revised.")
    no_designer: bool = Field(default=False, description="The Planner samples the space alone.")
    single_agent: bool = Field(
        default=False,
        description="One agent proposes task and trajectory together: an LLM call (one "
        "repair turn) when a model is configured for role single_agent, else the "
        "programmatic Generator and teacher as one agent, without Repair.",
    )
    fixed_state: bool = Field(
        default=False, description="Initial space and allocation frozen for every round."
    )


class CampaignConfig(Section):
    """A whole campaign file."""

    campaign: CampaignSection = Field(default_factory=CampaignSection)
    lake: LakeSection = Field(default_factory=LakeSection)
    agents: AgentsSection = Field(default_factory=AgentsSection)
    llm: LLMSection = Field(default_factory=LLMSection)
    ablations: AblationsSection = Field(default_factory=AblationsSection)


def _set_path(tree: dict[str, Any], dotted: str, value: Any, source: str) -> None:
    parts = [p for p in dotted.split(".")]
    if not all(parts):
        raise ConfigError(f"{source}: bad key path {dotted!r}")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{source}: {dotted}: {part!r} is not a section")
        node = child
    node[parts[-1]] = value


def _parse_scalar(text: str) -> Any:
    # YAML scalars so `--set campaign.rounds=5` is an int and `--set x=null` is None.
    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


def _format_error(error: ValidationError) -> str:
    first = error.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "config"
    if first["type"] == "extra_forbidden":
        return f"config error: unknown key {loc!r}"
    message = first["msg"].removeprefix("Value error, ")
    got = first.get("input")
    shown = f" (got {got!r})" if not isinstance(got, dict | list) and got is not None else ""
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"config error: {loc}: {message}{shown}{more}"


def load_config(
    path: Path | None = None,
    overrides: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    data: Mapping[str, Any] | None = None,
) -> CampaignConfig:
    """Read, merge and validate a campaign config; ConfigError on any problem.

    Args:
        path: A campaign YAML file.
        overrides: ``key.path=value`` items, applied last.
        environ: Environment to read ``EVOSYN_*`` from (default: the process environment).
        data: The config as a mapping, instead of a file (deployments pass it inline).
    """
    tree: dict[str, Any] = json.loads(json.dumps(dict(data))) if data is not None else {}
    if path is not None and data is not None:
        raise ConfigError("config error: give a config file or inline data, not both")
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text("utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config error: file not found: {path}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"config error: {path} is not UTF-8 text") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark else ""
            raise ConfigError(f"config error: {path}{where} is not valid YAML") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config error: {path} must hold a mapping of sections")
        tree = loaded or {}
    env = os.environ if environ is None else environ
    for name in sorted(env):
        if name.startswith(ENV_PREFIX) and name not in NON_CONFIG_ENV:
            dotted = name.removeprefix(ENV_PREFIX).lower().replace("__", ".")
            _set_path(tree, dotted, _parse_scalar(env[name]), f"environment {name}")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"config error: --set {item!r} must look like key.path=value")
        _set_path(tree, key.strip(), _parse_scalar(value), f"--set {item}")
    try:
        return CampaignConfig.model_validate(tree)
    except ValidationError as exc:
        raise ConfigError(_format_error(exc)) from None
