"""A blind weakness sweep: planted weaknesses drawn by a pre-registered seed, with a null.

A sweep file names a base campaign, the arms, the seeds and a **registration seed**. From the
registration seed alone it draws, for every campaign seed, where the simulated learner is weak:

- a **single** weakness: a feature drawn uniformly from ``features``, then one of its values,
  planted at each of ``penalties`` (one cell per penalty; the cells of a seed share the draw,
  so they differ only in the penalty);
- **several** weaknesses at once (``several.count`` distinct features, a value each, at
  ``several.penalty``), one more cell;
- the **null** (``null: true``): no weakness at all, one more cell, where every detection is a
  false one.

A value can be drawn when ``min_tasks`` or more of the domain's official diagnostic tasks
realize it and at most ``max_share`` of them do (a weakness nothing measures, or one that is
most of the set, says nothing). Every realized feature can be drawn, not only those the
Reflector probes: tool-use pattern, tool-call count, compute steps, functional pattern, and
values the seed space already holds (task family, difficulty). The draws depend on the
registration seed, the seeds and the candidates, never on a result, so they are fixed before
anything runs; ``evosyn experiment run`` prints them before its first campaign and the report
(``evosyn report --sweep``) opens with them.

Each cell is an :class:`~evosyn.experiment.Experiment` named ``SWEEP.CELL`` (campaign ids
``SWEEP.CELL-ARM-sSEED``), its seeds' weaknesses planted through ``experiment.seed_set``; the
experiment flow runs them one after another, resumably.

Example (``deployments/experiments/airline-blind-sweep.yaml``)::

    sweep:
      name: airline-blind-sweep
      campaign: ../campaigns/airline-offline.yaml
      registration_seed: 3701
      seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
      penalties: [0.35, 0.7]
      several: {count: 3, penalty: 0.5}
    arms:
      evosyn: {}
      r_zero: {campaign.strategy: r_zero}
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evosyn.config import ConfigError, load_config
from evosyn.environments.features import factor_values
from evosyn.experiment import (
    Experiment,
    ExperimentSection,
    Seeds,
    load_file,
    names_campaigns,
    read_yaml,
)

#: Every realized feature a weakness may be drawn on, by default.
ALL_FEATURES = (
    "task_family",
    "difficulty_profile",
    "tool_use_pattern",
    "num_read",
    "num_write",
    "num_compute",
    "num_tool_calls",
    "num_numeric_args",
    "computation",
    "functional_pattern",
)


class SeveralSection(BaseModel):
    """The cell with several weaknesses at once."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(ge=2, description="Weaknesses planted at once, on distinct features.")
    penalty: float = Field(gt=0.0, le=1.0, description="Penalty of each of them.")


