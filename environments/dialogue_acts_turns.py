"""Per-turn detectors of dialogue acts, and the cue words they and the dialogue-level ones read."""

from __future__ import annotations

import re

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
_BUSY = re.compile(
    r"short on time|pressed for time|in a (?:rush|hurry)|(?:don't|do not) have (?:long|much time"
    r"|all day)|keep (?:this|it) (?:short|quick|brief)|\bquick(?:ly)?\b(?! (?:question|one|thing"
    r"|unrelated))|\bfast\b|\bhurry\b|\basap\b|right (?:now|away)|no time|wasted (?:enough )?time",
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
    are a manner rather than the emotional pressure
    :data:`~evosyn.environments.dialogue_acts.DETECTORS` reads.
    """
    text = _plain(text)
    return any(cue.search(text) for cue in (_PRESSURE, _HURRY, _IRKED, _IMPATIENT))


def new_to_it(text: str) -> bool:
    """Whether ``text`` says the speaker is new to this and asks how it works."""
    return bool(_NOVICE.search(_plain(text)))


def asks_what_exactly(text: str) -> bool:
    """Whether ``text`` asks what exactly the other side wants done."""
    return "?" in text and bool(_WHAT_EXACTLY.search(_plain(text)))
