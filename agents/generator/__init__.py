"""The Generator: grounds a blueprint into a concrete τ²-bench task in the domain's database."""

from evosyn.agents.generator.base import GENERATORS, Generator, GeneratorRejection, realizable
from evosyn.agents.generator.llm import LLMGenerator

__all__ = ["GENERATORS", "Generator", "GeneratorRejection", "LLMGenerator", "realizable"]
