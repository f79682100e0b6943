"""The programmatic retail Teacher: a blind agent serving the caller's requests.

The conversation follows the retail policy's procedure: the agent authenticates the caller
(email, or name and zip code) before anything else, asks which order the call is about,
reads what it needs (the profile lists the orders, an order its items), lists the details of
every write with its refund, charge or difference and waits for an explicit "yes", makes the
write, and closes with a message that states every ``communicate_info`` string (or, for a
refusal, why policy forbids the request). An out-of-scope request is transferred with
τ²-bench's transfer message. The agent side (:class:`RetailAgent`) never sees the task; the
user side (:class:`RetailUser`) answers from it. Every tool call is executed, in order, on the
task's initial state, so every observation is the real one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.data_model.tasks import Action
from tau2.domains.retail.data_model import Order, RetailDB

from evosyn.environments.base import DomainState
from evosyn.environments.information_flow import Seen
from evosyn.environments.kit import acting, phrasing
from evosyn.environments.kit.agent import ScriptedAgent
from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.phrasing import money
from evosyn.environments.kit.scripted import ScriptedTeacher, ScriptedUser
from evosyn.environments.kit.sealed import SealedAction
from evosyn.environments.retail import policy

# Templates of the phrase grammar (environments/kit/grammar.py): (a|b) picks, [x] may drop.
GREETINGS: tuple[str, ...] = (
    "(Hi|Hello|Hey there|Good (morning|afternoon)), I (need|could use) [some ]help with "
    "(my (orders|order|account)|(an|a recent) order)[, please].",
    "(Hi|Hello)[ there], I'm (calling|writing|reaching out) about (an order I placed|a "
    "purchase|my account).",
    "(Good (morning|afternoon)|Hi)! (I have a (question|problem) (about|with) (a purchase|an "
    "order)|Could you help me with (my account|an order)?)",
)
ASK_AUTH: tuple[str, ...] = (
    f"[{phrasing.AGENT_OPENER}. ](First|To start|Before anything else|Before we (begin|go "
    "on)|So I can find your account), I (need to|have to|must) (verify|confirm) your "
    "identity. (Could|Can|Would) you (give me|share|provide|tell me) "
    "(your email[ address], or your[ full] name and zip code|the email on your account, or "
    "your[ full] name and zip code)?",
    f"[{phrasing.AGENT_OPENER}. ](What's|What is|May I have|Could I have|Can I get) (your email"
    "[ address]|the email (on|for) your account)[, please]? (If you'd rather|Alternatively|Or, "
    "if that's easier), your[ full] name and zip code (work|will do) too[ - I need one or the "
    "other to verify your identity].",
    f"[{phrasing.AGENT_OPENER}. ](I'll|Let me) (find|look up|pull up) your account (first|to "
    "start)[ and verify your identity]. (Could|Can) you (give me|share|tell me) your "
    "(email[ address]|email), or your[ full] name and zip code[, please]?",
    f"[{phrasing.AGENT_OPENER}. ](To (verify|confirm) your identity|For security|To find your "
    "account), I('ll| will) need (your email[ address]|the email on your account), or your"
    "[ full] name (and|plus) zip code. (Which would you like to give me|Could you share one of "
    "those|What works for you)?",
)
GIVE_EMAIL: tuple[str, ...] = (
    "(Sure|Of course|Yes|Certainly), (my email is|it's|you can use|the email on the account "
    "is|try) {email}[(, thanks|, thank you)].",
    "[(Sure|OK). ]{email}(| is my email| is the one on my account)[, thanks].",
    "(My email[ address] is|The email[ address] (on file|I used) is) {email}.",
    "(You should find me|I'm registered|My account is) under {email}[(, thanks|, I think)].",
    "(Let's use|Please use|Try) my email[ address]( -|,) {email}[(, thanks|, please)].",
)
GIVE_NAME_ZIP: tuple[str, ...] = (
    "(I'm|This is|My name is|It's) {first_name} {last_name}(, zip code| and my zip [code ]is|"
    ", and the zip is|; my zip code is) {zip}[, thanks].",
    "[(Sure|OK). ]{first_name} {last_name}, (zip|postal code|zip code) {zip}.",
    "(My name's|The name is|Name's) {first_name} {last_name}, (and my zip code is|zip) {zip}.",
    "(It's under|Look for|You'll find me as) {first_name} {last_name}(, zip code| in zip code|, "
    "postcode) {zip}[, thanks].",
)
ASK_ORDER: tuple[str, ...] = (
    f"[{phrasing.AGENT_THANKS}[, you're verified]. ](Which order is this about|Which order do "
    "you mean|Which order are you (calling|writing) about|Which order would you like (help "
    "with|me to look at))[, please]?[ The order id (would help|is the quickest way to find "
    "it)[, if you have it].]",
    f"[{phrasing.AGENT_THANKS}[, you're verified]. ](Could|Can|Would) you (tell me|give me|share"
    "|read me) the order id[ (this is about|you're (calling|writing) about|in question)][, "
    "please]?",
    f"[{phrasing.AGENT_THANKS}[, you're verified]. ](What's|What is) the order id[ (this is "
    "about|you're (calling|writing) about)][, please]?[ It (starts with|begins with) #W.]",
    f"[{phrasing.AGENT_THANKS}. ](You're verified|I've verified your identity|That's you "
    "verified)[, thanks]. (Now, which order is this about|Which order can I help with|What's "
    "the order id)?",
)
GIVE_ORDER: tuple[str, ...] = (
    "(It's|That's|That would be|Sure, it's|Yes, it's|OK, it's) [order ]{order_id}[(, thanks|, "
    "thank you)].",
    "The order (id|number) (is|should be|on my (receipt|email) is) {order_id}[(, I think|, I "
    "believe|, if I'm not mistaken)].",
    "(I have it here|Here it is|Let me look. Here it is|One moment. Got it|Just found it)(: | - )"
    "[(order|the order id) ]{order_id}.",
    "[(Sure|Yes), ]({order_id} is the order|the order I mean is {order_id}|it's the order "
    "{order_id})[(, thanks|, thank you)].",
    "(Sure|Of course|Certainly)(,|.) (the order id is|it's order|you're looking for) {order_id}.",
)
NEXT: tuple[str, ...] = (
    "(Done|That's done|That part is (done|handled|sorted)|All set with that|That's taken care "
    "of)[ now]. (Is there anything else I can help you with|Is there anything else "
    "(you need|I can do for you)|Anything else (I can do for you|you need)[ today]|Is there "
    "something else I can help with)?",
    "(OK|Alright|Great), (that's (done|taken care of)|that part is (done|handled)). (Anything "
    "else|Is there anything else) (you need|I can help with|on your list)[ today]?",
)
#: The caller's next request is one they made already: they ask the agent to go on with it.
GO_ON: tuple[str, ...] = (
    "(Yes|Yes, please)[, thanks]. (Please go on with|Let's do) the rest of what I asked for.",
    "(Yes|Yes, please) - the other (thing|change) I mentioned[, please].",
)
#: The agent has done what the caller asked so far and asks what else they need.
NEXT_ASK: tuple[str, ...] = (
    "(Is there anything else I can help you with|Is there anything else you need|Anything else "
    "(I can do for you|you need)[ today]|Is there something else I can help with)?",
)
ALSO: tuple[str, ...] = (
    "(Also|And|Oh, and|One more thing)[, while I'm here]: {request}",
    "(Yes, actually|Actually, yes). {request}",
)


def _address(args: Mapping[str, str]) -> str:
    parts = [args["address1"], args["address2"], args["city"], args["state"], args["zip"]]
    return ", ".join(p for p in parts if p) + f", {args['country']}"


def _item_words(order: Order | None, item_id: str) -> str:
    item = next((i for i in order.items if i.item_id == item_id), None) if order else None
    if item is None:
        return "the item"
    return f"the {item.name} ({', '.join(str(v) for v in item.options.values())})"


def _variant_words(db: RetailDB, order: Order | None, old: str, new: str) -> str:
    item = next((i for i in order.items if i.item_id == old), None) if order else None
    product = db.products.get(item.product_id) if item else None
    variant = product.variants.get(new) if product else None
    if variant is None:
        return "another option"
    return ", ".join(str(v) for v in variant.options.values())


def describe(call: ToolCall, state: DomainState) -> str:
    """What a retail write does and what it costs, in words for the confirmation request.

    Items are named by product and options, payment methods as the customer knows them, and
    every refund, charge or price difference is stated from the database.
    """
    db = state.db_of(RetailDB)
    args = call.arguments
    order = db.orders.get(str(args.get("order_id", "")))
    owner = db.users.get(order.user_id if order else str(args.get("user_id", "")))

    def paid_with(payment_id: object) -> str:
        method = owner.payment_methods.get(str(payment_id)) if owner else None
        return acting.method_words(method.model_dump(), "your") if method else "your account"

    if call.name == "cancel_pending_order" and order is not None:
        refund = sum(i.price for i in order.items)
        return (
            f"cancel order {order.order_id} (reason: {args['reason']}); the {money(refund)} "
            "you paid is refunded to the original payment method"
        )
    if call.name in ("modify_pending_order_items", "exchange_delivered_order_items"):
        verb = "change" if call.name.startswith("modify") else "exchange"
        pairs = "; ".join(
            f"{_item_words(order, old)} for the one with {_variant_words(db, order, old, new)}"
            for old, new in zip(args["item_ids"], args["new_item_ids"], strict=True)
        )
        difference = (
            policy.price_difference(db, order, args["item_ids"], args["new_item_ids"])
            if order is not None
            else 0.0
        )
        cost = (
            f"you pay the price difference of {money(difference)}"
            if difference > 0
            else f"you get the price difference of {money(-difference)} back"
            if difference < 0
            else "there is no price difference"
        )
        return (
            f"{verb} in order {args['order_id']} {pairs}; {cost}, settled with "
            f"{paid_with(args['payment_method_id'])}. Please make sure these are all the items "
            "you want to change"
        )
    if call.name == "modify_pending_order_address":
        return f"ship order {args['order_id']} to {_address(args)}"
    if call.name == "modify_pending_order_payment":
        return (
            f"pay for order {args['order_id']} with {paid_with(args['payment_method_id'])} instead"
        )
    if call.name == "return_delivered_order_items":
        prices = {i.item_id: i.price for i in (order.items if order else [])}
        refund = sum(prices.get(x, 0.0) for x in args["item_ids"])
        names = ", ".join(_item_words(order, x) for x in args["item_ids"])
        return (
            f"return {names} from order {args['order_id']}; the refund of {money(refund)} goes "
            f"to {paid_with(args['payment_method_id'])}"
        )
    if call.name == "modify_user_address":
        return f"change your default address to {_address(args)}"
    return f"call {call.name} with {json.dumps(args, sort_keys=True)}"


#: An order id as a caller reads it from their receipt.
_ORDER_ID = re.compile(r"#W\d+")
#: A caller who has no order id names the order by what is in it.
ORDER_BY_ITEMS: tuple[str, ...] = (
    "I don't have the order (id|number) (handy|with me)[, sorry] - it's the one with the {item}.",
    "(Hmm, )I (can't find|don't have) the order (id|number)[ right now], but it's the order "
    "with the {item}.",
)


class RetailAgent(ScriptedAgent):
    """The retail agent: authenticates the caller, asks which order, finds the rest."""

    _describe = staticmethod(describe)
    #: How many writes had gone through when the agent last asked for anything else.
    _writes_asked = 0

    def _before(self, request: SealedAction) -> None:
        dialogue, rng = self.dialogue, self.rng
        if len(self.summaries) > self._writes_asked:
            # A change has gone through and the caller still has requests: the agent asks
            # what else they need, and they voice the next one.
            self._writes_asked = len(self.summaries)
            dialogue.assistant(phrasing.pick(rng, NEXT))
            self.user.tell(request, "further")
        if request.name in ("find_user_id_by_email", "find_user_id_by_name_zip"):
            dialogue.assistant(phrasing.pick(rng, ASK_AUTH))
            self.user.tell(request, "identity")
        elif (
            request.name == "get_order_details"
            and "order" not in self.asked
            and not self._order_said()
        ):
            # The first order the call is about is the caller's to name; the rest come from
            # the records.
            self.asked.add("order")
            dialogue.assistant(phrasing.pick(rng, ASK_ORDER))
            self.user.tell(request, "order")

    def _ask(self, request: SealedAction, unseen: Sequence[str]) -> bool:
        """First what else the caller needs, where the agent has been working since they spoke.

        Having done what the caller asked and found nothing that tells it what this request
        is about, the agent asks what else it can do; the caller says their next request.
        """
        messages = self.dialogue.messages
        spoke = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
        worked = any(
            isinstance(m, AssistantMessage) and m.tool_calls for m in messages[spoke + 1 :]
        )
        if not worked:
            return super()._ask(request, unseen)
        self.dialogue.assistant(phrasing.pick(self.rng, NEXT_ASK))
        self.user.tell(request, "further")
        return False

    def _forbidden(self, call: ToolCall) -> str | None:
        """Every retail rule the write would break, those its tools enforce too.

        The agent refuses before it calls, rather than let the tool fail: the policy model's
        full check (:func:`~evosyn.environments.retail.policy.broken_rule`).
        """
        return policy.broken_rule(self.dialogue.state.db_of(RetailDB), call.name, call.arguments)

    def declines(self) -> list[str]:
        """An order the caller named that is not in the profile the agent read: not theirs."""
        said = " ".join(
            m.content or "" for m in self.dialogue.messages if isinstance(m, UserMessage)
        )
        own = {
            order
            for record in self.seen().records
            if isinstance(record, dict) and isinstance(record.get("orders"), list)
            for order in record["orders"]
        }
        if not own:
            return []
        foreign = [o for o in dict.fromkeys(_ORDER_ID.findall(said)) if o not in own]
        return [
            f"order {order} is not on your account, and I can only help with your own orders"
            for order in foreign
        ]

    def _order_said(self) -> bool:
        """Whether the caller has said an order id."""
        return any(
            isinstance(m, UserMessage) and _ORDER_ID.search(m.content or "")
            for m in self.dialogue.messages
        )

    def _lookups(self, seen: Seen) -> list[ToolCall]:
        """A caller's profile lists their orders and payment methods; an order its items.

        An item's product lists the options the item may change to.
        """
        users: list[str] = []
        orders: list[str] = []
        products: list[str] = []
        for record in seen.records:
            if isinstance(record, str) and record and " " not in record:
                users.append(record)  # a user id found by email or by name and zip
            elif isinstance(record, dict):
                if isinstance(record.get("user_id"), str):
                    users.append(record["user_id"])
                listed = record.get("orders")
                if isinstance(listed, list):
                    orders += [o for o in listed if isinstance(o, str)]
                items = record.get("items")
                if isinstance(items, list):
                    products += [
                        str(i["product_id"])
                        for i in items
                        if isinstance(i, dict) and "product_id" in i
                    ]
        return [
            *(_read("get_user_details", user_id=u) for u in dict.fromkeys(users)),
            *(_read("get_order_details", order_id=o) for o in dict.fromkeys(orders)),
            *(_read("get_product_details", product_id=p) for p in dict.fromkeys(products)),
        ][:20]


def _read(name: str, **arguments: str) -> ToolCall:
    return ToolCall(id="", name=name, arguments=arguments, requestor="assistant")


class RetailUser(ScriptedUser):
    """The retail caller: who they are, which order, and what else they want, in their words."""

    def answer(self, topic: str, action: Action | None) -> str | None:
        """The caller's words on ``further``, ``identity``, ``order``, or the kit's topics."""
        rng = self.dialogue.rng
        args = action.arguments if action is not None else {}
        if topic == "further":
            cue = self.cue(action)
            return say(rng, ALSO, request=cue) if cue else say(rng, GO_ON)
        if topic == "identity" and action is not None:
            if action.name == "find_user_id_by_email":
                return say(rng, GIVE_EMAIL, **args)
            return say(rng, GIVE_NAME_ZIP, **args)
        if topic == "order":
            order_id = str(args.get("order_id") or self._order_wanted() or "")
            if order_id and order_id in self.known:
                return say(rng, GIVE_ORDER, order_id=order_id)
            order = self.dialogue.state.db_of(RetailDB).orders.get(order_id)
            if order is None or not order.items:
                return None
            return say(rng, ORDER_BY_ITEMS, item=order.items[0].name)
        return super().answer(topic, action)

    def tell(self, request: SealedAction, topic: str) -> None:
        """The kit's; a further request, said to "anything else?", comes without a side question.

        A question put to "anything else?" is a new request, not one interleaved with the
        request under way: the caller keeps theirs for a later turn.
        """
        self.answering = topic == "further"
        try:
            super().tell(request, topic)
        finally:
            self.answering = False

    def _allowed(self, action: Action, method: str) -> bool:
        """Whether policy allows ``action`` with ``method``.

        A refund goes only to the original method or a gift card; a price difference only to
        a method that can pay it (a gift card with enough balance).
        """
        db = self.dialogue.state.db_of(RetailDB)
        arguments = {**action.arguments, "payment_method_id": method}
        return policy.broken_rule(db, action.name, arguments) is None

    def _order_wanted(self) -> str | None:
        """The order the caller's next request is about."""
        for request in self.queue:
            order_id = self.gold[request].arguments.get("order_id")
            if isinstance(order_id, str):
                return order_id
        return None


class RetailTeacher(ScriptedTeacher):
    """Rolls out retail tasks into trajectories that reach the gold database state."""

    domain_name = "retail"
    default_reason = "I need help with an order."
    greetings = GREETINGS
    agent_side = RetailAgent
    user_side = RetailUser
