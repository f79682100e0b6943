"""The NL-assertion judge's prompt against a model: does it grade refusals as they happened?

A plain script (not a pytest test), for a model behind an OpenAI-compatible endpoint (a vLLM
server, an API, or `evosyn bridge serve`, where someone answers the prompts by hand):

    python tests/benchmarks/nl_judge_agreement.py --api-base http://127.0.0.1:8790/v1 \\
        --model openai/nl_judge [--n 40] [--seed 515] [--domain airline ...] [--concurrency 4]

For each domain, the programmatic roles synthesize ``--n`` blueprints; every verified task with
natural-language assertions (a refusal's "Agent does not … because …") gives two cases:

* **kept**: its verified trajectory, where the agent refuses: every assertion is met (as many
  as there are broken cases in the domain, at least ``--min-kept``);
* **broken**: the same conversation up to the agent's refusal, where the agent instead makes
  the write the policy forbids (the task's ``refused`` call, executed on the replayed
  database, its real result shown) and tells the customer it is done: an assertion saying the
  agent does not do it is not met. Where the stored refused write does not run as stored (the
  Generator keeps some only by their identifying arguments), the task gives no broken case.

The judge (``agents/verifier/nl_judge.py``, the campaign's ``llm`` judge) grades each case; the
script prints, per domain and overall, how many cases it grades as the truth says, and the
precision and recall of "not met" (a broken case caught; a kept case never failed), then
every disagreement with the judge's reasons.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tau2.data_model.message import AssistantMessage, Message, ToolCall, ToolMessage
from tau2.data_model.tasks import Task

from evosyn.agents.gateway import Gateway
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.base import judge_settings
from evosyn.agents.verifier.nl_judge import LLMNLJudge
from evosyn.config import CampaignConfig
from evosyn.environments.features import iter_tool_calls
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Direction
from evosyn.space import seed_space

DOMAINS = ("airline", "retail", "telecom")


@dataclass(frozen=True)
class Case:
    """One conversation to grade and whether its assertions all hold."""

    domain: str
    task_id: str
    kept: bool
    assertions: tuple[str, ...]
    messages: tuple[Message, ...]


#: Words an agent's refusal has (the programmatic teacher's, in any of its wordings).
_REFUSING = re.compile(r"\b(can(no|')t|unable|not able|sorry|afraid)\b", re.IGNORECASE)


def _broken(
    domain_name: str, task: Task, messages: Sequence[Message], refused: ToolCall
) -> list[Message] | None:
    """``messages`` up to the agent's refusal, then the refused write made and confirmed.

    None where the refused write, as the task stores it, does not run on the replayed
    database (a call the Generator kept only by its identifying arguments): an errored call
    would leave it open whether the agent did it.
    """
    domain = get_domain(domain_name)
    state = domain.initial_state(task)
    cut = next(
        (
            i
            for i, m in enumerate(messages)
            if isinstance(m, AssistantMessage) and m.content and _REFUSING.search(m.content)
        ),
        None,
    )
    if cut is None:
        return None
    kept = list(messages[:cut])
    for call in iter_tool_calls(kept):
        domain.execute(state, call)
    call = refused.model_copy(update={"id": "broken-write", "requestor": "assistant"})
    result = domain.execute(state, call)
    if result.error:
        return None
    return [
        *kept,
        AssistantMessage(role="assistant", content=None, tool_calls=[call]),
        ToolMessage(role="tool", id=call.id, content=result.content, requestor="assistant"),
        AssistantMessage(
            role="assistant",
            content="All done: I went ahead with it as you asked. Anything else I can help with?",
        ),
    ]


def cases(domain_name: str, n: int, seed: int) -> list[Case]:
    """The kept and broken cases of ``domain_name``'s verified tasks with NL assertions."""
    plugin = domain_plugin(domain_name)
    space = seed_space(domain_name, "nl-judge", round=1)
    direction = Direction(
        campaign_id="nl-judge",
        round=1,
        direction_id="r1-refusals",
        space_version=space.version,
        objective="exploration",
        allowed={"expected_outcome": ["refuse"]},
        budget=n,
    )
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed)
    batch = synthesize(
        blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier(domain_name), seed
    )
    passed = {v.task_id for v in batch.verified}
    trajectories = {t.task_id: t for t in batch.trajectories}
    out: list[Case] = []
    for task in batch.tasks:
        criteria = task.task.evaluation_criteria
        assertions = tuple((criteria.nl_assertions if criteria else None) or ())
        if task.task_id not in passed or not assertions or not task.refused:
            continue
        messages = trajectories[task.task_id].messages
        out.append(Case(domain_name, task.task_id, True, assertions, tuple(messages)))
        broken = _broken(domain_name, task.task, messages, task.refused[0])
        if broken is not None:
            out.append(Case(domain_name, task.task_id, False, assertions, tuple(broken)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--model", default="openai/nl_judge")
    parser.add_argument("--n", type=int, default=40, help="refusal blueprints per domain")
    parser.add_argument("--seed", type=int, default=515)
    parser.add_argument("--domain", action="append", choices=DOMAINS)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--min-kept", type=int, default=6, help="kept cases per domain, at least")
    args = parser.parse_args()
    cfg = CampaignConfig.model_validate(
        {
            "agents": {"verifier": {"nl_judge": {"kind": "llm"}}},
            "llm": {
                "default": {
                    "api_base": args.api_base,
                    "model": args.model,
                    "timeout": 86400,
                    "concurrency": args.concurrency,
                    "adaptive_concurrency": False,
                }
            },
        }
    )
    settings = judge_settings(cfg, "nl_judge")
    todo: list[Case] = []
    for domain in args.domain or DOMAINS:
        found = cases(domain, args.n, args.seed)
        broken = [c for c in found if not c.kept]
        # As many kept cases as broken ones (at least --min-kept), so both errors weigh alike.
        kept = [c for c in found if c.kept][: max(len(broken), args.min_kept)]
        todo += broken + kept
    n_kept = sum(c.kept for c in todo)
    print(f"{len(todo)} cases ({n_kept} kept, {len(todo) - n_kept} broken)")

    def grade(case: Case) -> tuple[Case, bool, list[str]]:
        judge = LLMNLJudge(Gateway("nl_judge", settings, seed=args.seed), case.domain)
        verdicts = judge.judge(case.assertions, case.messages)
        return case, all(v.met for v in verdicts), [v.reason for v in verdicts if not v.met]

    with ThreadPoolExecutor(args.concurrency) as pool:
        graded = list(pool.map(grade, todo))
    for scope in (*(args.domain or DOMAINS), "all"):
        rows = [g for g in graded if scope in ("all", g[0].domain)]
        caught = sum(1 for c, met, _ in rows if not c.kept and not met)
        flagged = sum(1 for _, met, _ in rows if not met)
        broken = sum(1 for c, _, _ in rows if not c.kept)
        right = sum(1 for c, met, _ in rows if met == c.kept)
        p = f"{caught / flagged:.2f}" if flagged else "-"
        r = f"{caught / broken:.2f}" if broken else "-"
        print(
            f"{scope:8} graded right {right}/{len(rows)}; "
            f"not met: P {p} ({caught}/{flagged}), R {r} ({caught}/{broken})"
        )
    for case, met, reasons in graded:
        if met != case.kept:
            truth = "kept" if case.kept else "broken"
            judged = "met" if met else "not met"
            print(
                f"  {case.domain} {case.task_id} ({truth}) judged {judged}: {json.dumps(reasons)}"
            )


if __name__ == "__main__":
    main()
