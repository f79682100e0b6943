"""A campaign's figures as a page's generated blocks (``evosyn report CAMPAIGN --docs PAGE``).

docs/report.md's default-campaign section quotes the campaign ``make run`` runs, next to a
static synthesis of the same size. Its blocks are rendered here from the same tables the
campaign report computes (:mod:`evosyn.report.tables`), so a figure on the page is a figure of
``report.md``, in the same format:

- ``quality``: the intrinsic measures on the data accumulated up to each round, per campaign;
- ``success``: the learner's success on the fixed set by round, with its Wilson interval, n
  and pass^k, and on the fixed set's episodes in the simulated learner's planted weakness
  (``rounds.planted_success``, what ``campaign run`` prints);
- ``decisions``: every Reflector decision, and for a factor it added the probe's figure its
  decision cites beside the report's own conditional mutual information;
- ``controllability``: requested vs realized values per structural factor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evosyn.records import RoundSummary
from evosyn.report.data import CampaignData, load_campaign
from evosyn.report.metrics import wilson_interval
from evosyn.report.render import fmt
from evosyn.report.tables import (
    controllability_table,
    information_table,
    intrinsic_table,
    success_table,
    timeline_table,
)
from evosyn.storage.lake import Lake


def campaign_source(campaign_id: str, compare: Sequence[str] = ()) -> str:
    """The command a block of campaign ``campaign_id``'s figures names."""
    return " ".join(["evosyn report", campaign_id, *(f"--compare {c}" for c in compare)])


def _markdown(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _quality(runs: Sequence[CampaignData]) -> str:
    t = intrinsic_table(runs)
    columns = [
        "campaign",
        "round",
        "verified",
        "factor coverage",
        "combinatorial coverage",
        "factor balance",
        "interaction coverage",
        "trajectory diversity",
    ]
    at = [t.columns.index(c) for c in columns]
    return _markdown(columns, [[f"`{row[0]}`", *(row[i] for i in at[1:])] for row in t.rows])


def _rate(rate: float | None, n: int) -> str:
    if rate is None or not n:
        return fmt(None)
    ci = wilson_interval(round(rate * n), n)
    return f"{rate:.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def _success(main: CampaignData, rounds: Sequence[RoundSummary]) -> str:
    t = success_table([main])
    col = {c: i for i, c in enumerate(t.columns)}
    planted = {s.round: (s.planted_success, s.planted_n) for s in rounds}
    ks = {row[col["k (trials per task)"]] for row in t.rows} - {None}
    # The learner's trials per task are a config value, so one k names the whole column.
    k = "k" if len(ks) != 1 else str(next(iter(ks)))
    rows = [
        [
            row[col["round"]],
            f"{fmt(row[col['success, fixed set']])} {fmt(row[col['95% CI']])}",
            row[col["n (fixed set)"]],
            row[col["pass^k, fixed set"]],
            _rate(*planted.get(row[col["round"]], (None, 0))),
            planted.get(row[col["round"]], (None, 0))[1],
            row[col["success, all diagnostics"]],
            row[col["n (all diagnostics)"]],
        ]
        for row in t.rows
    ]
    header = [
        "round",
        "success, fixed set [95% CI]",
        "n (fixed set)",
        f"pass^{k}, fixed set",
        "planted weakness [95% CI]",
        "n (planted)",
        "success, all diagnostics",
        "n (all diagnostics)",
    ]
    return _markdown(header, rows)


def _decisions(main: CampaignData) -> str:
    info = information_table(main)
    col = {c: i for i, c in enumerate(info.columns)}
    # The information table marks the factor that entered the space from round r's evaluation.
    entered = {int(row[col["round"]]): row for row in info.rows if row[col["promoted"]] == "yes"}
    rows = []
    for r, effect, decision, _, _ in timeline_table(main).rows:
        if r is None:  # a seed factor, not a decision
            continue
        figures = entered.get(int(r))
        rows.append(
            [
                r,
                effect,
                decision,
                None if figures is None else figures[col["Reflector's probe CMI [p]"]],
                None if figures is None else figures[col["I(fail; z | O_r)"]],
            ]
        )
    header = [
        "decided after round",
        "takes effect in round",
        "decision",
        "its probe's CMI [p] (the decision's)",
        "I(fail; z ∣ O_r) (the report's)",
    ]
    return _markdown(header, rows)


def _controllability(main: CampaignData) -> str:
    t = controllability_table(main)
    return _markdown(["factor", "pairs", "exact match", "Spearman ρ"], t.rows)


def campaign_blocks(lake: Lake, campaign_id: str, compare: Sequence[str] = ()) -> dict[str, str]:
    """Part -> Markdown of the figures a page may quote about a campaign compared with others.

    The quality table lines ``campaign_id`` up with ``compare`` (its combinatorial coverage
    and trajectory diversity are normalised over every campaign compared); the other parts
    are ``campaign_id``'s alone.

    Raises:
        ReportError: a campaign is not in the lake.
    """
    main = load_campaign(lake, campaign_id)
    others = [load_campaign(lake, c) for c in compare]
    return {
        "quality": _quality([main, *others]),
        "success": _success(main, lake.read(RoundSummary, campaign_id)),
        "decisions": _decisions(main),
        "controllability": _controllability(main),
    }
