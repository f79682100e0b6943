"""Experiments: the paper's protocol as conditions (arms) × seeds over one campaign config.

An experiment file names a base campaign config, overrides for every run, the seeds, and the
arms, each arm a set of config overrides (a strategy, an ablation switch). Every (arm, seed)
is one campaign with the id ``EXPERIMENT-ARM-sSEED``; every arm of a seed shares the seed, so
arms are compared on the same diagnostic tasks and the same cold start. Each arm draws the
simulated learner's evaluation from its own random stream (``agents.learner.draw_stream``,
the arm's name; other learners have none) unless ``experiment.common_random_numbers`` shares
them. ``evosyn experiment run`` runs them (``flows/experiment.py``) and ``evosyn report
--experiment`` compares them.

Example (``deployments/experiments/airline-simulated.yaml``)::

    experiment:
      name: airline-simulated
      campaign: ../campaigns/airline-offline.yaml   # relative to this file
      seeds: [0, 1, 2, 3, 4]
      reference: evosyn
      set: {lake.root: lake}
    arms:
      evosyn: {}
      fixed_state: {ablations.fixed_state: true}
      r_zero: {campaign.strategy: r_zero}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.names import SAFE_ID


def _distinct(seeds: list[int]) -> list[int]:
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds repeat: {seeds}")
    return seeds


Seeds = Annotated[list[int], AfterValidator(_distinct)]
"""Campaign seeds of an experiment or sweep, none twice."""


def names_campaigns(name: str, campaign_id: str) -> str:
    """``name`` if ``campaign_id``, an id made from it, is a safe id; ValueError otherwise."""
    if not SAFE_ID.match(campaign_id):
        raise ValueError("must be letters, digits, '_', '.' or '-' (it names campaign ids)")
    return name


class ExperimentSection(BaseModel):
    """What the experiment runs: a base campaign, the seeds, overrides for every run."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Experiment name; prefixes every arm's campaign id.")
    campaign: str = Field(description="Base campaign YAML, relative to the experiment file.")
    seeds: Seeds = Field(min_length=1, description="Campaign seeds; every arm runs each.")
    reference: str = Field(
        default="evosyn", description="Arm the others are compared with (paired differences)."
    )
    set: dict[str, Any] = Field(
        default_factory=dict, description="Config overrides (key.path -> value) for every arm."
    )
    seed_set: dict[int, dict[str, Any]] = Field(
        default_factory=dict,
        description="Config overrides of every arm at one seed (seed -> key.path -> value), "
        "after set: a sweep plants each seed's drawn weaknesses this way (evosyn.sweep).",
    )
    common_random_numbers: bool = Field(
        default=False,
        description="Arms of a seed share the simulated learner's evaluation draws (common "
        "random numbers): a variance reduction for paired differences, at the price that arms "
        "whose training changed nothing print identical figures. Off: each arm draws its own "
        "(agents.learner.draw_stream = the arm's name).",
    )
    final_test: bool = Field(
        default=True,
        description="Evaluate each run's last round on the domain's official test split, three "
        "trials per task at temperature 1 (the paper's protocol; the report's pass^k).",
    )

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return names_campaigns(value, f"{value}-arm-s0")


