"""A model-backed Generator and the factors the Reflector invented: found, defined, checked.

A blueprint names an invented factor only by name; its definition and values live in the
blueprint's synthesis space (:func:`lake_spaces` finds it in the campaign lake). A Generator
that writes tasks with a model (the LLM Generator, the single synthesis agent) defines each
such factor in its prompt by that definition (:func:`defined`), asks the model to state the
task's value of it, and holds the reply to the requested value and to what the labeller reads
off the task by the definition alone (:func:`check_stated`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

from tau2.data_model.tasks import Task

from evosyn.agents.feedback.probes import is_labelled
from evosyn.agents.labeller.cases import task_text
from evosyn.agents.labeller.llm import LabelCase, LLMLabeller
from evosyn.records import Blueprint, Factor, SynthesisSpace

SpaceSource = Callable[[str, int], SynthesisSpace | None]
"""(campaign id, space version) -> that synthesis space, if it can be found."""


def lake_spaces(
    root: str, s3_endpoint: str | None = None, cache_dir: str | None = None
) -> SpaceSource:
    """A source reading spaces from the lake at ``root``, each (campaign, version) once."""
    found: dict[tuple[str, int], SynthesisSpace | None] = {}
    lock = threading.Lock()

    def read(campaign_id: str, version: int) -> SynthesisSpace | None:
        # Imported here: most Generators never ask (only blueprints with invented factors do).
        from evosyn.storage import Lake
        from evosyn.storage.lake import NoLakeError

        with lock:
            if (campaign_id, version) not in found:
                try:
                    spaces = Lake(root, s3_endpoint, cache_dir, create=False).read(
                        SynthesisSpace, campaign_id
                    )
                except NoLakeError:
                    spaces = []
                found[(campaign_id, version)] = next(
                    (s for s in spaces if s.version == version), None
                )
            return found[(campaign_id, version)]

    return read


def invented_in(
    blueprint: Blueprint, known: Collection[str], spaces: SpaceSource | None
) -> dict[str, Factor]:
    """The labelled factors (invented by the Reflector) ``blueprint`` selects, by name.

    ``known`` are the factors the Generator defines itself: a blueprint of those alone is
    never looked up. Without ``spaces``, or where the blueprint's space is not found, none.
    """
    if spaces is None or all(name in known for name in blueprint.selections):
        return {}
    space = spaces(blueprint.campaign_id, blueprint.space_version)
    if space is None:
        return {}
    return {f.name: f for f in space.factors if f.name in blueprint.selections and is_labelled(f)}


def defined(invented: Mapping[str, Factor]) -> dict[str, Factor]:
    """``invented`` with each factor's guidance replaced by its definition and values.

    The model is told the factor in the words the labeller that checks it reads.
    """
    return {
        name: f.model_copy(
            update={
                "guidance": f"{f.definition.rstrip('.')}. Values: {', '.join(f.values)}; "
                "a labeller reads the task's value by this definition alone"
            }
        )
        for name, f in invented.items()
    }


def check_stated(
    task: Task,
    blueprint: Blueprint,
    invented: Mapping[str, Factor],
    stated: Any,
    labeller: LLMLabeller | None,
) -> None:
    """Raise ValueError unless ``task`` states, and ``labeller`` reads, each requested value.

    ``stated`` is the reply's ``factor_values``: invented factor -> the task's value. Without
    a labeller only the stated values are checked.
    """
    if not isinstance(stated, dict):
        raise ValueError(
            f"factor_values must state the task's value of {', '.join(sorted(invented))}"
        )
    problems = []
    for name in sorted(invented):
        wanted = blueprint.selections[name][0]
        if stated.get(name) != wanted:
            problems.append(
                f"factor_values.{name} is {stated.get(name)!r}; the blueprint requests {wanted!r}"
            )
    if problems:
        raise ValueError("; ".join(problems))
    if labeller is None:
        return
    case = LabelCase(task_id=task.id, text=task_text(task))
    for name in sorted(invented):
        wanted = blueprint.selections[name][0]
        read = labeller.label(invented[name], [case])
        if task.id in read.unlabelled:
            problems.append(
                f"the labeller could not read {name} off the task "
                f"({read.unlabelled[task.id]}): make the requested {wanted!r} evident"
            )
        elif read.values[task.id] != wanted:
            problems.append(
                f"the labeller reads {name} = {read.values[task.id]!r} off the task, not the "
                f"requested {wanted!r}: change the task so it plainly has {wanted!r}"
            )
    if problems:
        raise ValueError("; ".join(problems))
