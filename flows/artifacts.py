"""Prefect artifacts of a round: its summary as a table, where its data and report live."""

from __future__ import annotations

import re
from collections.abc import Sequence

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from evosyn.config import CampaignConfig
from evosyn.records import RoundSummary
from evosyn.storage import Lake

# Columns of the round table, in the order the UI shows them.
SUMMARY_FIELDS = (
    "round",
    "space_version",
    "budget",
    "n_blueprints",
    "n_tasks",
    "n_verified",
    "n_rejected",
    "n_failed",
    "n_user_faults",
    "fixed_success",
    "fixed_n",
    "diagnostic_success",
    "diagnostic_n",
    "planted_success",
    "planted_n",
    "decision",
    "status",
)


def _slug(campaign_id: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", campaign_id.lower()).strip("-")


def artifact_key(campaign_id: str, round: int, kind: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes) for one round."""
    return f"evosyn-{_slug(campaign_id)}-round-{round}-{kind}"


def campaign_key(campaign_id: str) -> str:
    """The key of the campaign's artifact (a new version of it after every round)."""
    return f"evosyn-{_slug(campaign_id)}-campaign"


def campaign_markdown(campaign_id: str, summaries: Sequence[RoundSummary]) -> str:
    """The campaign so far, one row per round: decision, data and the learner's success."""
    from evosyn.agents.learner.base import USER_FAULTS
    from evosyn.cli_common import rate_text

    lines = [
        f"# {campaign_id}: {len(summaries)} round(s)",
        "",
        "| round | space | decision | verified / planned | rejected | failed | success, fixed "
        "set [95% CI] | n | success, planted slice [95% CI] | n | user faults |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        decision = (s.decision or "-").replace("|", "/")
        lines.append(
            f"| {s.round} | v{s.space_version} | {decision} | {s.n_verified} / "
            f"{s.n_blueprints} | {s.n_rejected} | {s.n_failed} | "
            f"{rate_text(s.fixed_success, s.fixed_n)} | "
            f"{s.fixed_n or '-'} | {rate_text(s.planted_success, s.planted_n)} | "
            f"{s.planted_n or '-'} | {s.n_user_faults} |"
        )
    lines += [
        "",
        "Success on the fixed set: the learner on the official diagnostic split, the same tasks "
        "every round, with a Wilson 95% interval; the planted slice is the part of it in a "
        "simulated learner's planted weakness (empty for real learners). Failed: requests "
        "that raised an error twice, stored as no rejection; a resume of the campaign retries "
        f"them. User faults: {USER_FAULTS}",
    ]
    return "\n".join(lines)


def publish_campaign_artifact(campaign_id: str, summaries: Sequence[RoundSummary]) -> None:
    """The campaign's artifact on its flow run, where a UI-triggered run lands."""
    create_markdown_artifact(
        campaign_markdown(campaign_id, summaries),
        key=campaign_key(campaign_id),
        description=f"{campaign_id}: every round so far",
    )


def summary_rows(summary: RoundSummary) -> list[dict[str, object]]:
    """The round summary as one table row (a list of rows, as Prefect's table takes)."""
    data = summary.model_dump(mode="json")
    return [{name: data[name] for name in SUMMARY_FIELDS}]


def locations_markdown(cfg: CampaignConfig, summary: RoundSummary) -> str:
    """Markdown naming the round's partitions in the lake and the command for its report.

    The lake's location is the absolute one the campaign resolved when it started, and the
    commands name it, so they run as shown from any folder.
    """
    import shlex

    cid, r = summary.campaign_id, summary.round
    root = cfg.lake.root.rstrip("/")
    where = f"--lake {shlex.quote(root)}"
    if cfg.lake.s3_endpoint:
        where += f" --set lake.s3_endpoint={shlex.quote(cfg.lake.s3_endpoint)}"
    partition = Lake.batch_path("verifications", cid, r, "*").rsplit("/", 1)[0]
    return "\n".join(
        [
            f"# {cid}, round {r}",
            "",
            f"- lake: `{root}`",
            f"- verified trajectories: `{root}/{partition}/`",
            f"- round summaries: `{root}/rounds/{cid}/`",
            "",
            "Query and report:",
            "",
            "```bash",
            f'evosyn sql "SELECT passed, count(*) FROM verifications '
            f"WHERE campaign_id = '{cid}' AND round = {r} GROUP BY 1\" {where}",
            f"evosyn report {cid} --out report/{cid} {where}",
            "```",
        ]
    )


def publish_round_artifacts(cfg: CampaignConfig, summary: RoundSummary) -> None:
    """Log the round's counts and create its table and markdown artifacts in the flow run."""
    cid, r = summary.campaign_id, summary.round
    fixed, everything = summary.fixed_success, summary.diagnostic_success
    get_run_logger().info(
        "%s round %d: %d blueprints, %d verified, %d rejected, %d failed with an error (a "
        "resume retries them), success on the fixed set %s "
        "(n=%d), on all diagnostics %s (n=%d; %d episodes the user simulator broke, "
        "unscored); decision: %s",
        cid,
        r,
        summary.n_blueprints,
        summary.n_verified,
        summary.n_rejected,
        summary.n_failed,
        "n/a" if fixed is None else f"{fixed:.3f}",
        summary.fixed_n,
        "n/a" if everything is None else f"{everything:.3f}",
        summary.diagnostic_n,
        summary.n_user_faults,
        summary.decision,
    )
    create_table_artifact(
        summary_rows(summary),
        key=artifact_key(cid, r, "summary"),
        description=f"{cid}: round {r} in counts",
    )
    create_markdown_artifact(
        locations_markdown(cfg, summary),
        key=artifact_key(cid, r, "data"),
        description=f"{cid}: where round {r}'s records and report are",
    )