class Experiment(BaseModel):
    """A whole experiment file."""

    model_config = ConfigDict(extra="forbid")

    experiment: ExperimentSection
    arms: dict[str, dict[str, Any]] = Field(
        min_length=1, description="Arm name -> config overrides (key.path -> value)."
    )
    base_dir: Path = Field(default=Path("."), description="Folder of the experiment file.")

    @field_validator("arms")
    @classmethod
    def _safe_arms(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name in value:
            if not SAFE_ID.match(name) or "-" in name:
                raise ValueError(f"arm name {name!r}: letters, digits, '_' or '.' only")
        return value

    @model_validator(mode="after")
    def _reference_is_an_arm(self) -> Experiment:
        if self.experiment.reference not in self.arms:
            raise ValueError(
                f"experiment.reference {self.experiment.reference!r} is not an arm "
                f"({sorted(self.arms)})"
            )
        return self

    @property
    def name(self) -> str:
        """The experiment's name."""
        return self.experiment.name

    @property
    def reference(self) -> str:
        """The arm the others are compared with."""
        return self.experiment.reference

    def grid(self) -> list[tuple[str, int]]:
        """Every (arm, seed) to run, seed by seed, so early results cover every arm."""
        return [(arm, seed) for seed in self.experiment.seeds for arm in self.arms]

    def campaign_id(self, arm: str, seed: int) -> str:
        """The campaign id of ``arm`` at ``seed``."""
        return f"{self.name}-{arm}-s{seed}"

    def config(
        self, arm: str, seed: int, environ: Mapping[str, str] | None = None
    ) -> CampaignConfig:
        """The campaign config of ``arm`` at ``seed``; ConfigError naming the arm if invalid."""
        items = [
            *_items(self.experiment.set),
            *_items(self.experiment.seed_set.get(seed, {})),
            *_items(self.arms[arm]),
            f"campaign.seed={seed}",
            f"campaign.id={self.campaign_id(arm, seed)}",
            f"campaign.name={self.name}-{arm}",
        ]
        path = self.base_dir / self.experiment.campaign
        try:
            cfg = load_config(path, items, environ)
            # Only a learner kind with a stream of draws (the simulated one) has the setting.
            if (
                not self.experiment.common_random_numbers
                and "draw_stream" in cfg.agents.learner.model_dump()
            ):
                stream = f"agents.learner.draw_stream={json.dumps(arm)}"
                cfg = load_config(path, [*items, stream], environ)
            return cfg
        except ConfigError as exc:
            raise ConfigError(f"arm {arm}: {exc}") from None

    def lake_config(self, environ: Mapping[str, str] | None = None) -> CampaignConfig:
        """The config every arm shares the lake settings of (the reference arm's)."""
        return self.config(self.reference, self.experiment.seeds[0], environ)


def _items(overrides: Mapping[str, Any]) -> list[str]:
    # key.path=value strings load_config parses back as YAML scalars (JSON is YAML).
    return [f"{key}={json.dumps(value)}" for key, value in overrides.items()]


def load_experiment(path: Path, overrides: Iterable[str] = ()) -> Experiment:
    """Read and validate an experiment file; ConfigError with a one-line reason.

    ``overrides`` (``key.path=value``) apply to every arm, after the file's ``set``.
    """
    exp = load_file(path, Experiment, "experiment", overrides)
    for arm in exp.arms:
        exp.config(arm, exp.experiment.seeds[0])  # every arm's config is valid before any runs
    return exp


M = TypeVar("M", bound=BaseModel)


def load_file(path: Path, model: type[M], section: str, overrides: Iterable[str] = ()) -> M:
    """An experiment or sweep file as ``model``; ConfigError with a one-line reason.

    ``section`` is its first section (``experiment``, ``sweep``), whose ``set`` the
    ``overrides`` (``key.path=value``) extend; ``base_dir`` is the file's folder.
    """
    data = read_yaml(path)
    if section not in data:
        raise ConfigError(f"config error: {path} has no {section} section")
    extra = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"config error: --set {item!r} must look like key.path=value")
        extra[key.strip()] = yaml.safe_load(value) if value else ""
    try:
        loaded = model.model_validate({**data, "base_dir": Path(path).resolve().parent})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or section
        message = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"config error: {path}: {loc}: {message}") from None
    getattr(loaded, section).set.update(extra)
    return loaded


def read_yaml(path: Path) -> dict[str, Any]:
    """The mapping an experiment or sweep file holds; ConfigError with a one-line reason."""
    try:
        data = yaml.safe_load(Path(path).read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config error: file not found: {path}") from None
    except yaml.YAMLError:
        raise ConfigError(f"config error: {path} is not valid YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config error: {path} must hold a mapping")
    return data
