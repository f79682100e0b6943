"""Prefect flows of the closed loop (``evosyn.flows``): thin composition of tasks."""
