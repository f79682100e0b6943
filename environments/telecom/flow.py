"""What the telecom caller chooses, which writes move money, which ids stay internal."""

from __future__ import annotations

from collections.abc import Mapping

from evosyn.environments.information_flow import Choice, FlowRules, Seen
from evosyn.environments.kit import choices
from evosyn.environments.spoken_forms import number_forms

_LINE = choices.entity("phone_number")
_SAY_LINE = choices.say_record("the line with number {phone_number}", "phone_number")


def _say_gb(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
    """An amount of data as a caller says it, in digits ("1 GB", "1.5 GB").

    Digits, not "one GB": the amount is then a number the caller stated, not one the agent
    derived (which would make the refuel's computation ``aggregate``).
    """
    return f"{number_forms(value)[0]} GB"


_LINE_WRITES = ("refuel_data", "enable_roaming", "disable_roaming", "suspend_line", "resume_line")

RULES = FlowRules(
    choices=(
        *(
            Choice(tool, "line_id", "the line", _LINE, "which line you mean", _SAY_LINE)
            for tool in _LINE_WRITES
        ),
        Choice(
            "refuel_data",
            "gb_amount",
            "how much data",
            choices.any_of(
                choices.counted("gb", "gigabytes"),
                # A rule the agent works the amount out from ("what I'm over by, plus 0.5 GB").
                choices.topic("just enough data", "what i am over", "over my limit by"),
            ),
            "how much data you want to add",
            _say_gb,
            open_detail=True,
        ),
    ),
    priced_writes=frozenset({"refuel_data", "send_payment_request"}),
    internal_ids=frozenset({"line_id", "plan_id", "device_id"}),
    identifiers={
        # A bill's number is no phone number ("could you give me the bill number?").
        r"phone number|(?<!bill )\bnumber\b(?! of)": r"\b\d{3}-\d{3}-\d{4}\b",
        r"customer id|customer ID": r"\bC\d{4}\b",
    },
)
