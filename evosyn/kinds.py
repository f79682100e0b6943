"""Every role's kinds as the config check needs them, without the code that implements them.

``agents.<role>.kind`` names a kind. The catalog here declares each kind of each role: what the
rest of the system needs to know of it without branching on names (:class:`Kind`: the ``llm``
roles whose models it calls, whether it needs a GPU, whether it is grounded) and its own
settings, a pydantic model of the keys written flat in the role's section beside the keys every
kind shares. The config is validated against this catalog alone, so loading one imports no
role's code (τ²-bench, litellm, the prompts). Each kind's builder registers under its name
beside its code (:class:`evosyn.agents.registry.Registry`) and takes these facts from here.

A kind from outside the repository is declared (:func:`declare`) and registered by a module
that a package installed beside evosyn names, under the kind, in the entry-point group
``evosyn.<role>`` (``evosyn.learner``, ...); the module is loaded when a config names a kind
the catalog lacks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ProgrammaticTeacherSettings(BaseModel):
    """The programmatic teacher's own settings."""

    model_config = ConfigDict(extra="forbid")

    mistake_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=0.5,
        description="Share of rollouts with a seeded mistake (a write skipped or charged to the "
        "wrong payment method) that the Verifier must reject and Repair fix.",
    )


class Weakness(BaseModel):
    """A planted weakness of the simulated learner over one realized feature."""

    model_config = ConfigDict(extra="forbid")

    feature: str = Field(description="Realized feature, e.g. num_write.")
    values: list[str] = Field(min_length=1, description="Feature values the learner is weak on.")
    penalty: float = Field(gt=0.0, le=1.0, description="Share of success lost when untrained.")


class SimulatedSettings(BaseModel):
    """The simulated learner's own settings."""

    model_config = ConfigDict(extra="forbid")

    weaknesses: list[Weakness] = Field(default_factory=list, description="Planted weaknesses.")
    base_success: dict[str, float] = Field(
        default_factory=lambda: {"easy": 0.95, "medium": 0.85, "hard": 0.75},
        description="Success by realized difficulty before any weakness.",
    )
    mastery_scale: float = Field(
        default=30.0,
        gt=0.0,
        description="Training samples in a weak region for 63% mastery.",
    )
    familiarity_penalty: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Share of success lost on a task none of whose realized "
        "values (familiarity_features) the training data shows; it shrinks as the data shows "
        "them more often, so volume and variety of the data count. 0 turns it off.",
    )
    familiarity_scale: float = Field(
        default=10.0,
        gt=0.0,
        description="Training samples sharing a task's value of a feature "
        "for 63% familiarity with it.",
    )
    familiarity_features: list[str] = Field(
        default_factory=lambda: [
            "task_family",
            "difficulty_profile",
            "num_read",
            "num_write",
            "num_tool_calls",
            "computation",
            "functional_pattern",
        ],
        description="Realized features whose values familiarity counts.",
    )
    draw_stream: str = Field(
        default="",
        description="Names the stream of evaluation draws. Runs of one seed "
        "with the same stream share their random numbers (common random numbers); experiments "
        "give each arm its own unless experiment.common_random_numbers is set.",
    )


class ICLSettings(BaseModel):
    """The ICL learner's own settings."""

    model_config = ConfigDict(extra="forbid")

    demonstrations: int = Field(
        default=3, ge=0, description="Verified trajectories shown per task."
    )


class ServingSettings(BaseModel):
    """How a learner with checkpoints (SFT, RL) keeps its runs and serves them to evaluate."""

    model_config = ConfigDict(extra="forbid")

    work_dir: str = Field(
        default=".evosyn-cache/train", description="Local folder of exports and runs."
    )
    endpoint: str | None = Field(
        default=None,
        description="An already-running OpenAI-compatible server of the checkpoint.",
    )
    serve_command: list[str] = Field(
        default_factory=lambda: [
            "vllm",
            "serve",
            "{checkpoint}",
            "--served-model-name",
            "{name}",
            "--port",
            "{port}",
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "hermes",
            "--max-model-len",
            "{max_len}",
        ],
        description="Server started for a checkpoint ({checkpoint} {name} {port}).",
    )
    serve_port: int = Field(default=8000, ge=1, le=65535, description="Server port.")
    serve_timeout_s: float = Field(
        default=900.0, gt=0, description="Seconds to wait for the server."
    )


class SFTSettings(ServingSettings):
    """The SFT learner's own settings."""

    recipe: dict[str, Any] = Field(
        default_factory=dict,
        description="TrainRecipe fields (model, epochs, gpus, ...); paper defaults.",
    )
    train_command: list[str] = Field(
        default_factory=lambda: ["llamafactory-cli", "train"],
        description="Command the rendered YAML is appended to.",
    )


class RLSettings(ServingSettings):
    """The RL learner's own settings; it serves and evaluates as the SFT learner does."""

    rl: dict[str, Any] = Field(
        default_factory=dict,
        description="RLRecipe fields (model, generations, max_steps, ...); GRPO "
        "from Qwen3-8B by default.",
    )
    rl_python: str | None = Field(
        default=None,
        description="Interpreter with torch, TRL and LLaMA-Factory that runs its "
        "GRPO script; None: the interpreter running evosyn.",
    )


