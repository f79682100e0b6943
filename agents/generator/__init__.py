"""The Generator: grounds a blueprint into a concrete τ²-bench task in the domain's database."""

from evosyn.agents.generator.base import Generator, GeneratorRejection

__all__ = ["Generator", "GeneratorRejection"]
