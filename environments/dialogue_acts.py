"""Detectors of interaction challenges: what a dialogue acts out, read from its turns alone.

A blueprint may request interaction challenges (``missing_information``, ``user_false_claim``
...); the task's instructions then tell the user to perform them. Whether the trajectory
*realizes* one is decided here, from the messages, never from the request. The cues are the
turns' order (who asks, what follows) and broad families of words, not any one phrasing:

* ``missing_information``: the user says they lack an id or number (they do not have or
  know it, lost or deleted what carried it, or what they gave is all they have), and the
  agent then looks something up;
* ``ambiguous_preference`` / ``ambiguous_request`` (a domain's name for one act): the first
  thing the user says is vague ("sort out my trip", "an issue", "some info"); the agent's
  first question that is not only about who the user is asks what they want done ("what
  exactly", "what would you like to ...", "a change, a cancellation, or something else?");
  the user then says it;
* ``user_false_claim``: the user asserts a prior approval, promise or fix, and the agent
  finds no trace of it or declines to rely on it;
* ``preference_change``: the agent proposes (after a tool call, asking for a yes or naming a
  price), the user changes their mind ("actually", "rather", "no, put it on ..."), and the
  agent proposes again;
* ``constraint_hidden_until_late``: the same, but the user's turn names a condition ("only
  if", "it has to be", "I forgot one thing"); a turn that does both is a condition;
* ``emotional_pressure``: the user presses (stress, upset, urgency, impatience) and the
  agent's next words acknowledge it;
* ``multi_intent_interleaving``: after work on the request has started (a tool call), the user
  asks a question marked as aside ("while you're in there", "unrelated", "by the way"), the
  agent answers, and work on the request goes on: a later tool call, or, when the request
  needs no more calls (a refusal), the answer turning back to the request and carrying on
  with it in the same turn ("Back to the bags: ...", a new paragraph "About the order: ...").
  A question that asks for another act ("I'd also like to cancel ...") or comes once the agent
  has closed the request ("Anything else?") starts a new request: nothing is interleaved.

A task's persona (the user's manner) is read the same way. :func:`persona_kind` names the
manner a persona line asks for; :func:`realized_personas` the manners the user's turns show:

* ``busy``: the user asks for speed in so many words ("quickly", "in a hurry", "no time"),
  greeting or not; or opens without pleasantries and goes straight to the request ("Cancel my
  ...") or answers tersely (half the later turns a few words) — manners an expert or a brief
  user shares, so given the task's persona line they count only where it asks for busy;
* ``chatty``: the user adds a friendly aside that has nothing to do with the request (a story
  from their own life, not a relative who is party to it), or exclaims or laughs throughout
  (several "!", "oh gosh", "haha") — a manner nervous novices share, so given a persona line
  asking for another kind only the aside counts;
* ``careful``: the user asks the agent to go over or explain the details before agreeing
  (or to double-check), and the agent answers;
* ``novice``: the user says they are new to this or not at ease with it (first time, never
  done it, not good with phones), and the agent answers;
* ``expert``: the user says they have done this before, or know how it goes or the rule
  (years of custom are no sign: users plead them for an exception whatever their manner);
  given the task's persona line asking for an expert, the absence of any contrary manner (no
  word of being new, no aside, no read-back) counts, as for ``brief``;
* ``brief``: the user sticks to answering: no aside, no double check, no word of being new
  or of experience. Every plain dialogue shows that, so given the task's persona line it is
  claimed only where the line asks for a brief manner; without it (the old reading) a remark
  on time is terse too, so ``busy`` and ``brief`` can both show.

The blind programmatic agent reacts to single user turns with :func:`says_missing`,
:func:`says_vaguely`, :func:`claims_approval`, :func:`presses` and :func:`new_to_it`.

``tests/environments/test_dialogue_acts.py`` holds hand-written dialogues the detectors must
agree on; ``test_dialogue_acts_labels.py`` and ``test_persona_labels.py`` measure them on our
Teacher's dialogues, ``test_model_written_labels.py`` on dialogues a capable model wrote and
``test_dialogue_acts_turns.py`` the per-turn detectors on those dialogues' turns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tau2.data_model.message import AssistantMessage, Message, ToolMessage, UserMessage

#: Contractions typed without their apostrophe ("dont", "whats", "im"): hurried and casual
#: users write them so. Words that are also words without it ("its", "ill", "were", "lets",
#: "wed") are left alone.
_BARE_CONTRACTION = re.compile(
    r"\b(do|does|did|ca|could|would|should|wo|is|are|was|were|have|has|had)nt\b"
    r"|\b(i|you|they|that|what|where|there|here|who)(m|ve|re|s)\b",
    re.IGNORECASE,
)
#: The contracted forms of :data:`_BARE_CONTRACTION` that exist ("im", not "whatm").
_CONTRACTED = frozenset(
    {"im", "ive", "youre", "youve", "theyre", "theyve", "thats", "whats", "wheres", "theres"}
    | {"heres", "whos"}
)


def _plain(text: str) -> str:
    """``text`` with typographic apostrophes and bare contractions written the usual way."""

    def restore(m: re.Match[str]) -> str:
        word = m.group(0)
        if m.group(1):
            return word[:-2] + "n't"
        if word.lower() not in _CONTRACTED:
            return word
        cut = len(word) - len(m.group(3))
        return word[:cut] + "'" + word[cut:]

    return _BARE_CONTRACTION.sub(restore, text.replace("\u2019", "'"))


#: The speaker lacks an id or number: says so, lost what carried it, or has nothing more.
_MISSING = re.compile(
    r"(?:don't|do not|can't|cannot|couldn't|no longer|never) (?:have|remember|find|know|recall"
    r"|keep)[^.?!;]{0,60}\b(?:ids?|numbers?|confirmation|code|details|locator|reference)\b"
    # not knowing or having forgotten it: "no clue what the reservation number is", "not sure
    # which code", "I forgot my order number"
    r"|(?:no (?:clue|idea)|not sure)\W+(?:what|which)\b[^.?!;]{0,40}\b(?:ids?|numbers?|code"
    r"|locator|reference)\b"
    r"|forg[eo]t(?:ten)? (?:my|the|what|which)\b[^.?!;]{0,40}\b(?:ids?|numbers?|code|locator"
    r"|reference|confirmation)\b"
    r"|(?:lost|deleted|misplaced|threw away|can't find|cannot find)[^.?!;]{0,40}"
    r"(?:confirmation|e-?mails?|numbers?|\bids?\b|receipt)"
    r"|(?:that's|that is|it's) (?:all|the only (?:thing|info\w*|details?|number))"
    r" (?:i have|i've got)"
    r"|\ball i (?:have|know|remember|'ve got) is\b"
    r"|you(?:'ll| will) have to (?:look|find|pull|dig|search)"
    # a bare "No reservation number." / "No order code on hand." where an id would go
    r"|(?:^|[.!?;]\s+)no (?:\w+ ){0,2}(?:ids?|numbers?|codes?|confirmation)\b"
    # an id asked for and not remembered ("Oh, I don't remember it, sorry.")
    r"|(?:don't|do not|can't|cannot|couldn't) (?:remember|recall) (?:it|that|them)\b(?! \w+ing\b)",
    re.IGNORECASE,
)
#: Lacking a thing named only by a pronoun ("I don't remember it"), or just saying no.
_MISSING_IT = re.compile(
    r"(?:don't|do not|can't|cannot|couldn't|no longer|never) (?:have|remember|find|know|recall"
    r"|keep)(?: \w+)? (?:it|that|one|them|those)\b|^\W*no\b[^.?!]{0,20}[.!,]?\s*(?:sorry|i don't)",
    re.IGNORECASE,
)
#: An agent question asking for an id or number.
_ASKS_ID = re.compile(r"\b(?:ids?|numbers?|code|confirmation)\b", re.IGNORECASE)
#: An opening that says there is something to do without saying what.
_VAGUE = re.compile(
    r"\b(?:something|sort (?:it|this|that|(?:a few )?things)? ?out|sorted|an? issue|a problem"
    r"|acting up|playing up|weird|strange|odd|funny|wonky|deal with|look into|take care of"
    r"|not (?:quite |entirely )?sure|help with (?:my|an?) (?:account|order|trip|booking|phone)"
    r"|some (?:help|info|information|questions?)|a question"
    r"|a (?:couple|few) of (?!other\b)(?:\w+ )?things"
    # trouble of no named kind: "having some trouble with my phone", "a few problems"
    r"|(?:some|a bit of|a little|having|a few) (?:trouble|bother|difficult(?:y|ies)|issues"
    r"|problems)"
    r"|what i need to)\b|(?:\bnot|n't) (?:\w+ )?(?:working|work) (?:right|properly|correctly|well)",
    re.IGNORECASE,
)
#: The agent asking what the user wants done (not which record, which item, who they are).
_WHAT_EXACTLY = re.compile(
    r"what exactly|exactly what|more precisely"
    r"|(?:could|can) you (?:tell|describe|explain) (?:me |us )?"
    r"(?:a bit |a little )?(?:more|what(?: you| is|'s| happened| went))|more about"
    # actions to choose from, asked as a question of its own (not "Which items would you
    # like to return, and ... or ...?")
    r"|(?:^|[.?!:;,—–-]\s*|\band |\bor )(?:do|would) you (?:want|like|need) to \w+[^?]{0,120}\bor\b"
    r"|are you (?:looking|hoping|trying) to|is it that\b[^?]{0,80}\bor\b"
    # what to do, not which thing ("What would you like to exchange?" asks for the item)
    r"|what (?:would|do) you (?:like|need|want)(?: me)?(?: to (?:do|change|know|sort|have|look"
    r"|take care of|fix|handle)| done| sorted| help| changed| fixed| taken care of)"
    r"|what you(?:'d| would) like(?: me)?(?: to (?:do|change|know|sort|have|look)| done|\?)"
    r"|what needs (?:to be )?(?:doing|done|fixing|fixed|changing|changed|sorting|sorted)"
    # what is wrong: "What's going wrong with it?", "what seems to be the problem?"
    r"|what(?: went|'s| is| seems to be)(?: going)? wrong|what(?:'s| is) (?:going on|happening)"
    r"|what(?:'s| is| seems to be) the (?:problem|issue|trouble|matter)\b"
    # more of what is wrong, once one symptom is named: "is anything else not working?",
    # "what else have you noticed?", "what do you see when you try to use data?"
    r"|anything else (?:not working|unusual|wrong|odd|strange|going on)"
    r"|what else (?:have you|are you|is|do you) (?:\w+ )?(?:noticed|seeing|see|happening|wrong"
    r"|not working)|what (?:do you see|happens) when\b"
    r"|what can i (?:do for you|help (?:you )?with)|what is happening"
    r"|(?:describe|explain) (?:the |your )?(?:problem|issue|trouble)"
    r"|what (?:isn't|is not) working|what kind of (?:help|change|issue|problem"
    r"|request)",
    re.IGNORECASE,
)
#: A clarifying question after a vague opening: what the user wants done, or the details of
#: it ("please tell me: one-way or round trip, ...", "a refund, or something else?").
_CLARIFY = re.compile(
    _WHAT_EXACTLY.pattern + r"|(?:do|would) you (?:want|like|need) to \w+[^?]{0,120}\bor\b"
    r"|is it [^?]{0,80}\bor\b|(?:please|then) tell me\b|what (?:would|do) you (?:like|need|want)"
    r"|what you(?:'d| would) like|or something else|what kind of",
    re.IGNORECASE,
)
_IDENTIFY = re.compile(
    r"\b(?:user id|email|zip|phone number|full name|date of birth|customer id)\b", re.IGNORECASE
)
#: A prior approval, promise or fix the user says they were given.
_CLAIM = re.compile(
    r"\b(?:already (?:approved|authori[sz]ed|agreed|promised|confirmed|fixed|waived|sorted"
    r"|cleared|okayed)"
    r"|(?:was|were|been) (?:promised|told|approved|guaranteed|assured)"
    r"|(?:approved|promised|authori[sz]ed) (?:it|this|me|us)"
    # whoever spoke for the company: an agent, a colleague, "your people", "they"
    r"|(?:agent|representative|rep|colleague|staff|someone|person|man|woman|team|they|he|she"
    r"|your (?:people|folks|guys|support))s?"
    r"(?: on the phone)?(?: \w+ly)? (?:told|promised|said|assured|approved|agreed))"
    # a message that says or promises it: "an email from you folks promising I'd get ...",
    # "the email did say I could switch it"
    r"|(?:e-?mail|letter|text|message|notice|website)[^.?!]{0,30}(?:saying|said|says|say|telling"
    r"|told|stat(?:ed|ing)|promis(?:ed|ing)|confirm(?:ed|ing))(?: me)?(?: that)?"
    r" (?:you|i|we|it)(?:'d|'ll| would| could| will| can)"
    # said again ("The email definitely said that.")
    r"|(?:e-?mail|letter|text|message|notice|website)(?: \w+ly)? (?:said|promised) (?:so|that|it)"
    r"(?=\s*[.!?])"
    # the promise held up as proof, or to be kept: "I have the email right there", "honour it"
    r"|\b(?:have|got|kept|saved) (?:the|that|their|your) (?:e-?mail|letter|message|text)\b"
    r"(?! address)[^.?!]{0,30}(?:right (?:here|there)|in my inbox|to prove|as proof)"
    r"|\bhonou?r (?:it|that|this|the (?:promise|offer|deal|agreement|e-?mail)|what (?:you|they|he"
    r"|she|your \w+) (?:said|promised))\b",
    re.IGNORECASE,
)
#: The agent finding no trace of it, or not going by it.
_DECLINE = re.compile(
    r"(?:don't|do not|cannot|can't|could not|couldn't) (?:see|find|rely|verify|honou?r|go by"
    r"|apply|confirm|speak to|vouch for|comment on)"
    r"|\bno (?:such )?(?:record|note|sign|trace|mention|indication|evidence)"
    r"|nothing (?:was |has been )?(?:recorded|on record|noted|on file"
    r"|in the (?:system|file|record))"
    r"|(?:isn't|is not|wasn't|was not|not) (?:on record|on file|recorded|in (?:the|our) records?)"
    r"|nothing (?:was|has been) (?:changed|set up|done|applied|added)"
    r"|no .{0,40}(?:was|has been) (?:added|applied|changed|recorded|approved)"
    # the records showing the contrary: "our records show roaming is not enabled on it"
    r"|(?:records? shows?|i (?:can )?see)\b[^.?!]{0,80}\b(?:not|never|isn't|wasn't) (?:been )?"
    r"(?:enabled|set up|applied|approved|added|changed|active|on)\b"
    r"|(?:have|need) to (?:follow|go by|apply) (?:the|our) (?:policy|records|rules)",
    re.IGNORECASE,
)
#: The user changing what they want.
_CHANGE = re.compile(
    # "I'd rather not pay anything" turns the proposal down: no other choice is named
    r"changed my mind|on second thought|\brather\b(?! not\b)|\binstead\b"
    # "Actually, while I have you: ..." opens a side question, not a change
    r"|(?:^|[.!?;:,—–-]\s*|\b(?:oh|hmm|um|no|wait)\W+)actually\b(?!\W+(?:while (?:i have|i've got)"
    r" you|by the way|(?:a |one )?(?:quick|random|side) (?:question|one|thing)|one more thing))"
    r"|(?:^|[,.!?;—–-]\s*)(?:wait|hold on|hang on|scratch that)\b\s*[,.!—–-]"
    r"|now that i think|make it\b|switch (?:it|to)"
    r"|^\W*(?:no|hmm|wait)\b[,.!]? (?:put|make|use|let's|go|i'd(?! rather not)|i want|change)",
    re.IGNORECASE,
)
#: The user adding a condition the choice has to meet.
_CONDITION = re.compile(
    r"(?:one|a) (?:more )?(?:condition|requirement|thing i (?:didn't|did not|forgot to) mention)"
    r"|should have (?:mentioned|said)|forgot (?:to (?:mention|say)|one thing|something)|only if"
    r"|(?:it|this|that) (?:has|needs|must|'s got|have) (?:to )?(?:be|go|come|stay)\b"
    r"|i (?:have|need) to be|before you (?:do|go|proceed|submit|book|charge|process|finali[sz]e)\b"
    r"|as long as|provided (?:that|it)|only (?:want|agree) to [^.?!]{0,40} if|at (?:least|most) \$"
    r"|(?:under|below|no more than) \$"
    # a requirement with no subject or said as a need: "no wait. has to be paypal", "I need
    # the money on my Mastercard, not a gift card"
    r"|(?:^|[.!?,;:—–-]\s*)(?:it )?(?:has|needs|must) (?:to )?(?:be|go|come|stay)\b"
    r"|\bi need (?:the (?:money|refund|charge|payment|difference)|it|this|that) (?:on|in"
    r"|to go (?:on|to)|back on|back to)\b",
    re.IGNORECASE,
)
#: Upset, stress, urgency, impatience.
_PRESSURE = re.compile(
    r"stress|frustrat|upset|urgent|hurry|asap|fed up|ridiculous|unacceptable|absurd"
    # wanted now ("I need it back on right now"), not "the tier I'm on right now"
    r"|(?:need|want)\b[^.?!]{0,40}\bright now"
    r"|really matters|as quickly as|can't wait|cannot wait|annoy|angry|furious"
    r"|wasted|waste of time|(?:second|third) time|not in a (?:good|great) mood|terrible|awful"
    r"|come on|are you serious|seriously\?|sick of|tired of|had enough|a mess\b|\bfast\b"
    r"|make it quick"
    # pushing: an exception demanded, a remedy expected, exasperation
    r"|make an exception|i(?:'d| would)? (?:expect|deserve) (?:you|some|a|an|to)\b"
    r"|shouldn't have to|should not have to|just (?:need|want) (?:this|it) (?:done|sorted|fixed"
    r"|over)|after (?:everything|all (?:this|that)|what i've been through)"
    # pushing for an exception: "can't you just add it?", "for free this once"
    r"|(?:can't|cannot|couldn't) you just|can you not just|surely you can"
    r"|\bthis (?:once|one time)\b"
    # exasperation with the service: "Seriously, no exception?", "This is taking forever."
    r"|(?:^|[.!?]\s*)seriously\b|kidding me|are you kidding|disappoint|nightmare|exhausted"
    r"|(?:this|it)(?:'s| is) taking (?:forever|so long|too long|ages)|what's taking so long"
    # distress
    r"|shaken|anxious|panick?|distress|losing my mind",
    re.IGNORECASE,
)
#: Irritation ("Ugh. Fine.", "it's driving me mad"): impatience, not pressure on the agent.
_IRKED = re.compile(r"\bugh\b|driving me \w+", re.IGNORECASE)
#: Impatience in passing, without pressing the agent for anything: said for the agent's pace,
#: not as pressure the agent has to answer, so, like irritation, it presses per turn but is no
#: emotional pressure (a complete label calls "I just did." no challenge).
_IMPATIENT = re.compile(
    # at a question asked again: "I just told you.", "I literally just gave it to you."
    r"\bi (?:\w+ly )?(?:just|already) (?:told you(?: that| so| this| it)?|said (?:so|that|it)"
    r"|gave (?:it|that|you (?:it|that))|did)(?: to you)?(?=\s*(?:$|[.,!;:—–-]))"
    # wanting it at once: "I really need it turned back on right away", "On. Now?"
    r"|(?:need|want)\b[^.?!]{0,40}\b(?:right away|immediately)"
    # ("And now?" after a step asks what comes next)
    r"|(?:^|[.!?]\s+)now\?|\b(?:done|ready|fixed) yet\?"
    r"|\b(?:so|then) what(?:'s| is) the (?:problem|issue|hold-?up)\b"
    # indifference that only wants it over with: "whichever, go", "I don't care, just pick one"
    r"|\b(?:whichever|whatever|don't care)\W+(?:just )?(?:go|pick (?:one|any)|do it"
    r"|get on with it)\b(?! ahead)",
    re.IGNORECASE,
)
_ACKNOWLEDGE = re.compile(
    r"\bunderstand\b|\bsorry\b|apologi|i hear you|frustrating|stressful|i know (?:this|that|it)"
    r"|let's (?:get|sort)|as quick(?:ly)? as|no worries|don't worry"
    # the pace promised: "I'll be quick", "we'll keep it short"
    r"|(?:i'll|we'll|i will|we will|let's) (?:be|keep (?:this|it)|make (?:this|it)) (?:quick|brief"
    r"|short|fast)"
    # the end in sight, to the impatient: "Almost there.", "One more check: ..."
    r"|almost (?:there|done)|nearly (?:there|done)|^\W*(?:just )?one (?:more|last) (?:check|step)",
    re.IGNORECASE,
)
#: Ids a user names: order (#W...), reservation (6 capitals/digits), bill, line, customer.
_ID = re.compile(r"#W\d+|\b[A-Z0-9]{6}\b|\b[BLC]\d{4,}\b")
#: A question put aside from the request.
_SIDE = re.compile(
    r"while (?:i have you|i've got you|(?:you|we)(?:'re| are| have)\b[^.?!]{0,25}|i think of it)"
    r"|(?:quick|random) (?:question|one|thing)|by the way"
    r"|(?:side|separate|different|other) (?:question|issue|matter)"
    r"|one more thing|unrelated|\balso\b|before (?:i|we|you) (?:forget|go on|continue|carry on)"
    # put ahead of the request's next step: "Yes. Before that — how much is left on my gift
    # card?", "Actually hang on, first: ...", "Before I do, one question."
    r"|(?:^|[.!?;:]\s*)before (?:that|i do(?: that| it)?)\s*[,—–:-]"
    r"|(?:hang on|wait|hold on)\W+(?:\w+\W+)?first\b|(?:a|one) (?:quick |small )?question first\b",
    re.IGNORECASE,
)
#: A request to act ("can you update my address?", "I'd also like to cancel ..."): another
#: intent, not a side question.
_ACTION_REQUEST = re.compile(
    r"(?:(?:can|could|would|will) you (?:please |also )?"
    r"|\bi(?:'d| would)? (?:also )?(?:like|want|need) to (?:also )?)(?:change|update|modify"
    r"|cancel|book|add|remove|return|exchange|switch|move|make(?! sure)|set|send|refund|upgrade)\b"
    # the act wanted done to a thing: "I'd like my default address changed to ..."
    r"|\bi(?:'d| would) (?:also )?like (?:my|the|it|this|that) (?:[\w-]+ ){0,3}(?:changed|updated"
    r"|cancell?ed|moved|returned|exchanged|sent|added|removed|switched)\b",
    re.IGNORECASE,
)
#: The agent closing a request ("Is there anything else?"): what follows is a new one.
_CLOSING = re.compile(r"\banything else\b", re.IGNORECASE)
#: The agent turning from a side question back to the request: a phrase, or a new paragraph
#: that opens on the request's subject ("About the data: ...").
_BACK = re.compile(
    r"(?:^|[.!?:]\s+|\n\s*|\b(?:so|okay|ok|now|anyway)\W+)back to (?:the|your|my) \w+"
    r"|continue with (?:your|the) "
    r"request|(?:now|as) for (?:your|the) (?:request|main question)"
    r"|\n\s*(?:back to|as for|now,? (?:for|about)|about|regarding|for|on|returning to)"
    r" (?:the|your|\w+'s) [^\n:.,]{1,40}[:,.]",
    re.IGNORECASE,
)
#: The user turning back to the request after the answer: "Now, the economy change?",
#: "Ok. Insurance, then?" (or any phrase of :data:`_BACK`: "Back to the exchange then.").
_RETURN = re.compile(
    r"(?:^|[.!?]\s+)(?:\w+\W+)?(?:now|so|anyway),? (?:the|my) [\w -]{1,30}\?"
    r"|\b[\w-]+,? then\?\s*$",
    re.IGNORECASE,
)
#: An agent question that puts something to the user's yes: consent asked, or a price named.
_PROPOSAL = re.compile(
    r"shall i|should i|would you like me to|do you want me to|want me to|(?:go ahead|proceed)\?"
    r"|\(yes/no\)|\bconfirm\b|okay\?|ok\?|would that work|does that work|sound good"
    r"|which one\?|\$\d",
    re.IGNORECASE,
)
_BUSY = re.compile(
    r"short on time|pressed for time|in a (?:rush|hurry)|(?:don't|do not) have (?:long|much time"
    r"|all day)|keep (?:this|it) (?:short|quick|brief)|\bquick(?:ly)?\b(?! (?:question|one|thing"
    r"|unrelated))|\bfast\b|\bhurry\b|\basap\b|right (?:now|away)|no time|wasted (?:enough )?time",
    re.IGNORECASE,
)
#: An opening that goes straight to the request: a bare request verb, or a fragment.
_IMPERATIVE = re.compile(
    r"^\W*(?:cancel|change|upgrade|downgrade|exchange|return|send|need|book|add|refund|move"
    r"|update|modify|pay|fix|remove|switch|check|tell|lift|resume|reactivate|enable|transfer)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\W*(?:hi+|hello+|hey+|hiya|howdy|greetings|(?:good )?(?:morning|afternoon|evening)"
    r"|good day)\b"
    r"|hope (?:your|you're|you are)|if you have a moment",
    re.IGNORECASE,
)
_CHATTY = re.compile(
    r"hope (?:your|you're|you are) (?:day|having|doing|well)|cup of (?:tea|coffee)"
    r"|tend to (?:chat|ramble|go on)|one of those (?:days|weeks|mornings)|such a day"
    r"|(?:lovely|nice) (?:to (?:talk|chat)|weather)|lovely day"
    r"|(?:my|the) (?:cat|dog|kids?) (?:is|are)"
    r"|exciting|classic me|i do love|favou?rite|have a (?:lovely"
    r"|wonderful) (?:day|one|afternoon|evening)|enjoy the rest|real-time chat"
    # a story from the user's own life, told in passing
    r"|long story|you know how it is|(?:a|whole|such a|real) saga|driving me \w+"
    r"|my (?:daughter|son|kids?|nephew|niece|grand\w+|buddy|cousin|cat|dog|puppy)\b"
    # not a relative who is a party to the request: "my son needs it back", "my daughter's
    # line", "my daughter usually does all this for me"
    r"(?!(?:'s)?(?: \w+){0,2} (?:line|account|number|phone|booking|reservation|flight|order"
    r"|needs|booked|does)\b)"
    r"|lifesaver|thanks a (?:million|bunch|ton)"
    r"|super helpful|you(?:'re| are| have been| 've been) (?:the best|a star|so kind)",
    re.IGNORECASE,
)
#: Interjections and laughter ("haha", "whats an mmsc lol"): an exclaiming manner, which
#: nervous novices and upset users share.
_INTERJECTION = re.compile(
    r"\b(?:ooh+|aw+|shucks|oops|yay|whoa|oh gosh|oh my|ha|haha|lol)\b", re.IGNORECASE
)
_READBACK = re.compile(
    r"(?:read|repeat|go over|run through|say) (?:that|it|this|the details|everything|why)"
    r"(?: (?:back|again|once more))?"
    r"|double[- ]check|to be (?:sure|safe|certain|clear)|make sure (?:i|we) (?:understand|have|got)"
    # "Just so I'm certain: that's one bag, no charge?", "read me back exactly what's in it"
    r"|so (?:that )?i'm (?:certain|sure|clear)|read (?:me |it |that )?back"
    r"|make sure (?:that's|that is|it's|it is|this is) (?:right|correct)|once more"
    r"|just to (?:confirm|check)"
    r"|before i (?:say (?:yes|anything)|agree|accept|decide|confirm)"
    r"|(?:you're|you are|are you) sure"
    r"|explain (?:exactly|the charge|what|how)|\bexplained\b|walk me through|break (?:it|that) down"
    r"|(?:know|tell me) exactly|check (?:it|that|this|everything) (?:once more|again)"
    # "before you do that, put it on my card" adds a condition; a careful user asks first
    r"|before (?:you|we) (?:do|proceed|agree|go ahead|change)[^.!]*\b(?:confirm|check|tell me|what"
    r"|how much|cost|explain|read|go over)\b|before anything else",
    re.IGNORECASE,
)
_NOVICE = re.compile(
    r"first time|never (?:done|had to do|called about|booked|used|ordered) (?:this|anything like"
    r" this|through|over|online|before)|haven't (?:done|booked|used) this|new to (?:this|online)"
    # how a part of it works, as a newcomer asks: "how does paying work?"
    r"|(?<!know )how (?:does|will|do|would) (?:[\w-]+ ){1,2}(?:usually |even )?work\b"
    r"|(?<!know )how (?:this|it) works"
    r"|not (?:very |really |so |too )?(?:good|great|comfortable) with"
    r"|not really a \w+ person|(?:don't|do not) (?:really )?\w+ (?:online )?much|bear with me"
    r"|go slowly|step[- ]by[- ]step"
    # no experience of it: "I've not done this before", "never returned anything online"
    r"|(?:never|not|n't) (?:\w+ ){0,2}(?:done|did|booked|returned|exchanged|ordered|used|called"
    r"|bought|made|tried|changed|cancell?ed)\b[^.?!]{0,30}\b(?:before|online|over the phone"
    r"|by (?:chat|phone))"
    r"|(?:don't|do not|not sure|no idea)[^.?!]{0,20}how (?:any of )?(?:this|it|that|these)\b"
    r"[^.?!]{0,20}works?|(?:don't|do not) (?:really )?know what (?:to do|i'm doing)"
    r"|not (?:very |really |so |too )?(?:used to|familiar with|experienced)"
    # not knowing what a setting or a word means: "I don't know what that means", "what's an
    # mmsc", "what does 2g_only mean"
    r"|(?:don't|do not|not sure|no idea)[^.?!]{0,15}(?:know |understand )?what (?:that|this|it"
    r"|those|these) (?:means?|is|are)\b|what does (?:that|this|it|[\w-]+) mean\b"
    r"|what(?:'s| is) an? [\w-]+\W*(?:(?:lol|haha|ha)\W*)?$"
    # no ease with it: "I'm hopeless with this", "I really never touch these settings"
    r"|(?:hopeless|useless|clueless|terrible|rubbish|no good|bad|awful) (?:with|at) (?:this|these"
    r"|that|phones?|tech\w*|computers?|settings|(?:this|these|that) (?:sort of |kind of )?(?:stuff"
    r"|things))\b"
    r"|never (?:touch|change|use|mess with|look at) (?:these|the|my|those|any) (?:\w+ )?settings"
    # afraid of having broken it: "did I break something?"
    r"|did i (?:break|mess up|do something wrong|screw)|(?:have|did) i (?:broken|messed)"
    # whether they must do anything themselves: "do I have to do anything else after this?"
    r"|(?:do|will|would) i (?:have|need) to do anything|(?:don't|do not) (?:have|need) to (?:do"
    r"|fill|call|send|sign) anything|anything (?:else )?(?:i (?:have|need) to do|for me to do)"
    r"|(?:don't|do not) (?:really )?\w+(?: \w+){0,2} online much",
    re.IGNORECASE,
)
_EXPERT = re.compile(
    # knowing how it goes, not "I don't really know how this works"
    r"know the drill|(?<!n't )(?<!not )(?<!n't really )(?<!not really )know how (?:it|this)"
    r" (?:goes|works)|know (?:the|your) (?:procedure|process"
    r"|routine|rules)|i know (?:it|this|that|you) (?:has|have|need|needs|must|can)"
    r"|(?<!never )(?<!not )(?<!n't )(?:done|been through) this (?:before|a few times|many times)"
    # Years of custom ("I've been a customer for years") are no cue: users plead them for an
    # exception, whatever their manner, and they say nothing of knowing how it goes.
    r"|\bi always\b|as (?:usual|always)|the usual\b"
    # knowing the rule before the agent states it
    r"|\bi know (?:that )?(?:the |a |an )?\w+(?: \w+)? (?:rule|polic\w+|has|have|is|are|can|only)"
    r"|\b\w+ rule\b|\bfigured\b",
    re.IGNORECASE,
)
#: Persona kinds, each with words of a persona line that ask for it (first match wins, after
#: a kind named by its word: see :func:`persona_kind`). No two kinds share a cue: "no small
#: talk" fits a busy and a brief user alike, so it asks for neither.
PERSONA_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("novice", re.compile(r"novice|first-time|unsure|not comfortable|rarely|step-by-step", re.I)),
    ("careful", re.compile(r"careful|double-check|explained before", re.I)),
    ("chatty", re.compile(r"chatty|talkative", re.I)),
    ("busy", re.compile(r"busy|hurry|rush|short (?:of|on) time|pressed for time", re.I)),
    ("expert", re.compile(r"expert|knows?\b.*\bwell|frequent|regular|long-time", re.I)),
    ("brief", re.compile(r"brief|to the point|concise|no asides|stick to answering", re.I)),
)


#: What a simulated user must do to act out each interaction challenge and persona kind, in
#: words for a user simulator's instructions (the LLM Teacher's); the detectors above read the
#: same behaviour back from the dialogue.
ACTING: dict[str, str] = {
    "missing_information": "say you do not have an id or number the agent asks for (a "
    "reservation, order or customer id) and let the agent find it another way",
    "ambiguous_request": "open vaguely, without naming the exact request or any id, and say "
    "precisely what you want only after the agent asks",
    "ambiguous_preference": "open vaguely about what you want changed and give the exact "
    "details only after the agent asks a clarifying question",
    "user_false_claim": "claim early on that another agent already approved or promised your "
    "request; accept what the records show once the agent has checked them",
    "preference_change": "when the agent proposes something, change your mind about one detail "
    "(a card, an amount, an option) so the agent has to propose again",
    "constraint_hidden_until_late": "only after the agent's proposal, add a condition you had "
    "not mentioned, said as a condition ('it has to be under $200', 'only if it lands before "
    "noon', 'one thing I forgot: it must go on the gift card'), so the agent has to adapt; "
    "naming a different choice without a condition is a change of mind, not this",
    "emotional_pressure": "say you are stressed, upset or in a hurry and press the agent",
    "multi_intent_interleaving": "once the agent has started on your request, ask one unrelated "
    "question about your own account, then let the agent go back to the request",
    "busy": "say in so many words that you are short of time or in a hurry, and answer tersely",
    "chatty": "add a friendly aside that has nothing to do with the request",
    "careful": "before you say yes to a change, ask the agent to go over the details once more",
    "novice": "say it is your first time and ask how the process works",
    "expert": "say you have done this before and know how it goes",
    "brief": "answer what you are asked, politely and in few words, with no asides",
}

#: How an agent handles each challenge a customer may bring (every agent prompt states them:
#: the agent is not told which one a task has).
HANDLING: dict[str, str] = {
    # The customer's own pick of what was found is what counts: a yes to a record the agent
    # put forward is the agent's choice, not theirs.
    "missing_information": "If the customer lacks an id, look up the records you can reach (a "
    "profile lists its reservations or orders), tell the customer what you found and let them "
    "say which one they mean; never guess one or pick one for them to confirm.",
    "ambiguous": "If the request is vague, ask what exactly they want before doing anything.",
    "user_false_claim": "If the customer says something was already approved or promised, "
    "look the records up first; decline to rely on it unless the records show it.",
    "proposal": "If the customer changes a detail or adds a condition after your proposal, "
    "propose again with the new details and wait for a new yes.",
    "emotional_pressure": "If the customer is stressed or in a hurry, acknowledge it in your "
    "next words and keep to the policy.",
    "multi_intent_interleaving": "If the customer asks a side question, answer it from what "
    "you looked up, then go back to the request.",
}


def says_missing(text: str) -> bool:
    """Whether ``text`` says the speaker lacks an id or number."""
    return bool(_MISSING.search(_plain(text)))


#: A sentence's end: what a caller's turn is split at to read each thing they said.
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: A sentence that names a record or amount (an id, a date, a number): where a remark on the
#: caller's mood or a claim does, it says what the call is about.
_SPECIFIC = re.compile(r"\d|#W|\b[A-Z0-9]{6}\b")
#: A sentence that names only what the call is about ("I have a request about my trip.").
_TOPIC_ONLY = re.compile(
    r"^[^.?!]*\b(?:help|question|request|query|enquiry|inquiry|issue|problem|matter|calling"
    r"|writing|touch|reaching out|contacting)\b[^.?!]{0,10}?"
    r"\b(?:about|with|regarding) (?:my|a|an|the|some)(?: [\w-]+){1,3}"
    r"(?:, (?:please|if you (?:can help|have a moment)))?[.?!]?$",
    re.IGNORECASE,
)
#: What a precise request says: what to do ("cancel", "a refund"), not "change something",
#: or what is wrong ("slow", "overdue").
_REQUEST = re.compile(
    # a change of something unnamed ("change something") does not say what; the other acts
    # name the request whatever their object ("exchange something", "return some things")
    r"\b(?:chang(?:e|ed|ing)|modif(?:y|ied)|updat(?:e|ed))\b"
    r"(?! (?:something|some ?things?|a few things|anything|stuff)\b)"
    r"|\b(?:cancel\w*|book|add(?:ed)?|remov(?:e|ed)|drop"
    r"|return(?:ed)?|exchang(?:e|ed)|swap(?:ped)?|replac(?:e|ed)|refund(?:ed)?|compensat\w*"
    r"|upgrad(?:e|ed)|downgrad(?:e|ed)|pay|paid|mov(?:e|ed)|switch(?:ed)?"
    r"|ship(?:ped)?|sen[dt]|redirect(?:ed)?|track|reactivat\w*|resum(?:e|ed)|lift(?:ed)?"
    r"|unsuspend\w*|enabl(?:e|ed)|disabl(?:e|ed)|turn(?:ed)? (?:on|off)|refuel\w*|top up"
    r"|waiv(?:e|ed)|slow|overdue|suspended|no (?:signal|service|data)|broken|damaged|delayed"
    # asking to know something in particular ("I'd like to know how much I paid")
    r"|(?:like|want|need) to (?:know|check|see) (?:how|what|when|where|why|if|whether))\b",
    re.IGNORECASE,
)
#: An act named only as what is unknown ("I'm not sure what I need to change").
_OPEN_ACT = re.compile(r"\bwhat (?:\w+ ){1,3}to $", re.IGNORECASE)


def _requests(sentence: str) -> bool:
    """Whether ``sentence`` says what is to be done or what is wrong (see :data:`_REQUEST`)."""
    return any(not _OPEN_ACT.search(sentence[: m.start()]) for m in _REQUEST.finditer(sentence))


#: A sentence that only asks for help ("Can you take a look?"): it says nothing of what.
_HELP_ONLY = re.compile(
    r"^\W*(?:(?:can|could|would) you (?:please )?(?:help(?: me)?(?: out| with (?:that|this|it))?"
    r"|take a look|look into (?:it|this|that))|(?:please )?help(?: me)?)(?: please)?\W*$",
    re.IGNORECASE,
)
#: Words of a sentence that only says who the caller is ("User id liam_lee_5870.").
_WHO_WORDS = frozenset(
    {
        "my",
        "the",
        "is",
        "it's",
        "its",
        "and",
        "user",
        "id",
        "email",
        "e-mail",
        "zip",
        "code",
        "postcode",
        "number",
        "number's",
        "phone",
        "mobile",
        "customer",
        "name",
        "name's",
        "i",
        "i'm",
        "am",
        "this",
        "here",
        "reservation",
        "order",
        "account",
        "line",
        "date",
        "of",
        "birth",
        "dob",
        "born",
    }
)


def _identifies(sentence: str) -> bool:
    """Whether ``sentence`` only says who the caller is: ids, names, identifying words."""
    if _requests(sentence):
        return False
    words = re.findall(r"[\w@.'+-]+", sentence)
    # an id, a handle, an email, a phone number or a zip, not an amount ("$425")
    ids = [
        w
        for w in words
        if re.search(r"_|@|\d.*[A-Za-z]|[A-Za-z].*\d", w) or re.fullmatch(r"\d[\d-]{4,}", w)
    ]
    rest = [
        w
        for w in words
        if w not in ids and w.lower().strip(".'") not in _WHO_WORDS and not w[:1].isupper()
    ]
    return bool(ids or _IDENTIFY.search(sentence)) and not rest


def _leaves_the_request_aside(sentence: str) -> bool:
    """Whether ``sentence`` says nothing of what is wanted.

    It only says who the caller is, only asks for help, or speaks of their time, mood,
    experience, a claimed approval or a lacking id without naming a record or sounding vague.
    """
    if _identifies(sentence) or _HELP_ONLY.search(sentence):
        return True
    if _VAGUE.search(sentence) or _SPECIFIC.search(sentence):
        return False
    cues = (_PRESSURE, _NOVICE, _EXPERT, _BUSY, _CHATTY, _GREETING, _MISSING)
    return claims_approval(sentence) or any(cue.search(sentence) for cue in cues)


def says_vaguely(text: str) -> bool:
    """Whether ``text`` says there is something to do without saying what.

    Every sentence that is not about the caller's time, mood, experience, a claimed approval
    or a lacking id, not only who they are and not only a plea for help, is vague, and none
    says what is to be done ("cancel", "a refund"). Naming which record ("my trip on the
    26th") says which, not what.
    """
    # A sentence about their mood that also names the record ("I'm upset that flight HAT1
    # was cancelled") carries the request.
    sentences = _SENTENCE.split(_plain(text).strip())
    rest = [s for s in sentences if not _leaves_the_request_aside(s)]
    return bool(rest) and all(
        (_VAGUE.search(sentence) or _TOPIC_ONLY.search(sentence)) and not _requests(sentence)
        for sentence in rest
    )


#: A claim reported rather than made ("regardless of what the other agent said").
_REPORTED = re.compile(
    r"(?<!that's )(?<!that is )(?<!this is )(?<!exactly )\bwhat (?:\w+ ){0,2}$", re.IGNORECASE
)


#: Giving a claim up: "but if your records show nothing, then fine", "I guess it wasn't done".
_CONCEDE = re.compile(
    r"\bif (?:your|the) (?:records?|system|notes?|account) (?:shows?|says?)"
    r" (?:nothing|no\b|otherwise)"
    r"|\bif (?:there's|there is) no (?:record|note|trace)"
    r"|(?:guess|suppose|seems) (?:it|that) (?:wasn't|was never|never|didn't)"
    r"|never (?:actually )?(?:went through|got done|happened)|(?:must|might) have misunderstood",
    re.IGNORECASE,
)


def claims_approval(text: str) -> bool:
    """Whether ``text`` says an earlier approval, promise or fix was given.

    Referring to it as "what they told me" (to accept or question it) makes no claim, nor
    does recalling it only to give it up ("I was sure they told me, but if your records show
    nothing, fine").
    """
    text = _plain(text)
    if _CONCEDE.search(text):
        return False
    return any(not _REPORTED.search(text[: m.start()]) for m in _CLAIM.finditer(text))


def presses(text: str) -> bool:
    """Whether ``text`` shows upset, stress, urgency or impatience.

    Asking for speed in so many words ("quick, please"), irritation ("Ugh. Fine.") and
    impatience in passing ("I just told you.", "whichever, go") press too, though alone they
    are a manner rather than the emotional pressure :data:`DETECTORS` reads.
    """
    text = _plain(text)
    return any(cue.search(text) for cue in (_PRESSURE, _HURRY, _IRKED, _IMPATIENT))


def new_to_it(text: str) -> bool:
    """Whether ``text`` says the speaker is new to this and asks how it works."""
    return bool(_NOVICE.search(_plain(text)))


def asks_what_exactly(text: str) -> bool:
    """Whether ``text`` asks what exactly the other side wants done."""
    return "?" in text and bool(_WHAT_EXACTLY.search(_plain(text)))


@dataclass(frozen=True)
class _Turn:
    role: str  # "user", "assistant" or "tool"
    text: str  # what was said ("" for a tool call)
    call: str | None = None  # the tool called, for a tool-call turn

    @property
    def asks(self) -> bool:
        return "?" in self.text


def _turns(messages: Sequence[Message]) -> list[_Turn]:
    turns: list[_Turn] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        if isinstance(message, UserMessage | AssistantMessage):
            for call in message.tool_calls or []:
                turns.append(_Turn(message.role, "", call.name))
            if message.content:
                turns.append(_Turn(message.role, _plain(message.content)))
    return turns


def _said(turns: list[_Turn], role: str) -> list[int]:
    return [i for i, t in enumerate(turns) if t.role == role and t.text]


def _next_said(turns: list[_Turn], start: int, role: str) -> int | None:
    return next(
        (i for i in range(start + 1, len(turns)) if turns[i].role == role and turns[i].text), None
    )


def _missing_information(turns: list[_Turn]) -> bool:
    """The user says they lack an id or number, and the agent then looks something up.

    Lacking "it" counts where the agent's last words asked for an id or number.
    """
    for i in _said(turns, "user"):
        asked = [j for j in _said(turns, "assistant") if j < i]
        asked_id = bool(asked) and turns[asked[-1]].asks and _ASKS_ID.search(turns[asked[-1]].text)
        if _MISSING.search(turns[i].text) or (asked_id and _MISSING_IT.search(turns[i].text)):
            return any(t.role == "assistant" and t.call for t in turns[i + 1 :])
    return False


def _ambiguous(turns: list[_Turn]) -> bool:
    """The opening is vague; the agent's first real question asks what the user wants done.

    The opening is read with :func:`says_vaguely`. Questions that only ask who the user is
    (the policy's identification) are passed over.
    """
    users = _said(turns, "user")
    if not users or not says_vaguely(turns[users[0]].text):
        return False
    asked = [
        j
        for j in _said(turns, "assistant")
        if j > users[0]
        and turns[j].asks
        and (_CLARIFY.search(turns[j].text) or not _IDENTIFY.search(turns[j].text))
    ]
    if not asked or not _CLARIFY.search(turns[asked[0]].text):
        return False
    follow = _next_said(turns, asked[0], "user")
    return follow is not None and len(turns[follow].text) > 20


def _user_false_claim(turns: list[_Turn]) -> bool:
    for i in _said(turns, "user"):
        if claims_approval(turns[i].text):
            return any(_DECLINE.search(turns[j].text) for j in _said(turns, "assistant") if j > i)
    return False


_PRICE = re.compile(r"\$\d")


def _proposes(turn: _Turn) -> bool:
    """Whether an agent turn puts something to the user: asks for consent, or names a price."""
    return turn.asks and bool(_PROPOSAL.search(turn.text))


def _reproposed(turns: list[_Turn], cue: Callable[[str], bool]) -> bool:
    """Whether a user turn ``cue`` holds for answers a proposal, and the agent proposes again.

    A proposal comes after the agent has done some work (a tool call), never the greeting,
    and asks for the user's yes or names a price (an open "which items?" proposes nothing).
    A "new" choice that names a reservation, order, line or bill picks which entity the
    request is about: the agent proposed the wrong one and the user corrects it, which is no
    change of mind about the request. Nor is a choice the user had already asked for before
    the proposal (every word of it said in an earlier turn): that repeats it.
    """
    work = next((i for i, t in enumerate(turns) if t.call), len(turns))
    for i in _said(turns, "user"):
        if not cue(turns[i].text):
            continue
        before = [j for j in _said(turns, "assistant") if work < j < i]
        after = _next_said(turns, i, "assistant")
        if (
            before
            and _proposes(turns[before[-1]])
            and after is not None
            and (turns[after].asks or _PRICE.search(turns[after].text))
            and turns[after].text != turns[before[-1]].text
            and not _ID.search(turns[i].text)
            and not _repeats(turns, i)
        ):
            return True
    return False


#: Words of a change-of-mind or condition turn that say nothing about the choice itself.
_CUE_WORDS = frozenset(
    [
        "actually",
        "changed",
        "mind",
        "second",
        "thought",
        "rather",
        "instead",
        "please",
        "with",
        "that",
        "would",
        "have",
        "forgot",
        "mention",
        "mentioned",
        "condition",
        "should",
        "only",
        "wait",
        "thing",
        "something",
        "said",
    ]
)
#: A number keeps the letters glued to it: "2G" (a network type) is not "2 GB".
_CHOICE_WORD = re.compile(r"[a-z]{4,}|\d+(?:\.\d+)?[a-z]*")


def _repeats(turns: list[_Turn], index: int) -> bool:
    """Whether every word naming the choice in user turn ``index`` was said by the user before."""
    words = set(_CHOICE_WORD.findall(turns[index].text.lower())) - _CUE_WORDS
    earlier = " ".join(turns[j].text.lower() for j in _said(turns, "user") if j < index)
    said = set(_CHOICE_WORD.findall(earlier))
    return bool(words) and words <= said


def _preference_change(turns: list[_Turn]) -> bool:
    # A turn that names a condition ("it has to be the Visa, not the gift card") is one.
    return _reproposed(
        turns, lambda text: bool(_CHANGE.search(text)) and not _CONDITION.search(text)
    )


def _constraint_hidden_until_late(turns: list[_Turn]) -> bool:
    return _reproposed(turns, lambda text: bool(_CONDITION.search(text)))


def _emotional_pressure(turns: list[_Turn]) -> bool:
    for i in _said(turns, "user"):
        if _PRESSURE.search(turns[i].text):
            reply = _next_said(turns, i, "assistant")
            if reply is not None and _ACKNOWLEDGE.search(turns[reply].text):
                return True
    return False


def _multi_intent_interleaving(turns: list[_Turn]) -> bool:
    first_call = next((i for i, t in enumerate(turns) if t.call), None)
    if first_call is None:
        return False
    for i in _said(turns, "user"):
        if i < first_call or not (_SIDE.search(turns[i].text) and turns[i].asks):
            continue
        if _ACTION_REQUEST.search(turns[i].text):
            continue  # a further request to act, not a question put aside
        before = [j for j in _said(turns, "assistant") if j < i]
        if before and _CLOSING.search(turns[before[-1]].text):
            continue  # asked once the request was done: a new one, nothing interleaved
        reply = _next_said(turns, i, "assistant")
        if reply is None:
            continue
        if any(t.call for t in turns[reply + 1 :]):
            return True
        back = _BACK.search(turns[reply].text)
        if back and turns[reply].text[back.end() :].strip():
            return True
        user = _next_said(turns, reply, "user")
        # or the user turns back to the request, and the agent takes it up
        text = turns[user].text if user is not None else ""
        user = user if _BACK.search(text) or _RETURN.search(text) else None
        if user is not None and _next_said(turns, user, "assistant") is not None:
            return True
    return False


#: A detector per interaction-challenge value of the ontologies.
DETECTORS: dict[str, Callable[[list[_Turn]], bool]] = {
    "missing_information": _missing_information,
    "ambiguous_preference": _ambiguous,
    "ambiguous_request": _ambiguous,
    "user_false_claim": _user_false_claim,
    "preference_change": _preference_change,
    "constraint_hidden_until_late": _constraint_hidden_until_late,
    "emotional_pressure": _emotional_pressure,
    "multi_intent_interleaving": _multi_intent_interleaving,
}


#: A terse user's typical answer, in words; how many "!" make an exclaiming manner.
_TERSE_WORDS = 10
_EXCLAIMS = 4


def _busy(turns: list[_Turn]) -> bool:
    """No pleasantries in the opening, and the user asks for speed or goes straight to it."""
    users = _said(turns, "user")
    if not users or _GREETING.search(turns[users[0]].text):
        return False
    opening = turns[users[0]].text
    if _IMPERATIVE.search(opening) or any(_BUSY.search(turns[i].text) for i in users):
        return True
    # or answers tersely: half the later turns are a few words ("Yes.", "B1005, 425. Paid.")
    later = sorted(len(turns[i].text.replace("###STOP###", "").split()) for i in users[1:])
    return bool(later) and later[len(later) // 2] <= _TERSE_WORDS


def _chatty(turns: list[_Turn]) -> bool:
    """A friendly aside, or an exclaiming manner throughout (several "!" across the turns)."""
    return _aside(turns) or _exclaiming(turns)


def _aside(turns: list[_Turn]) -> bool:
    """A friendly aside that has nothing to do with the request."""
    return any(_CHATTY.search(turns[i].text) for i in _said(turns, "user"))


def _exclaiming(turns: list[_Turn]) -> bool:
    users = _said(turns, "user")
    exclaims = sum(turns[i].text.count("!") for i in users)
    return exclaims >= _EXCLAIMS or any(_INTERJECTION.search(turns[i].text) for i in users)


#: Asking for speed in so many words ("right now" and "should be quick" only say when).
_HURRY = re.compile(
    r"short on time|pressed for time|in a (?:rush|hurry)|(?:don't|do not) have (?:long|much time"
    r"|all day)|keep (?:this|it) (?:short|quick|brief)|\bquickly\b"
    r"|(?:make it|please be|be as|(?:^|[.!?,]\s*|let's |just )be) quick\b|\bquick,? please\b"
    r"|please,? quick"
    r"|done fast|\bhurry\b|\basap\b|no time\b|wasted (?:enough )?time"
    # bare: "quick as you can", "as soon as possible", "go a bit faster", a lone "quick"
    r"|\b(?:as )?(?:quick|fast|soon)(?:ly)? as (?:you can|possible)\b"
    # (not "work faster" or "speed it up", which may be about the data's speed)
    r"|\b(?:go|move) (?:a (?:bit|little|lot) )?faster\b(?! than)|speed (?:this|things) up"
    r"|(?:^|[.!?,;]\s*)quick(?:ly)?(?:,? (?:please|pls|plz))?\W*$",
    re.IGNORECASE,
)


def _hurried(turns: list[_Turn]) -> bool:
    """The user asks for speed in so many words ("quickly", "in a hurry"), greeting or not."""
    return any(_HURRY.search(turns[i].text) for i in _said(turns, "user"))


def _careful(turns: list[_Turn]) -> bool:
    return any(
        (turns[i].asks or re.search(r"before i", turns[i].text, re.I))
        and _READBACK.search(turns[i].text)
        and _next_said(turns, i, "assistant") is not None
        for i in _said(turns, "user")
    )


def _novice(turns: list[_Turn]) -> bool:
    """The user says they are new to this, and the agent answers them."""
    return any(
        _NOVICE.search(turns[i].text) and _next_said(turns, i, "assistant") is not None
        for i in _said(turns, "user")
    )


def _expert(turns: list[_Turn]) -> bool:
    return any(_EXPERT.search(turns[i].text) for i in _said(turns, "user"))


#: A detector per persona kind but ``brief`` (the manner that shows none of them).
PERSONA_DETECTORS: dict[str, Callable[[list[_Turn]], bool]] = {
    "busy": _busy,
    "chatty": _chatty,
    "careful": _careful,
    "novice": _novice,
    "expert": _expert,
}


def persona_kind(persona: str | None) -> str | None:
    """The manner a persona line asks for (one of :data:`PERSONA_KINDS`), or None.

    A line that names one kind by its word ("You are brief: ... no small talk") asks for that
    kind, whatever else it says; otherwise the first kind whose words the line uses.
    """
    if not persona:
        return None
    named = [kind for kind, _ in PERSONA_KINDS if re.search(rf"\b{kind}\b", persona, re.I)]
    if len(named) == 1:
        return named[0]
    return next((kind for kind, words in PERSONA_KINDS if words.search(persona)), None)


def realized_personas(messages: Sequence[Message], persona: str | None = None) -> set[str]:
    """The persona kinds the user's turns show (see the module docstring for ``brief``).

    ``brief`` is the absence of the other manners, which any plain dialogue shows; given the
    task's ``persona`` line, it is claimed only where that line asks for a brief manner.
    Without it, every dialogue showing no manner but ``busy`` counts as brief.
    """
    turns = _turns(messages)
    shown = {kind for kind, detect in PERSONA_DETECTORS.items() if detect(turns)}
    if _hurried(turns):
        shown.add("busy")
    asked = persona_kind(persona) if persona is not None else None
    if persona is not None:
        # Manners without words (terse answers, a bare request, exclamation marks) are shared
        # by several kinds: they count for the kind the line asks for, not for another.
        if asked != "busy" and not _hurried(turns):
            shown.discard("busy")
        if asked != "chatty" and not _aside(turns):
            shown.discard("chatty")
    if asked == "expert" and not shown & {"novice", "careful", "chatty"}:
        # An expert who never says so reads as a fluent, brief one: claimed, as brief is, by
        # the absence of any contrary manner (no word of being new, no aside, no read-back).
        shown.add("expert")
    if shown - {"busy"}:
        return shown
    if persona is not None and asked != "brief":
        return shown
    return shown | {"brief"}


def realized_challenges(messages: Sequence[Message], challenges: Sequence[str] = ()) -> set[str]:
    """The interaction challenges ``messages`` act out (among ``challenges``; default all)."""
    turns = _turns(messages)
    names = challenges or sorted(DETECTORS)
    return {c for c in names if c in DETECTORS and DETECTORS[c](turns)}