@dataclass(frozen=True)
class Kind:
    """One kind of a role, as the config check and the roles' scheduling need to know it."""

    name: str
    models: tuple[str, ...] = ()
    """The ``llm`` roles whose models it calls (each must have a model configured)."""
    gpu: bool = False
    """Whether it needs a GPU (it then runs on the ``gpu`` work pool by default)."""
    grounded: bool = False
    """A Generator that builds tasks with the domain's own builders: it can honour only the
    factors the domain registered (``DomainPlugin.realizable``); any other may be asked any."""
    settings: type[BaseModel] | None = None
    """Its own settings, read from the role's section beside the shared keys; None: none."""


_KINDS: dict[str, dict[str, Kind]] = {
    role: {kind.name: kind for kind in declared}
    for role, declared in {
        "designer": (Kind("programmatic"), Kind("llm", models=("designer",)), Kind("none")),
        "planner": (Kind("programmatic"), Kind("llm", models=("planner",))),
        "generator": (Kind("programmatic", grounded=True), Kind("llm", models=("generator",))),
        "teacher": (
            Kind("programmatic", settings=ProgrammaticTeacherSettings),
            Kind("llm", models=("teacher", "user_simulator")),
        ),
        "verifier": (Kind("programmatic"),),
        "verifier.nl_judge": (Kind("none"), Kind("llm", models=("nl_judge",))),
        "verifier.realize_judge": (Kind("none"), Kind("llm", models=("realize_judge",))),
        "reflector": (Kind("programmatic"), Kind("llm", models=("reflector",)), Kind("none")),
        "learner": (
            Kind("simulated", settings=SimulatedSettings),
            Kind("icl", settings=ICLSettings),
            Kind("sft", settings=SFTSettings, gpu=True),
            Kind("rl", settings=RLSettings, gpu=True),
        ),
    }.items()
}
"""Role (``learner``; a judge of the Verifier: ``verifier.nl_judge``) -> its kinds by name."""


def group(role: str) -> str:
    """The entry-point group of ``role``'s kinds from outside the repository: ``evosyn.<role>``."""
    return f"evosyn.{role}"


def declare(role: str, kind: Kind) -> Kind:
    """Add ``kind`` to ``role``'s kinds: a kind from outside the repository, when its module loads.

    ValueError if ``role`` has a kind of that name already.
    """
    if kind.name in _KINDS[role]:
        raise ValueError(f"agents.{role}.kind: {kind.name!r} is declared twice")
    _KINDS[role][kind.name] = kind
    return kind


def names(role: str) -> list[str]:
    """The names of ``role``'s declared kinds and of its group's entry points, sorted."""
    return sorted({*_KINDS[role], *(e.name for e in entry_points(group=group(role)))})


def find(role: str, name: str) -> Kind | None:
    """Kind ``name`` of ``role``, loading its entry point if none is declared; None if none.

    ValueError in one line if the entry point fails to load (the config check reports it).
    """
    if name not in _KINDS[role]:
        for entry in entry_points(group=group(role), name=name):
            try:
                entry.load()
            except Exception as exc:  # a broken plug-in is a config error, not a crash
                first = str(exc).splitlines()[0] if str(exc) else ""
                raise ValueError(
                    f"entry point {name!r} of {group(role)} ({entry.value}) failed to load: "
                    f"{type(exc).__name__}: {first}"
                ) from None
    return _KINDS[role].get(name)


def get(role: str, name: str) -> Kind:
    """Kind ``name`` of ``role``; ValueError listing the kinds there are if it has none."""
    found = find(role, name)
    if found is None:
        raise ValueError(f"unknown {role} implementation {name!r}; choose one of {names(role)}")
    return found


def settings(
    role: str, name: str, values: Mapping[str, Any], shared: Iterable[str]
) -> BaseModel | None:
    """Kind ``name``'s own settings from ``values``, its section's other keys.

    ValueError naming the first key its settings lack: which kind declares it, or the keys
    the kind accepts (``shared``, the section's own, and its settings'). A key of another
    kind holding that kind's default is dropped: an override that switches the kind can
    clear what the base config set for the old one.
    """
    own = get(role, name).settings
    fields = own.model_fields if own is not None else {}
    kept: dict[str, Any] = {}
    for key, value in values.items():
        if key in fields:
            kept[key] = value
            continue
        owners = {
            other.name: other.settings
            for other in _KINDS[role].values()
            if other.settings is not None and key in other.settings.model_fields
        }
        if not owners:
            accepts = sorted({*shared, *fields})
            raise ValueError(
                f"unknown key {key!r} for kind {name!r}; it accepts {', '.join(accepts)}"
            )
        if not any(_is_default(model, key, value) for model in owners.values()):
            kinds = " and ".join(repr(owner) for owner in sorted(owners))
            default = json.dumps(owners[min(owners)]().model_dump(mode="json")[key])
            raise ValueError(
                f"{key!r} is a setting of kind {kinds}, not of kind {name!r} (drop it, or "
                f"set it to {default}, its default, where an override switches the kind)"
            )
    return own.model_validate(kept) if own is not None else None


def _is_default(model: type[BaseModel], key: str, value: Any) -> bool:
    """Whether ``value`` is ``model``'s default of setting ``key``, as the model reads it."""
    try:
        return bool(getattr(model.model_validate({key: value}), key) == getattr(model(), key))
    except ValueError:  # not a value of it, or a model with a setting that has no default
        return False
