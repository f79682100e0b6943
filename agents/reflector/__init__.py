"""The Reflector: turns feedback into the next synthesis state."""

from evosyn.agents.reflector.base import REFLECTORS, Reflector
from evosyn.agents.reflector.llm import LLMReflector
from evosyn.agents.reflector.programmatic import ProgrammaticReflector
from evosyn.environments.kit.grounding import REALIZABLE

__all__ = ["REALIZABLE", "REFLECTORS", "LLMReflector", "ProgrammaticReflector", "Reflector"]
