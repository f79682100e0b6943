"""The Reflector: turns feedback into the next synthesis state."""

from evosyn.agents.reflector.base import Reflector
from evosyn.agents.reflector.llm import LLMReflector
from evosyn.agents.reflector.programmatic import ProgrammaticReflector
from evosyn.environments.kit.grounding import REALIZABLE

__all__ = ["REALIZABLE", "LLMReflector", "ProgrammaticReflector", "Reflector"]