class SweepSection(BaseModel):
    """What the sweep draws and runs."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Sweep name; prefixes every cell's experiment name.")
    campaign: str = Field(description="Base campaign YAML, relative to the sweep file.")
    registration_seed: int = Field(
        description="Pre-registered seed: draws every planted weakness, before any run."
    )
    seeds: Seeds = Field(min_length=1, description="Campaign seeds; every cell and arm runs each.")
    penalties: list[float] = Field(
        min_length=1, description="Penalties of the single drawn weakness, one cell each."
    )
    several: SeveralSection | None = Field(
        default=None, description="A cell with several drawn weaknesses at once."
    )
    null_cell: bool = Field(default=True, description="A cell with no weakness: the null.")
    features: list[str] = Field(
        default_factory=lambda: list(ALL_FEATURES),
        min_length=1,
        description="Realized features a weakness may be drawn on.",
    )
    min_tasks: int = Field(
        default=3, ge=1, description="Fewest official diagnostic tasks realizing a drawn value."
    )
    max_share: float = Field(
        default=0.4,
        gt=0.0,
        le=1.0,
        description="Largest share of the official diagnostic tasks realizing a drawn value.",
    )
    alpha: float = Field(
        default=0.05,
        gt=0.0,
        lt=1.0,
        description="Level of the one-sided test that an arm steered data into a weak region.",
    )
    reference: str = Field(default="evosyn", description="The arm compared with the baselines.")
    set: dict[str, Any] = Field(
        default_factory=dict, description="Config overrides (key.path -> value) for every run."
    )
    final_test: bool = Field(
        default=False, description="Evaluate each run's last round on the official test split."
    )
    common_random_numbers: bool = Field(
        default=False, description="Arms of a seed share the simulated learner's draws."
    )

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return names_campaigns(value, f"{value}.null-arm-s0")

    @field_validator("penalties")
    @classmethod
    def _penalties(cls, value: list[float]) -> list[float]:
        if any(not 0.0 < p <= 1.0 for p in value):
            raise ValueError(f"every penalty must lie in (0, 1]: {value}")
        if len({cell_of(p) for p in value}) != len(value):
            raise ValueError(f"penalties repeat (to the percent): {value}")
        return value


class Region(BaseModel):
    """A feature value a weakness may be planted on, with its support in the diagnostic set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    feature: str
    value: str
    tasks: int = Field(description="Official diagnostic tasks realizing the value.")

    def weakness(self, penalty: float) -> dict[str, Any]:
        """The planted weakness (``agents.learner.weaknesses`` item) at ``penalty``."""
        return {"feature": self.feature, "values": [self.value], "penalty": penalty}

    @property
    def label(self) -> str:
        """``feature=value``."""
        return f"{self.feature}={self.value}"


class Draws(BaseModel):
    """The pre-registered draws of a sweep, per campaign seed."""

    model_config = ConfigDict(extra="forbid")

    single: dict[int, Region]
    several: dict[int, list[Region]] = Field(default_factory=dict)

    def regions(self, seed: int) -> list[Region]:
        """Every region drawn for ``seed`` (the single one first), each once."""
        out = [self.single[seed]]
        out += [r for r in self.several.get(seed, []) if r not in out]
        return out


class Sweep(BaseModel):
    """A whole sweep file."""

    model_config = ConfigDict(extra="forbid")

    sweep: SweepSection
    arms: dict[str, dict[str, Any]] = Field(
        min_length=2, description="Arm name -> config overrides (key.path -> value)."
    )
    base_dir: Path = Field(default=Path("."), description="Folder of the sweep file.")

    @model_validator(mode="after")
    def _reference_is_an_arm(self) -> Sweep:
        if self.sweep.reference not in self.arms:
            raise ValueError(
                f"sweep.reference {self.sweep.reference!r} is not an arm ({sorted(self.arms)})"
            )
        return self

    @property
    def name(self) -> str:
        """The sweep's name."""
        return self.sweep.name

    def cell_names(self) -> list[str]:
        """The cells, in run order: one per penalty, then ``several``, then ``null``."""
        names = [cell_of(p) for p in self.sweep.penalties]
        names += ["several"] if self.sweep.several is not None else []
        return names + (["null"] if self.sweep.null_cell else [])

    def experiment_name(self, cell: str) -> str:
        """The experiment name of ``cell``."""
        return f"{self.name}.{cell}"

    def domain(self) -> str:
        """The base campaign's domain."""
        return load_config(self.base_dir / self.sweep.campaign, [], {}).campaign.domain

    def cells(self, draws: Draws) -> dict[str, Experiment]:
        """Cell name -> the experiment that runs it, the draws planted per seed."""
        s = self.sweep
        plans: dict[str, tuple[dict[str, Any], dict[int, list[dict[str, Any]]]]] = {}
        for penalty in s.penalties:
            plans[cell_of(penalty)] = (
                {},
                {seed: [draws.single[seed].weakness(penalty)] for seed in s.seeds},
            )
        if s.several is not None:
            plans["several"] = (
                {},
                {
                    seed: [r.weakness(s.several.penalty) for r in draws.several[seed]]
                    for seed in s.seeds
                },
            )
        if s.null_cell:
            plans["null"] = ({"agents.learner.weaknesses": []}, {})
        cells = {}
        for cell, (extra, planted) in plans.items():
            section = ExperimentSection(
                name=self.experiment_name(cell),
                campaign=s.campaign,
                seeds=s.seeds,
                reference=s.reference,
                set={**s.set, **extra},
                seed_set={seed: {"agents.learner.weaknesses": w} for seed, w in planted.items()},
                common_random_numbers=s.common_random_numbers,
                final_test=s.final_test,
            )
            cells[cell] = Experiment(experiment=section, arms=self.arms, base_dir=self.base_dir)
        return cells


