"""A campaign's verified data as a Hugging Face ``datasets`` dataset with a dataset card.

One row per verified trajectory, split into ``train`` and ``diagnostic`` (the tasks the campaign
held out of training). Written twice: ``save_to_disk`` (``datasets.load_from_disk``) and Parquet
per split under ``data/`` (what the Hub's viewer and ``load_dataset`` read), beside a
``README.md`` card made with ``huggingface_hub``'s :class:`~huggingface_hub.DatasetCard`: the
factor schema and realized values, lineage (campaign, rounds, config digest), the quality audit
of ``evosyn audit``, the shapes of its gold against the official tasks', the contamination
report, and token and cost totals.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from evosyn.names import global_id
from evosyn.storage import Lake

if TYPE_CHECKING:
    from evosyn.records import Campaign, LLMCall, SynthesisSpace
    from evosyn.report.audit import RoundAudit

DISK_DIR = "dataset"
PARQUET_DIR = "data"
CARD_FILE = "README.md"
#: The variable ``--push`` reads the Hub token from (as huggingface_hub does).
TOKEN_VARIABLE = "HF_TOKEN"


class HFExportError(ValueError):
    """A campaign that cannot be exported, or a push that cannot be made; one line says why."""


class HFExport(BaseModel):
    """What an export wrote."""

    model_config = ConfigDict(extra="forbid")

    campaign_id: str
    domain: str
    rounds: list[int] = Field(description="Rounds whose verified data is in the dataset.")
    splits: dict[str, int] = Field(description="Split -> rows.")
    config_digest: str = Field(description="sha256 of the campaign's stored config.")
    tokens_in: int = Field(ge=0, description="Prompt tokens of the campaign's model calls.")
    tokens_out: int = Field(ge=0, description="Completion tokens of its model calls.")
    cost: float = Field(ge=0.0, description="USD of its model calls with a known price.")
    files: list[str] = Field(default_factory=list, description="Paths written.")
    pushed_to: str | None = Field(default=None, description="Hub repository, when pushed.")


def config_digest(campaign: Campaign) -> str:
    """``sha256:`` of the campaign's config as canonical JSON (sorted keys)."""
    text = json.dumps(campaign.config, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _rows(lake: Lake, campaign_id: str, up_to: int | None) -> list[dict[str, Any]]:
    from evosyn.agents.learner.diagnostic import is_held_out
    from evosyn.agents.learner.export import to_openai
    from evosyn.environments import get_domain
    from evosyn.environments.kit.dialogue import stock_system_prompt
    from evosyn.records import SynthTask, Trajectory, Verification

    verified = [
        v
        for v in lake.read(Verification, campaign_id)
        if v.passed and (up_to is None or v.round <= up_to)
    ]
    trajectories = {t.trajectory_id: t for t in lake.read(Trajectory, campaign_id)}
    tasks = {t.task_id: t for t in lake.read(SynthTask, campaign_id)}
    rows = []
    for v in sorted(verified, key=lambda v: (v.round, v.trajectory_id)):
        trajectory, task = trajectories.get(v.trajectory_id), tasks.get(v.task_id)
        if trajectory is None or task is None:
            missing = "trajectory" if trajectory is None else "task"
            raise HFExportError(f"trajectory {v.trajectory_id}: verified but its {missing} is gone")
        domain = get_domain(task.domain)
        tools = domain.tool_schemas("assistant")
        chat = to_openai(trajectory, stock_system_prompt(domain), tools)
        rows.append(
            {
                "id": chat["id"],
                "task_id": global_id(campaign_id, task.task_id),
                "campaign_id": campaign_id,
                "round": v.round,
                "domain": task.domain,
                "split": "diagnostic" if is_held_out(task.task_id) else "train",
                "messages": [_message(m) for m in chat["messages"]],
                "tools": json.dumps(tools, ensure_ascii=False),
                "requested": [{"factor": f, "values": vs} for f, vs in task.requested.items()],
                "realized": [{"factor": f, "value": x} for f, x in v.realized.items()],
                "reward": v.reward,
                "repair_attempts": v.repair_attempts,
                "task": task.task.model_copy(
                    update={"id": global_id(campaign_id, task.task_id)}
                ).model_dump_json(),
            }
        )
    return rows


def _message(m: dict[str, Any]) -> dict[str, Any]:
    # One shape for every message, so Arrow infers one struct type for the column; tool calls
    # keep OpenAI's nesting ({id, type, function: {name, arguments}}), as the card says.
    calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
        }
        for c in m.get("tool_calls") or []
    ]
    return {
        "role": m["role"],
        "content": m.get("content"),
        "tool_calls": calls,
        "tool_call_id": m.get("tool_call_id"),
    }


