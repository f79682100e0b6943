"""What a report reads from the lake: named read-only SQL queries and their parsed rows.

Each query is kept with its text, so the report can write it out and a user can rerun it
with ``evosyn sql``. Campaign ids are checked against the lake's safe-id pattern before they
are put into a query, so the SQL files are plain, parameter-free statements.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evosyn.agents.learner.base import USER_SIMULATOR_KINDS
from evosyn.agents.learner.diagnostic import OFFICIAL
from evosyn.buckets import BUCKETS
from evosyn.environments.features import (
    COMPUTATIONS,
    SET_KEYS,
    UNDERIVABLE_PATTERNS,
    factor_values,
)
from evosyn.records import SAFE_ID, Factor, FactorStatus
from evosyn.report.metrics import Sample
from evosyn.storage.lake import Lake
from evosyn.storage.sql import queries as run_queries
from evosyn.storage.sql import query

#: Realized keys whose value a sample's factor of the same name takes (structural factors).
STRUCTURAL = frozenset(
    {
        "task_family",
        "difficulty_profile",
        "computation",
        *(
            f"num_{k}"
            for k in ("read", "write", "compute", "transfer", "tool_calls", "numeric_args")
        ),
    }
)
#: Factor values no gold trajectory can show; left out of the reference sets.
UNDERIVABLE = {"tool_use_pattern": UNDERIVABLE_PATTERNS}
#: Derived properties used by the interaction templates, with their reference values.
DERIVED_VALUES: dict[str, list[str]] = {
    "state_change": ["none", "single", "multiple"],
    "computation": list(COMPUTATIONS),
    "num_write": list(BUCKETS),
}
#: The paper's interaction templates (factor pairs).
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("task_family", "tool_use_pattern"),
    ("task_family", "expected_outcome"),
    ("tool_use_pattern", "state_change"),
    ("computation", "num_write"),
)
#: Ordered values of ordinal properties, weakest first.
ORDINAL: dict[str, list[str]] = {
    "difficulty_profile": ["easy", "medium", "hard"],
    "computation": list(COMPUTATIONS),
} | {
    f"num_{k}": list(BUCKETS)
    for k in ("read", "write", "compute", "transfer", "tool_calls", "numeric_args")
}


class ReportError(ValueError):
    """A report that cannot be made (unknown campaign, empty lake); the message says why."""


@dataclass
class Query:
    """A named read-only query over the lake and its result."""

    name: str
    sql: str
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        """Rows as column -> value dicts."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def json_value(text: Any) -> Any:
    """A JSON column's value parsed (None for NULL; already-parsed values as they are)."""
    if text is None:
        return None
    return json.loads(text) if isinstance(text, str) else text


def _state_change(num_write: str | None) -> str | None:
    if num_write is None:
        return None
    return {"0": "none", "1": "single"}.get(num_write, "multiple")


