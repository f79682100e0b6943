"""The Labeller: reads each task's value of a factor the Reflector invented."""

from evosyn.agents.labeller.cases import (
    InputsSource,
    ProbeInputs,
    lake_inputs,
    official_tasks,
    task_text,
)
from evosyn.agents.labeller.diagnostic import label_official, label_unstated
from evosyn.agents.labeller.llm import LabelCase, Labelling, LLMLabeller, parse_labels

__all__ = [
    "InputsSource",
    "LLMLabeller",
    "LabelCase",
    "Labelling",
    "ProbeInputs",
    "label_official",
    "label_unstated",
    "lake_inputs",
    "official_tasks",
    "parse_labels",
    "task_text",
]
