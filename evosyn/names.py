"""Names every layer checks (ids, domains), apart from the records so that checking is cheap.

The config and the lake check these before anything imports the record models (and τ²-bench
with them): ``evosyn sql`` needs neither.
"""

from __future__ import annotations

import re

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
"""A campaign id or file-name part: letters, digits, ``_ . -``, at most 128 characters."""

SEED_DOMAINS = ("airline", "retail", "telecom")
"""Domains with a seed ontology (``evosyn/ontologies/<domain>.yaml``)."""
