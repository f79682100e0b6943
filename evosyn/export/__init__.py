"""Exports that leave the lake for other tools: τ²-bench task sets and Hugging Face datasets.

The SFT export for LLaMA-Factory lives with the learner that trains on it
(:mod:`evosyn.agents.learner.export`). Every export names rows by campaign-qualified ids
(:func:`evosyn.names.global_id`).
"""