def cell_of(penalty: float) -> str:
    """The cell name of a single weakness at ``penalty``: ``p35`` for 0.35."""
    return f"p{round(100 * penalty):02d}"


def candidate_regions(
    realized: Iterable[Mapping[str, str]],
    features: Sequence[str],
    min_tasks: int,
    max_share: float,
) -> list[Region]:
    """Feature values that ``min_tasks`` to ``max_share`` of the tasks realize, in file order.

    ``realized``: the realized values of each official diagnostic task's gold trajectory.
    """
    tasks = list(realized)
    out = []
    for feature in features:
        counts = Counter(v for r in tasks for v in set(factor_values(r, feature)))
        for value in sorted(counts):
            if min_tasks <= counts[value] <= max_share * len(tasks):
                out.append(Region(feature=feature, value=value, tasks=counts[value]))
    return out


def draw(
    candidates: Sequence[Region],
    registration_seed: int,
    seeds: Sequence[int],
    several: int | None = None,
) -> Draws:
    """Each seed's planted regions, from the registration seed and the candidates alone.

    A single draw picks a feature uniformly among those with a candidate, then one of its
    values; ``several`` picks that many distinct features, a value each. Every draw has its own
    generator keyed by (registration seed, kind, campaign seed), so adding seeds leaves the
    earlier seeds' draws as they were.
    """
    by_feature: dict[str, list[Region]] = {}
    for region in candidates:
        by_feature.setdefault(region.feature, []).append(region)
    features = list(by_feature)
    if not features:
        raise ConfigError("config error: sweep: no feature value meets min_tasks and max_share")
    if several is not None and several > len(features):
        raise ConfigError(
            f"config error: sweep.several.count: {several} weaknesses on distinct features, "
            f"but only {len(features)} features have a candidate value"
        )
    single, many = {}, {}
    for seed in seeds:
        rng = random.Random(f"evosyn-sweep|{registration_seed}|single|{seed}")
        single[seed] = rng.choice(by_feature[rng.choice(features)])
        if several is not None:
            rng = random.Random(f"evosyn-sweep|{registration_seed}|several|{seed}")
            many[seed] = [rng.choice(by_feature[f]) for f in rng.sample(features, several)]
    return Draws(single=single, several=many)


def plan(sweep: Sweep, realized: Iterable[Mapping[str, str]]) -> tuple[list[Region], Draws]:
    """The sweep's candidates and draws over the given diagnostic tasks' realized values."""
    s = sweep.sweep
    candidates = candidate_regions(realized, s.features, s.min_tasks, s.max_share)
    count = None if s.several is None else s.several.count
    return candidates, draw(candidates, s.registration_seed, s.seeds, count)


def official_realized(domain: str) -> list[dict[str, str]]:
    """The realized values of the domain's official diagnostic tasks (seconds: loads it)."""
    from evosyn.agents.learner.diagnostic import official_diagnostic

    return [dict(item.realized) for item in official_diagnostic(domain)]


def load_sweep(path: Path, overrides: Iterable[str] = ()) -> Sweep:
    """Read and validate a sweep file; ConfigError with a one-line reason.

    ``overrides`` (``key.path=value``) apply to every run, after the file's ``set``.
    """
    return load_file(path, Sweep, "sweep", overrides)


def is_sweep_file(path: Path) -> bool:
    """Whether ``path`` holds a sweep (a ``sweep`` section) rather than an experiment."""
    return "sweep" in read_yaml(path)