def realized_values(realized: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Factor-style values of a gold trajectory's realized features (the structural view)."""
    out: dict[str, tuple[str, ...]] = {
        k: (v,) for k, v in realized.items() if k in STRUCTURAL or k == "difficulty_profile"
    }
    for factor, key in SET_KEYS.items():
        if key in realized:
            out[factor] = factor_values(realized, factor)
    change = _state_change(realized.get("num_write"))
    if change is not None:
        out["state_change"] = (change,)
    return out


def sample_values(
    realized: Mapping[str, str], requested: Mapping[str, list[str]]
) -> dict[str, tuple[str, ...]]:
    """A sample's factor values: structural ones re-derived, the rest as the task states them.

    Factors the tool calls cannot show (expected outcome, policy focus, interaction
    challenge) come from the synthesized task's requested values; every factor the realized
    features carry comes from them, whatever was requested.
    """
    out = {k: tuple(v) for k, v in requested.items()}
    out.update(realized_values(realized))
    return out


@dataclass
class CampaignData:
    """One campaign's rows, read from the lake by named queries."""

    campaign_id: str
    domain: str
    factors: list[Factor]
    samples: list[Sample]
    evaluations: dict[int, list[tuple[dict[str, tuple[str, ...]], bool, dict[str, str]]]]
    controls: dict[str, list[tuple[str, str]]]
    queries: dict[str, Query]

    @property
    def rounds(self) -> list[int]:
        """Rounds with verified data or evaluations, in order."""
        return sorted({s.round for s in self.samples} | set(self.evaluations))

    def reference(self) -> dict[str, list[str]]:
        """Reference value set of each active factor of the latest space (derivable values)."""
        out: dict[str, list[str]] = {}
        for f in self.factors:
            if f.status == FactorStatus.DEPRECATED:
                continue
            skip = UNDERIVABLE.get(f.name, frozenset())
            out[f.name] = [v for v in f.values if v not in skip]
        return out

    def template_reference(self) -> dict[str, list[str]]:
        """Reference values of every factor or derived property a template names."""
        return DERIVED_VALUES | self.reference()


def _sql(name: str, text: str) -> Query:
    return Query(name=name, sql=" ".join(text.split()))


def campaign_queries(cid: str) -> dict[str, Query]:
    """The report's queries for campaign ``cid``."""
    if not SAFE_ID.match(cid):
        raise ReportError(f"campaign id {cid!r} is not a valid id (letters, digits, _ . -)")
    w = f"campaign_id = '{cid}'"
    user_kinds = ", ".join(f"'{k}'" for k in sorted(USER_SIMULATOR_KINDS))
    qs = [
        _sql("campaign", f"SELECT domain, name, seed FROM campaigns WHERE {w}"),
        _sql(
            "spaces",
            f"SELECT round, version, factors FROM spaces WHERE {w} ORDER BY version",
        ),
        _sql(
            "verified_samples",
            f"""SELECT v.round, v.task_id, v.realized, t.requested,
            json_extract_string(j.messages, '$[*].tool_calls[*].name') AS tool_calls
            FROM verifications v
            JOIN tasks t ON t.campaign_id = v.campaign_id AND t.task_id = v.task_id
            JOIN trajectories j ON j.campaign_id = v.campaign_id
              AND j.trajectory_id = v.trajectory_id
            WHERE v.{w} AND v.passed ORDER BY v.round, v.task_id""",
        ),
        _sql(
            "evaluations",
            f"""SELECT round, task_id, success, realized FROM evaluations
            WHERE {w} AND split = 'diagnostic' ORDER BY round, task_id""",
        ),
        # The fixed set (the official diagnostic split, the same every round) compares across
        # rounds; the whole diagnostic set grows with each round's held-out synthesized tasks.
        _sql(
            "success_by_round",
            f"""SELECT round,
            avg(success::INTEGER) FILTER (WHERE starts_with(task_id, '{OFFICIAL}'))
              AS fixed_success,
            count(*) FILTER (WHERE success AND starts_with(task_id, '{OFFICIAL}'))
              AS fixed_successes,
            count(*) FILTER (WHERE starts_with(task_id, '{OFFICIAL}')) AS fixed_n,
            avg(success::INTEGER) AS all_success, count(*) AS all_n
            FROM evaluations WHERE {w} AND split = 'diagnostic' GROUP BY round ORDER BY round""",
        ),
        # Episodes the user simulator broke are unscored: in no success rate above, counted here.
        _sql(
            "user_faults_by_round",
            f"""SELECT round, count(*) AS user_faults FROM unscored_episodes
            WHERE {w} AND split = 'diagnostic' AND kind IN ({user_kinds})
            GROUP BY round ORDER BY round""",
        ),
        _sql(
            "fixed_set_trials",
            f"""SELECT round, split_part(task_id, '#trial', 1) AS task, count(*) AS trials,
            count(*) FILTER (WHERE success) AS successes
            FROM evaluations WHERE {w} AND split = 'diagnostic'
              AND starts_with(task_id, '{OFFICIAL}')
            GROUP BY ALL ORDER BY round, task""",
        ),
        _sql(
            "verified_by_round",
            f"""SELECT round, count(*) FILTER (WHERE passed) AS verified, count(*) AS checked
            FROM verifications WHERE {w} GROUP BY round ORDER BY round""",
        ),
        _sql(
            "patterns_by_round",
            f"""SELECT round, realized->>'functional_pattern' AS pattern, count(*) AS n
            FROM verifications WHERE {w} AND passed GROUP BY ALL ORDER BY round, n DESC""",
        ),
        _sql(
            "probes",
            f"""SELECT round, name, distribution, failure_rate, coverage, cmi, cmi_null, p_value
            FROM probes WHERE {w} ORDER BY round, name""",
        ),
        _sql(
            "reflections",
            f"""SELECT round, action, new_factor->>'name' AS new_factor,
            new_factor->>'origin' AS origin, evidence, rationale, new_factor AS factor_record,
            reviews, next_space_version
            FROM reflections WHERE {w} ORDER BY round""",
        ),
        _sql(
            "budgets",
            f"""SELECT round, objective, sum(budget) AS budget FROM directions WHERE {w}
            GROUP BY ALL ORDER BY round, objective""",
        ),
    ]
    return {q.name: q for q in qs}


def load_campaign(lake: Lake, cid: str) -> CampaignData:
    """Run the report's queries for ``cid`` and parse their rows.

    Raises:
        ReportError: If the campaign is not in the lake or has no space.
    """
    queries = campaign_queries(cid)
    # Every report query asks about cid alone: its files answer them.
    results = run_queries(lake, [q.sql for q in queries.values()], cid)
    for q, (columns, rows) in zip(queries.values(), results, strict=True):
        q.columns, q.rows = columns, rows
    campaign = queries["campaign"].records()
    spaces = queries["spaces"].records()
    if not campaign:
        known = sorted({str(r[0]) for r in query(lake, "SELECT campaign_id FROM campaigns")[1]})
        raise ReportError(
            f"campaign {cid!r} is not in the lake at {lake.location}; known campaigns: "
            f"{', '.join(known) or 'none'}"
        )
    if not spaces:
        raise ReportError(f"campaign {cid!r} has no synthesis space in the lake")
    factors = [Factor.model_validate(f) for f in json_value(spaces[-1]["factors"])]
    samples: list[Sample] = []
    controls: dict[str, list[tuple[str, str]]] = {}
    for row in queries["verified_samples"].records():
        realized = json_value(row["realized"]) or {}
        requested = json_value(row["requested"]) or {}
        decisive = realized.get("decisive_signature", "none")
        samples.append(
            Sample(
                round=int(row["round"]),
                values=sample_values(realized, requested),
                pattern=realized.get("functional_pattern", "none"),
                sequence=tuple(row["tool_calls"] or ()),
                decisive=() if decisive in ("none", "") else tuple(decisive.split(" > ")),
            )
        )
        refusal = requested.get("expected_outcome") == ["refuse"]
        for factor, key in SET_KEYS.items():
            wanted = set(requested.get(factor, [])) - UNDERIVABLE.get(factor, frozenset())
            if wanted and key in realized:
                # Every requested value must show: the pair matches iff wanted <= realized.
                shown = wanted & set(realized[key].split(";"))
                pair = (";".join(sorted(wanted)), ";".join(sorted(shown)))
                controls.setdefault(factor, []).append(pair)
        for factor, values in requested.items():
            if len(values) != 1 or factor not in realized or factor not in STRUCTURAL:
                continue
            if factor == "task_family" and refusal and realized.get("num_write") == "0":
                continue  # a refusal writes nothing, so its family cannot show
            controls.setdefault(factor, []).append((values[0], realized[factor]))
    evaluations: dict[int, list[tuple[dict[str, tuple[str, ...]], bool, dict[str, str]]]] = {}
    for row in queries["evaluations"].records():
        realized = json_value(row["realized"]) or {}
        evaluations.setdefault(int(row["round"]), []).append(
            (realized_values(realized), bool(row["success"]), realized)
        )
    return CampaignData(
        campaign_id=cid,
        domain=str(campaign[0]["domain"]),
        factors=factors,
        samples=samples,
        evaluations=evaluations,
        controls=controls,
        queries=queries,
    )