def export_hf(
    lake: Lake,
    campaign_id: str,
    out: Path,
    up_to: int | None = None,
    push: str | None = None,
) -> HFExport:
    """Write the dataset (disk + Parquet) and its card to ``out``; push to ``push`` if given.

    Pushing needs ``HF_TOKEN`` in the environment; without it nothing is written and
    HFExportError says so (checked first, so a long export does not end in that error).
    """
    token = os.environ.get(TOKEN_VARIABLE)
    if push is not None and not token:
        raise HFExportError(f"--push {push} needs a Hugging Face token in {TOKEN_VARIABLE}")
    try:
        import datasets
    except ImportError:
        raise HFExportError(
            "evosyn export hf needs the datasets package: pip install 'evosyn[hf]'"
        ) from None
    from evosyn.records import Campaign, LLMCall, SynthesisSpace
    from evosyn.report.audit import audit_campaign

    lake.check_campaign(campaign_id)
    campaign = lake.read(Campaign, campaign_id)[0]
    rows = _rows(lake, campaign_id, up_to)
    if not rows:
        scope = f"rounds <= {up_to}" if up_to is not None else "any round"
        raise HFExportError(f"campaign {campaign_id!r} has no verified samples in {scope}")
    by_split: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_split.setdefault(row.pop("split"), []).append(row)
    dataset = datasets.DatasetDict(
        {name: datasets.Dataset.from_list(split) for name, split in sorted(by_split.items())}
    )
    calls = lake.read(LLMCall, campaign_id)
    rounds = sorted({r["round"] for r in rows})
    spaces = sorted(lake.read(SynthesisSpace, campaign_id), key=lambda s: s.version)
    audits = [a for a in audit_campaign(lake, campaign_id, campaign.domain) if a.round in rounds]
    report = HFExport(
        campaign_id=campaign_id,
        domain=campaign.domain,
        rounds=rounds,
        splits={name: len(split) for name, split in dataset.items()},
        config_digest=config_digest(campaign),
        tokens_in=sum(c.tokens_in for c in calls),
        tokens_out=sum(c.tokens_out for c in calls),
        cost=sum(c.cost or 0.0 for c in calls),
    )
    card = dataset_card(report, campaign, spaces[-1] if spaces else None, rows, audits, calls)
    out.mkdir(parents=True, exist_ok=True)
    dataset.save_to_disk(str(out / DISK_DIR))
    files = [str(out / DISK_DIR)]
    for name, split in dataset.items():
        path = out / PARQUET_DIR / f"{name}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        split.to_parquet(str(path))
        files.append(str(path))
    card.save(str(out / CARD_FILE))
    files.append(str(out / CARD_FILE))
    report = report.model_copy(update={"files": files})
    if push is not None:
        dataset.push_to_hub(push, token=token)
        card.push_to_hub(push, repo_type="dataset", token=token)
        report = report.model_copy(update={"pushed_to": push})
    return report


