"""The Designer: allocates a round's budget over directions in the synthesis space."""

from evosyn.agents.designer.base import DESIGNERS, Designer
from evosyn.agents.designer.llm import LLMDesigner
from evosyn.agents.designer.programmatic import ProgrammaticDesigner

__all__ = ["DESIGNERS", "Designer", "LLMDesigner", "ProgrammaticDesigner"]
