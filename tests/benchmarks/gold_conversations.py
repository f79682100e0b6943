"""The gold-conversation figures of issue 30, measured on fresh synthesis (a plain script).

    python tests/benchmarks/gold_conversations.py [--n 100] [--seed 4711] [--domain airline ...]

Per domain, synthesizes ``--n`` exploration blueprints as ``evosyn synth`` does (programmatic
roles, the replay verifier, Repair, the realize and gold gates), then reads the verified
dialogues back with the gate's own rules and two checks the gate leaves to the Teacher:

* verified share, and rejections at the gate and at realize;
* dialogues breaking each gate rule (grounding, choices, amounts, facts, failed writes told
  as done, internal ids, debris, repeated identifiers): 0 by construction, printed so a change
  that lets one through shows;
* money-moving writes priced before the "yes" (of all of them);
* rebuttals of a claimed approval before any look-up, and reservation ids asked for in
  bookings that change no reservation;
* agent turns (masked, the fixed greeting left out) that another dialogue repeats word for
  word (issue 30 asks for at most 35%).
"""

from __future__ import annotations

import argparse
import re
import time

from tau2.data_model.message import AssistantMessage, Message, UserMessage

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments import information_flow
from evosyn.environments.dialogue_acts import realized_challenges
from evosyn.environments.registry import domain_plugin, get_domain, list_domains
from evosyn.records import Direction
from evosyn.report.audit import gold_audit
from evosyn.space import seed_space

_DECLINE = re.compile(r"(don't|do not|can't|cannot) (see|find|rely|go by)", re.IGNORECASE)
_RESERVATION_ASK = re.compile(r"reservation (id|number|code)|booking (code|number)", re.I)


def _rebuttal_before_lookup(messages: list[Message]) -> bool:
    """Whether the agent declines a claim before it has made any tool call."""
    for message in messages:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            return False
        if isinstance(message, AssistantMessage) and _DECLINE.search(message.content or ""):
            return True
    return False


def _reservation_id_asked_needlessly(messages: list[Message]) -> bool:
    """Whether the agent asks for a reservation id in a booking that changes no reservation."""
    calls = [
        call for m in messages if isinstance(m, AssistantMessage) for call in m.tool_calls or []
    ]
    if not any(call.name == "book_reservation" for call in calls):
        return False
    changes = any(
        "reservation_id" in call.arguments and call.name != "get_reservation_details"
        for call in calls
    )
    asked = any(
        isinstance(m, AssistantMessage) and m.content and _RESERVATION_ASK.search(m.content)
        for m in messages
    )
    return asked and not changes


def run(domain: str, n: int, seed: int) -> dict[str, str]:
    """Synthesize ``n`` blueprints of ``domain`` and measure its verified dialogues."""
    plugin = domain_plugin(domain)
    space = seed_space(domain, "gold", round=1)
    direction = Direction(
        campaign_id="gold",
        round=1,
        direction_id="r1-uniform",
        space_version=space.version,
        objective="exploration",
        budget=n,
    )
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed)
    start = time.perf_counter()
    batch = synthesize(
        blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier(domain), seed
    )
    seconds = time.perf_counter() - start
    verified = {v.trajectory_id for v in batch.verified}
    dialogues = [t.messages for t in batch.trajectories if t.trajectory_id in verified]
    audit = gold_audit(domain, dialogues)
    rules = plugin.flow or information_flow.FlowRules()
    facts = sum(bool(information_flow.fact_breaks(rules, d)) for d in dialogues)
    failures = sum(
        bool(information_flow.failure_breaks(get_domain(domain), rules, d)) for d in dialogues
    )
    claims = [d for d in dialogues if "user_false_claim" in realized_challenges(d)]
    stages = [r.stage for r in batch.rejections]
    opened = [
        next((m.content for m in d if isinstance(m, UserMessage) and m.content), "")
        for d in dialogues
    ]
    return {
        "domain": domain,
        "verified": f"{len(verified)}/{len(blueprints)}",
        "gate/realize rejections": f"{stages.count('gate')}/{stages.count('realize')}",
        "ungrounded": str(audit.ungrounded),
        "chosen for user": str(audit.chosen_for_user),
        "priced writes": str(audit.priced),
        "facts broken": f"{facts}/{len(dialogues)}",
        "failures told as done": f"{failures}/{len(dialogues)}",
        "internal ids": str(audit.internal_ids),
        "debris": str(audit.debris),
        "repeated ids": str(audit.repeated),
        "rebuttal before look-up": f"{sum(map(_rebuttal_before_lookup, claims))}/{len(claims)}",
        "reservation id needlessly": (
            f"{sum(map(_reservation_id_asked_needlessly, dialogues))}/{len(dialogues)}"
        ),
        "shared agent turns": str(audit.shared_agent_turns),
        "distinct openings": f"{len(set(opened))}/{len(opened)}",
        "verified/s": f"{len(verified) / seconds:.1f}",
    }


def main() -> None:
    """Print the figures per domain, side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=4711)
    parser.add_argument("--domain", action="append", default=None)
    args = parser.parse_args()
    # Without --domain: every domain with a programmatic Generator and Teacher (not library).
    scripted = [d for d in list_domains() if domain_plugin(d).offers("generator")]
    rows = [run(d, args.n, args.seed) for d in args.domain or scripted]
    width = max(len(k) for k in rows[0])
    for key in rows[0]:
        print(f"{key:<{width}}  " + "  ".join(f"{r[key]:>18}" for r in rows))


if __name__ == "__main__":
    main()
