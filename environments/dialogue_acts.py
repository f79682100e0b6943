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
  from their own life), or exclaims throughout (several "!", "oh gosh") — a manner nervous
  novices share, so given a persona line asking for another kind only the aside counts;
* ``careful``: the user asks the agent to go over or explain the details before agreeing
  (or to double-check), and the agent answers;
* ``novice``: the user says they are new to this or not at ease with it (first time, never
  done it, not good with phones), and the agent answers;
* ``expert``: the user says they have done this before, know how it goes or the rule, or
  have been a customer for years; given the task's persona line asking for an expert, the
  absence of any contrary manner (no word of being new, no aside, no read-back) counts, as
  for ``brief``;
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

#: The speaker lacks an id or number: says so, lost what carried it, or has nothing more.
_MISSING = re.compile(
    r"(?:don't|do not|can't|cannot|couldn't|no longer|never) (?:have|remember|find|know|recall"
    r"|keep)[^.?!;]{0,60}\b(?:ids?|numbers?|confirmation|code|details)\b"
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
    r"|what (?:would|do) you (?:like|need|want)(?: me)?(?: to (?:do|change|know|sort|have|look)"
    r"| done| sorted| help)"
    r"|what you(?:'d| would) like(?: me)?(?: to (?:do|change|know|sort|have|look)| done|\?)"
    r"|what (?:went|is|'s) (?:wrong|going on|happening)"
    r"|what can i (?:do for you|help (?:you )?with)|what is happening"
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
    r"|(?:agent|representative|rep|someone|person|man|woman|team|they|he|she)"
    r"(?: on the phone)?(?: \w+ly)? (?:told|promised|said|assured|approved|agreed))"
    r"|(?:e-?mail|letter|text|message|notice|website)[^.?!]{0,30}(?:saying|said|says|telling"
    r"|told|stat(?:ed|ing))(?: me)?(?: that)? (?:you|i|we|it)(?:'d|'ll| would| could| will| can)"
    # said again ("The email definitely said that.")
    r"|(?:e-?mail|letter|text|message|notice|website)(?: \w+ly)? (?:said|promised) (?:so|that|it)"
    r"(?=\s*[.!?])",
    re.IGNORECASE,
)
#: The agent finding no trace of it, or not going by it.
_DECLINE = re.compile(
    r"(?:don't|do not|cannot|can't|could not|couldn't) (?:see|find|rely|verify|honou?r|go by"
    r"|apply|confirm)"
    r"|\bno (?:record|note|sign|trace|mention|indication|evidence)"
    r"|nothing (?:was |has been )?(?:recorded|on record|noted|on file"
    r"|in the (?:system|file|record))"
    r"|(?:isn't|is not|wasn't|was not|not) (?:on record|on file|recorded|in (?:the|our) records?)"
    r"|nothing was changed|no .{0,40}(?:was|has been) (?:added|applied|changed|recorded|approved)"
    r"|(?:have|need) to (?:follow|go by|apply) (?:the|our) (?:policy|records|rules)",
    re.IGNORECASE,
)
#: The user changing what they want.
_CHANGE = re.compile(
    r"changed my mind|on second thought|\brather\b|\binstead\b"
    r"|(?:^|[.!?;:,—–-]\s*|\b(?:oh|hmm|um|no|wait)\W+)actually\b"
    r"|(?:^|[,.!?;—–-]\s*)(?:wait|hold on|hang on|scratch that)\b\s*[,.!—–-]"
    r"|now that i think|make it\b|switch (?:it|to)"
    r"|^\W*(?:no|hmm|wait)\b[,.!]? (?:put|make|use|let's|go|i'd|i want|change)",
    re.IGNORECASE,
)
#: The user adding a condition the choice has to meet.
_CONDITION = re.compile(
    r"(?:one|a) (?:more )?(?:condition|requirement|thing i (?:didn't|did not|forgot to) mention)"
    r"|should have (?:mentioned|said)|forgot (?:to (?:mention|say)|one thing|something)|only if"
    r"|(?:it|this|that) (?:has|needs|must|'s got|have) (?:to )?(?:be|go|come|stay)\b"
    r"|i (?:have|need) to be|before you (?:do|go|proceed|submit|book|charge|process|finali[sz]e)\b"
    r"|as long as|provided (?:that|it)|only (?:want|agree) to [^.?!]{0,40} if|at (?:least|most) \$"
    r"|(?:under|below|no more than) \$",
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
    # distress
    r"|shaken|anxious|panick?|distress|losing my mind",
    re.IGNORECASE,
)
#: Irritation ("Ugh. Fine.", "it's driving me mad"): impatience, not pressure on the agent.
_IRKED = re.compile(r"\bugh\b|driving me \w+", re.IGNORECASE)
_ACKNOWLEDGE = re.compile(
    r"\bunderstand\b|\bsorry\b|apologi|i hear you|frustrating|stressful|i know (?:this|that|it)"
    r"|let's (?:get|sort)|i'll (?:be|keep (?:this|it)) (?:quick|brief|short)|as quick(?:ly)? as",
    re.IGNORECASE,
)
#: Ids a user names: order (#W...), reservation (6 capitals/digits), bill, line, customer.
_ID = re.compile(r"#W\d+|\b[A-Z0-9]{6}\b|\b[BLC]\d{4,}\b")
#: A question put aside from the request.
_SIDE = re.compile(
    r"while (?:i have you|i've got you|(?:you|we)(?:'re| are| have)\b[^.?!]{0,25}|i think of it)"
    r"|(?:quick|random) (?:question|one|thing)|by the way"
    r"|(?:side|separate|different|other) (?:question|issue|matter)"
    r"|one more thing|unrelated|\balso\b|before (?:i|we|you) (?:forget|go on|continue|carry on)",
    re.IGNORECASE,
)
#: A request to act ("can you update my address?", "I'd also like to cancel ..."): another
#: intent, not a side question.
_ACTION_REQUEST = re.compile(
    r"(?:(?:can|could|would|will) you (?:please |also )?"
    r"|\bi(?:'d| would)? (?:also )?(?:like|want|need) to (?:also )?)(?:change|update|modify"
    r"|cancel|book|add|remove|return|exchange|switch|move|make(?! sure)|set|send|refund|upgrade)\b",
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
    r"|\b(?:ha|haha|lol)\b|exciting|classic me|i do love|favou?rite|have a (?:lovely"
    r"|wonderful) (?:day|one|afternoon|evening)|enjoy the rest|real-time chat"
    # a story from the user's own life, told in passing
    r"|long story|you know how it is|(?:a|whole|such a|real) saga|driving me \w+"
    r"|my (?:daughter|son|kids?|nephew|niece|grand\w+|buddy|cousin|cat|dog|puppy)\b"
    r"|lifesaver|thanks a (?:million|bunch|ton)"
    r"|super helpful|you(?:'re| are| have been| 've been) (?:the best|a star|so kind)",
    re.IGNORECASE,
)
#: Interjections: an exclaiming manner, which nervous novices and upset users share.
_INTERJECTION = re.compile(r"\b(?:ooh+|aw+|shucks|oops|yay|whoa|oh gosh|oh my)\b", re.IGNORECASE)
_READBACK = re.compile(
    r"(?:read|repeat|go over|run through|say) (?:that|it|this|the details|everything|why)"
    r"(?: (?:back|again|once more))?"
    r"|double[- ]check|to be (?:sure|safe)|make sure (?:i|we) (?:understand|have|got)"
    r"|make sure (?:that's|that is|it's|it is|this is) (?:right|correct)|once more"
    r"|just to (?:confirm|check)"
    r"|before i (?:say yes|agree|accept|decide|confirm)|(?:you're|you are|are you) sure"
    r"|explain (?:exactly|the charge|what|how)|\bexplained\b|walk me through|break (?:it|that) down"
    r"|(?:know|tell me) exactly|check (?:it|that|this|everything) (?:once more|again)"
    # "before you do that, put it on my card" adds a condition; a careful user asks first
    r"|before (?:you|we) (?:do|proceed|agree|go ahead)[^.!]*\b(?:confirm|check|tell me|what"
    r"|how much|explain|read|go over)\b|before anything else",
    re.IGNORECASE,
)
_NOVICE = re.compile(
    r"first time|never (?:done|had to do|called about|booked|used|ordered) (?:this|anything like"
    r" this|through|over|online|before)|haven't (?:done|booked|used) this|new to (?:this|online)"
    r"|(?<!know )how (?:does|will|do) (?:this|it|the process|a \w+|\w+s) (?:usually |even )?work"
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
    r"|(?:don't|do not) (?:really )?\w+(?: \w+){0,2} online much",
    re.IGNORECASE,
)
_EXPERT = re.compile(
    r"know the drill|know how (?:it|this) (?:goes|works)|know (?:the|your) (?:procedure|process"
    r"|routine|rules)|i know (?:it|this|that|you) (?:has|have|need|needs|must|can)"
    r"|(?<!never )(?<!not )(?<!n't )(?:done|been through) this (?:before|a few times|many times)"
    r"|(?:for|in) (?:years|ages)\b|\bi always\b|as (?:usual|always)|the usual\b"
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
    return bool(_MISSING.search(text))


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
    r"\b(?:cancel\w*|chang(?:e|ed|ing)|modif(?:y|ied)|book|add(?:ed)?|remov(?:e|ed)|drop"
    r"|return(?:ed)?|exchang(?:e|ed)|swap(?:ped)?|replac(?:e|ed)|refund(?:ed)?|compensat\w*"
    r"|upgrad(?:e|ed)|downgrad(?:e|ed)|pay|paid|mov(?:e|ed)|switch(?:ed)?|updat(?:e|ed)"
    r"|ship(?:ped)?|sen[dt]|redirect(?:ed)?|track|reactivat\w*|resum(?:e|ed)|lift(?:ed)?"
    r"|unsuspend\w*|enabl(?:e|ed)|disabl(?:e|ed)|turn(?:ed)? (?:on|off)|refuel\w*|top up"
    r"|waiv(?:e|ed)|slow|overdue|suspended|no (?:signal|service|data)|broken|damaged|delayed"
    # asking to know something in particular ("I'd like to know how much I paid")
    r"|(?:like|want|need) to (?:know|check|see) (?:how|what|when|where|why|if|whether))\b"
    r"(?! (?:something|some ?things?|a few things|anything|stuff)\b)",
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
    rest = [s for s in _SENTENCE.split(text.strip()) if not _leaves_the_request_aside(s)]
    return bool(rest) and all(
        (_VAGUE.search(sentence) or _TOPIC_ONLY.search(sentence)) and not _requests(sentence)
        for sentence in rest
    )


#: A claim reported rather than made ("regardless of what the other agent said").
_REPORTED = re.compile(
    r"(?<!that's )(?<!that is )(?<!this is )(?<!exactly )\bwhat (?:\w+ ){0,2}$", re.IGNORECASE
)


def claims_approval(text: str) -> bool:
    """Whether ``text`` says an earlier approval, promise or fix was given.

    Referring to it as "what they told me" (to accept or question it) makes no claim.
    """
    return any(not _REPORTED.search(text[: m.start()]) for m in _CLAIM.finditer(text))


def presses(text: str) -> bool:
    """Whether ``text`` shows upset, stress, urgency or impatience.

    Asking for speed in so many words ("quick, please") and irritation ("Ugh. Fine.") press
    too, though alone they are a manner rather than the emotional pressure :data:`DETECTORS`
    reads.
    """
    return any(cue.search(text) for cue in (_PRESSURE, _HURRY, _IRKED))


def new_to_it(text: str) -> bool:
    """Whether ``text`` says the speaker is new to this and asks how it works."""
    return bool(_NOVICE.search(text))


def asks_what_exactly(text: str) -> bool:
    """Whether ``text`` asks what exactly the other side wants done."""
    return "?" in text and bool(_WHAT_EXACTLY.search(text))


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
                turns.append(_Turn(message.role, message.content))
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
        user = user if user is not None and _BACK.search(turns[user].text) else None
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
    r"|done fast|\bhurry\b|\basap\b|no time\b|wasted (?:enough )?time",
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
