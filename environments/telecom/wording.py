"""What telecom callers say and are told: phrase-grammar templates, per scenario."""

from __future__ import annotations

#: What a caller says is wrong, per symptom (phrase-grammar templates, second person).
SYMPTOM_REASONS: dict[str, tuple[str, ...]] = {
    "service": (
        "Your phone (shows|has shown) no service (since this morning|for a few hours|since "
        "yesterday)[ and you cannot make or take calls].",
        "You (cannot|can't) make calls or send texts: your phone (says it has|has) no "
        "(signal|service)[ at all].",
    ),
    "mobile_data": (
        "(Mobile data|The internet) on your phone (is not working|stopped working|barely "
        "works)[ when you are away from Wi-Fi].",
        "Your phone's (mobile data|data connection) is (very slow|not working)[ and pages do "
        "not load].",
    ),
    "mms": (
        "You (cannot|can't) send (picture messages|MMS messages|photos by text) from your "
        "phone[ (since yesterday|this week|for a few days)].",
        "(Picture messages|Photos you text) (will not|won't) send from your phone's messaging app.",
    ),
}
#: Why a caller wants to pay an overdue bill. This and the other reasons say when, never how
#: urgently ("right away"): urgency is emotional_pressure's, acted only where it is requested.
PAY_REASONS = (
    "You (received|got) a (notice|message|letter) that (one of your bills|a bill on your "
    "account) is overdue[,] and you want to pay it[ (now|today)].",
    "You want to (settle|pay) (an|the) overdue bill on your account[ (today|now|before it causes "
    "(trouble|problems))].",
    "(A bill on your account is overdue|Your account has an overdue bill); you (want|would like) "
    "to pay it[ (now|from your phone)].",
)
#: Who uses another line of the caller's account, in the caller's words.
WHOSE = "(your (daughter|son|partner|husband|wife|mother|father)|a family member)"
#: The same, opening a sentence.
WHOSE_CAP = "(Your (daughter|son|partner|husband|wife|mother|father)|A family member)"
#: The user simulator answers about the phone from its tools only.
GROUNDED = (
    "Whenever the agent asks about your phone, ground your answer on your phone's tools; never "
    "make up what they show.",
    "(Answer|Describe) (what your phone shows|anything about your phone) only from what your "
    "phone's tools (show|return); (never|do not) (make up|guess) a result.",
    "(If|When) the agent asks you to check something on your phone, use your phone's tools and "
    "(say|report) what they (show|return)[ in your own words]; (never|don't) invent it.",
)
#: Why a caller asks for roaming on another line of their account.
ROAMING_FOR = (
    WHOSE_CAP + " (is travelling|is) (abroad|in {country}) and mobile data (does not work|is not "
    "working) on (their|the) line {number}; you want roaming (enabled|turned on) on that line.",
    "You want [international ]roaming (enabled|turned on) on {number}, the line of "
    + WHOSE
    + ", who (is|has just arrived) (abroad|in {country})[ and (has|gets) no mobile data there].",
    "(The line|Line) {number} on your account (has no data|cannot use mobile data) (abroad|in "
    "{country}), where " + WHOSE + " is travelling; you want roaming (enabled|switched on) for it.",
)
#: The bill the caller knows about (its id from the notice).
BILL_KNOWN = (
    "The bill you are calling about is {bill_id}.",
    "(The|Your) (notice|message) (names|is about) bill {bill_id}.",
    "The overdue bill (is|has the id) {bill_id}[, as the notice says].",
)
#: A payment request sent now, paid after the call.
PAY_LATER = (
    "You want the payment request sent now, but you will pay it later yourself; do not pay it "
    "during this call.",
    "(Have|Let) the agent send the payment request to your phone; you (will|'ll) pay it "
    "(later|tonight|after the call)[ yourself], not (now|during this call).",
    "You (only want|want just) the payment request (sent|on your phone) for now: you (will|plan "
    "to) pay it (later|once you are home)[, not during this call].",
)
#: A payment request paid during the call.
PAY_NOW = (
    "When the agent sends the payment request, check it and pay it.",
    "(Once|When) the payment request (arrives|reaches your phone), (check|look at) it and pay "
    "it[ (right away|during the call)].",
    "You want to pay (during|in) this call: (check|open) the payment request on your phone and "
    "pay it.",
)
#: The line the overdue bill had suspended, as the caller knows it (own phone's or another).
SUSPENDED_FOR_BILL: dict[bool, str] = {
    True: "(Because of the bill|Because of it), your line (was|has been) suspended.",
    False: "(Because of the bill|Because of it), (the|your) line {number} (was|has been) "
    "suspended[; (it is used by|it belongs to) (your (daughter|son|partner)|a family member)].",
}
#: The suspended line's contract ended with the bill (τ²-bench's contract_end_suspension).
CONTRACT_ENDED_TOO = (
    "(That line's|Its) contract (has also ended|ended last month)[, so you do not expect it back]."
)
#: The caller leaves the suspended line for another call.
LINE_LATER = (
    "You only want the bill (handled|taken care of) in this call; you will ask about the "
    "suspended line another time.",
    "(Do not|Don't) ask for the line to be (reactivated|turned back on) in this call: you "
    "(will|'ll) (deal with|sort out) that (later|another time).",
)
#: Why a caller wants a suspension lifted: on their own phone's line, or on another line.
RESUME_REASONS: dict[bool, tuple[str, ...]] = {
    False: (
        "Your line (was|has been) suspended and you want (the suspension lifted|it (reactivated|"
        "back on|working again))[ today].",
        "You want your suspended line (reactivated|turned back on|restored)[ so you can use your "
        "phone (again|normally)].",
        "(Your phone line is|Your line is) still suspended(| and you cannot use it); you want "
        "(it reactivated|the suspension lifted)[ now].",
    ),
    True: (
        "The line {number} on your account, (used by|which belongs to) " + WHOSE + ", (was|has "
        "been) suspended; you want it (reactivated|back on|restored)[ today].",
        "You want the suspension lifted on {number}, (the line of " + WHOSE + "|a (second|"
        "family) line on your account)[ today].",
        "(The line|Line) {number} on your account is suspended and " + WHOSE + " (cannot use it|"
        "needs it back); you want it (reactivated|turned back on).",
    ),
}
#: Why a caller wants two lines of their account back.
RESUME_BOTH = (
    "Two lines on your account, {first} and {second}, (were|have been) suspended; you want "
    "(both|them both) (reactivated|back on|working again)[ today].",
    "You want the suspensions lifted on (both|two of) your lines, {first} and {second}[, "
    "(which your family uses|one of them " + WHOSE + "'s)].",
    "(Your|The) lines {first} and {second} are [both ]suspended and you (need|want) them "
    "(restored|reactivated)[ today].",
)
#: Why a suspended line no longer owes anything: the bill was paid before the call.
PAID_SINCE = (
    "(The|Your) line was suspended (over|for) an unpaid bill, which you (have paid since|paid "
    "(yesterday|this morning|a few days ago))."
)
PAID_SINCE_BOTH = (
    "(The|Both) lines were suspended (over|for) an unpaid bill, which you (have paid since|paid "
    "(yesterday|this morning|a few days ago))."
)
#: The line a caller asks about when it is not their phone's.
OTHER_LINE = (
    "You are calling (from your own phone|from your phone) about (another|a second|a family) "
    "line on your account, {number}[, used by " + WHOSE + "]."
)
#: When the caller considers the problem solved, per symptom.
SYMPTOM_SOLVED: dict[str, str] = {
    "service": "You consider it fixed once your status bar shows signal again.",
    "mobile_data": "You consider it fixed only once mobile data works at excellent speed.",
    "mms": "You consider it fixed once your phone can send MMS messages.",
}
#: What the agent tells the caller at the end, per symptom (the task's note).
SYMPTOM_FIXED: dict[str, str] = {
    "service": "your phone should have service again",
    "mobile_data": "your mobile data should work again at full speed",
    "mms": "your phone should send picture messages again",
}
#: What the user's phone must do at the end, per symptom (τ²-bench's assertions).
SYMPTOM_CHECKS: dict[str, tuple[tuple[str, dict[str, object]], ...]] = {
    "service": (("assert_service_status", {"expected_status": "connected"}),),
    "mobile_data": (
        ("assert_mobile_data_status", {"expected_status": True}),
        ("assert_internet_speed", {"expected_speed": 200, "expected_desc": "excellent"}),
    ),
    "mms": (("assert_can_send_mms", {"expected_status": True}),),
}