def dataset_card(
    report: HFExport,
    campaign: Campaign,
    space: SynthesisSpace | None,
    rows: list[dict[str, Any]],
    audits: list[RoundAudit],
    calls: list[LLMCall],
) -> Any:
    """The dataset card: metadata header plus the sections the module docstring lists."""
    from huggingface_hub import DatasetCard, DatasetCardData

    from evosyn.report.audit import quality_rows, shape_rows

    data = DatasetCardData(
        pretty_name=f"EvoSyn {campaign.domain} campaign {campaign.campaign_id}",
        language=["en"],
        tags=["evosyn", "tau2-bench", campaign.domain, "tool-use", "synthetic"],
        task_categories=["text-generation"],
        configs=[
            {
                "config_name": "default",
                "data_files": [
                    {"split": name, "path": f"{PARQUET_DIR}/{name}.parquet"}
                    for name in report.splits
                ],
            }
        ],
    )
    lines = [
        f"# EvoSyn {campaign.domain} campaign `{campaign.campaign_id}`",
        "",
        "Verified τ²-bench dialogues synthesized by EvoSyn: each row is a conversation whose "
        "replay reached reward 1 against the task's own evaluation criteria. `train` is what the "
        "campaign trained on; `diagnostic` the tasks it held out.",
        "",
        "## Lineage",
        "",
        "| | |",
        "|---|---|",
        f"| campaign | `{campaign.campaign_id}` ({campaign.name}) |",
        f"| domain | {campaign.domain} |",
        f"| rounds | {', '.join(map(str, report.rounds))} |",
        f"| config digest | `{report.config_digest}` |",
        f"| created | {campaign.created_at.isoformat()} |",
        f"| seed | {campaign.seed} |",
        *(f"| rows in {name} | {n} |" for name, n in report.splits.items()),
        "",
        "Ids are campaign-qualified (`CAMPAIGN:LOCAL`), unique across campaigns.",
        "",
        "## Factor schema",
        "",
    ]
    if space is not None:
        lines += [
            f"Synthesis space version {space.version}.",
            "",
            "| factor | values | origin | since round | status |",
            "|---|---|---|---|---|",
            *(
                f"| {f.name} | {', '.join(f.values)} | {f.origin.value} | "
                f"{f.round_introduced} | {f.status.value} |"
                for f in space.factors
            ),
            "",
        ]
    # Rows also carry realized properties that are not factors (entities, signatures).
    factors = {f.name for f in space.factors} if space is not None else set()
    realized = Counter(
        (r["factor"], r["value"]) for row in rows for r in row["realized"] if r["factor"] in factors
    )
    lines += [
        "## Realized factor values",
        "",
        "Values re-derived from each verified trajectory's tool calls (not what was requested); "
        "the `realized` column also holds the other realized properties.",
        "",
        "| factor | value | rows |",
        "|---|---|---|",
        *(f"| {f} | {v} | {n} |" for (f, v), n in sorted(realized.items())),
        "",
        "## Quality audit",
        "",
        "From `evosyn audit` (rules: EvoSyn's docs/quality.md), per round.",
        "",
        "| measure | " + " | ".join(f"round {a.round}" for a in audits) + " |",
        "|---|" + "---|" * len(audits),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in quality_rows(audits)]
    lines += [
        "",
        "## Shapes against the official tasks",
        "",
        "The gold of the verified tasks beside τ²-bench's official `base` split, per round: the "
        "sets of write tools a gold calls (write combinations; how many the rows have, how many "
        "the official tasks have, how many of the official ones were made), the share with two "
        "or more kinds of write, and where the domain has them the sets of write tools the user "
        "calls on the device and the fault kinds set up. Read by EvoSyn's "
        "`evosyn.environments.shapes`.",
        "",
        "| shape | " + " | ".join(f"round {a.round}" for a in audits) + " |",
        "|---|" + "---|" * len(audits),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in shape_rows(audits)]
    lines += [
        "",
        "## Contamination",
        "",
        "Synthesized tasks overlapping an official τ²-bench task (any split), by kind of "
        "overlap, and requests rejected for it before they became samples.",
        "",
        "| overlap | " + " | ".join(f"round {a.round}" for a in audits) + " |",
        "|---|" + "---|" * len(audits),
    ]
    for kind in audits[0].contamination if audits else {}:
        lines.append(f"| {kind} | " + " | ".join(str(a.contamination[kind]) for a in audits) + " |")
    lines.append(
        "| rejected as contaminated | "
        + " | ".join(str(a.rejections.get("contamination", 0)) for a in audits)
        + " |"
    )
    by_role = Counter[str]()
    for c in calls:
        by_role[c.role] += 1
    lines += [
        "",
        "## Tokens and cost",
        "",
        f"{len(calls)} model calls through EvoSyn's gateway"
        + (f" ({', '.join(f'{r}: {n}' for r, n in sorted(by_role.items()))})" if calls else "")
        + f": {report.tokens_in} prompt tokens, {report.tokens_out} completion tokens, "
        f"${report.cost:.4f} where the price was known. A campaign of programmatic roles calls "
        "no model.",
        "",
        "## Columns",
        "",
        "`id` (trajectory), `task_id`, `campaign_id`, `round`, `domain`, `messages` (the agent's "
        "view in OpenAI's chat format: `role`, `content`, `tool_calls` as `{id, type: "
        '"function", function: {name, arguments}}` with `arguments` a JSON string, '
        "`tool_call_id`; a message without calls has an empty `tool_calls`), `tools` (JSON "
        "schemas), `requested` and "
        "`realized` factor values, `reward`, `repair_attempts`, `task` (the τ²-bench task as "
        "JSON; `evosyn export tau2` writes the same tasks as a runnable task set).",
    ]
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines) + "\n")
