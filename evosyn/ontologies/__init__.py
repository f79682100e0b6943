"""Seed synthesis spaces (the paper's initial ontologies) as YAML data files."""
