"""The realization judge's prompt against a model: does it see what the hand labels see?

A plain script (not a pytest test), for a model behind an OpenAI-compatible endpoint (a vLLM
server, an API, or `evosyn bridge serve`, where someone answers the prompts by hand):

    python tests/benchmarks/realize_judge_agreement.py --api-base http://127.0.0.1:8790/v1 \\
        --model openai/realize_judge [--set tests/environments/labels/model_written_fresh2] \\
        [--concurrency 4] [--out rows.jsonl]

Each ``*.json`` of the labelled set is a dialogue a capable model wrote (``domain``,
``requested_challenges``, ``requested_persona``, ``messages``, ``labels``). The judge
(``agents/verifier/realize_judge.py``, the campaign's ``llm`` judge) is asked, in one call per
dialogue, about EVERY requested challenge and the requested persona kind (not only those the
detectors miss, to measure the judge alone). Scored the "judged" way of
``tests/environments/test_model_written_labels.py``: a challenge on the dialogues that
requested it, right when it is in ``labels.challenges_acted`` exactly when the judge says acted;
the persona kind on the dialogues whose persona line asks for it, against
``labels.personas_shown``. Three tables, precision and recall of "acted / shown" per challenge,
per persona kind and overall:

* **judge**: the judge alone;
* **detectors**: ``dialogue_acts.realized_challenges`` / ``realized_personas`` alone;
* **detectors, then judge**: synthesis's rule (:func:`evosyn.agents.synthesis._judged`):
  realized when the detectors find it or, where they do not, the judge does.

Then every disagreement of the judge with the labels, with its turn and reason (and whether
the detectors found the item). A dialogue whose judge call fails is listed and left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from tau2.data_model.message import Message

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.verifier.base import judge_settings
from evosyn.agents.verifier.realize_judge import (
    PERSONAS,
    ROLE,
    LLMRealizeJudge,
    RealizeVerdict,
)
from evosyn.config import CampaignConfig
from evosyn.environments.dialogue_acts import persona_kind, realized_challenges, realized_personas
from evosyn.space import seed_space

DEFAULT_SET = Path(__file__).resolve().parents[1] / "environments/labels/model_written_fresh2"
MESSAGES = TypeAdapter(list[Message])


@dataclass(frozen=True)
class Item:
    """One requested item of one dialogue, its label and the readings of it."""

    dialogue: str
    domain: str
    kind: str  # "challenge" or "persona"
    name: str
    label: bool
    detected: bool
    judged: bool
    turn: int | None
    reason: str


def _offered(domain: str) -> tuple[str, ...]:
    return tuple(
        value
        for factor in seed_space(domain, "realize-agreement").factors
        if factor.name == "interaction_challenge"
        for value in factor.values
    )


def _kind(requested: str | None) -> str | None:
    """The persona kind a dialogue requests: its short name, or read from its persona line."""
    if not requested:
        return None
    return requested if requested in PERSONAS else persona_kind(requested)


def load(folder: Path) -> list[dict[str, Any]]:
    """The labelled dialogues of ``folder``, by file name."""
    return [json.loads(p.read_text()) | {"_file": p.stem} for p in sorted(folder.glob("*.json"))]


def grade(dialogue: dict[str, Any], settings: GatewaySettings, seed: int) -> list[Item] | Exception:
    """Every requested item of ``dialogue``, read by the detectors and by the judge."""
    name = str(dialogue.get("id") or dialogue["_file"])
    domain = dialogue["domain"]
    messages = MESSAGES.validate_python(dialogue["messages"])
    challenges = list(dict.fromkeys(dialogue.get("requested_challenges") or []))
    persona = _kind(dialogue.get("requested_persona"))
    labels = dialogue["labels"]
    judge = LLMRealizeJudge(Gateway(ROLE, settings, seed=seed))
    try:
        verdicts = judge.judge(domain, messages, challenges, persona)
    except Exception as exc:  # a failed call or an unusable reply: reported, left out
        return exc
    by_item: dict[tuple[str, str], RealizeVerdict] = {(v.kind, v.item): v for v in verdicts}
    acted = realized_challenges(messages, _offered(domain)) if challenges else set()
    shown = realized_personas(messages, dialogue.get("requested_persona")) if persona else set()
    items = [
        Item(
            name,
            domain,
            "challenge",
            c,
            c in (labels.get("challenges_acted") or []),
            c in acted,
            by_item[("challenge", c)].realized,
            by_item[("challenge", c)].turn,
            by_item[("challenge", c)].reason,
        )
        for c in challenges
    ]
    if persona is not None:
        verdict = by_item[("persona", persona)]
        items.append(
            Item(
                name,
                domain,
                "persona",
                persona,
                persona in (labels.get("personas_shown") or []),
                persona in shown,
                verdict.realized,
                verdict.turn,
                verdict.reason,
            )
        )
    return items


def _score(items: Iterable[Item], said: Callable[[Item], bool]) -> str:
    rows = list(items)
    tp = sum(1 for i in rows if i.label and said(i))
    fp = sum(1 for i in rows if not i.label and said(i))
    fn = sum(1 for i in rows if i.label and not said(i))
    tn = len(rows) - tp - fp - fn
    p = f"{tp / (tp + fp):.2f}" if tp + fp else "-"
    r = f"{tp / (tp + fn):.2f}" if tp + fn else "-"
    return f"P {p:>4} R {r:>4} (tp {tp:>3} fp {fp:>2} fn {fn:>2} tn {tn:>2})"


READINGS: dict[str, Callable[[Item], bool]] = {
    "judge": lambda i: i.judged,
    "detectors": lambda i: i.detected,
    "detectors, then judge": lambda i: i.detected or i.judged,
}


def table(items: list[Item], title: str, said: Callable[[Item], bool]) -> str:
    """Precision and recall of ``said`` per challenge, per persona kind and overall."""
    lines = [f"## {title}", f"{'item':30}{'n':>4}  precision / recall of acted-shown"]
    for kind in ("challenge", "persona"):
        rows = [i for i in items if i.kind == kind]
        for name in sorted({i.name for i in rows}):
            some = [i for i in rows if i.name == name]
            lines.append(f"{name:30}{len(some):>4}  {_score(some, said)}")
        if rows:
            lines.append(f"{'all ' + kind + 's':30}{len(rows):>4}  {_score(rows, said)}")
    lines.append(f"{'all':30}{len(items):>4}  {_score(items, said)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET, help="labelled set directory")
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--model", default="openai/realize_judge")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write every item's row here (JSON lines)")
    args = parser.parse_args(argv)
    cfg = CampaignConfig.model_validate(
        {
            "agents": {"verifier": {"realize_judge": {"kind": "llm"}}},
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
    settings = judge_settings(cfg, ROLE)
    dialogues = load(args.set)
    if not dialogues:
        print(f"no dialogues in {args.set}", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(max(1, args.concurrency)) as pool:
        graded = list(pool.map(lambda d: grade(d, settings, args.seed), dialogues))
    items: list[Item] = []
    failed: list[str] = []
    for dialogue, result in zip(dialogues, graded, strict=True):
        if isinstance(result, Exception):
            first = (str(result).splitlines() or [""])[0][:300]
            failed.append(f"  {dialogue['_file']}: {type(result).__name__}: {first}")
        else:
            items += result
    print(
        f"{args.set}: {len(dialogues)} dialogues, {len(items)} requested items "
        f"({sum(i.kind == 'challenge' for i in items)} challenges, "
        f"{sum(i.kind == 'persona' for i in items)} personas); judge model {args.model}"
    )
    if failed:
        print(f"{len(failed)} dialogues failed (left out):", *failed, sep="\n")
    for title, said in READINGS.items():
        print()
        print(table(items, title, said))
    wrong = [i for i in items if i.judged != i.label]
    print()
    print(f"## judge disagreements ({len(wrong)})")
    for i in sorted(wrong, key=lambda i: (i.dialogue, i.kind, i.name)):
        label = "acted" if i.label else "not acted"
        judged = "acted" if i.judged else "not acted"
        turn = f" at [{i.turn}]" if i.turn is not None else ""
        detectors = "found" if i.detected else "missed"
        print(
            f"  {i.dialogue} {i.kind} {i.name}: label {label}, judge {judged}{turn} "
            f"(detectors {detectors}): {i.reason}"
        )
    both = [i for i in items if (i.detected or i.judged) != i.label and i.judged == i.label]
    if both:
        print()
        print(f"## detectors-then-judge disagreements the judge alone gets right ({len(both)})")
        for i in sorted(both, key=lambda i: (i.dialogue, i.kind, i.name)):
            print(f"  {i.dialogue} {i.kind} {i.name}: detectors found it, label not acted")
    if args.out:
        with args.out.open("w") as f:
            for i in items:
                f.write(json.dumps(i.__dict__) + "\n")
    return 1 if failed and not items else 0


if __name__ == "__main__":
    sys.exit(main())
