"""EvoSyn's agents: Designer, Planner, Generator, Teacher, Verifier, Reflector."""
