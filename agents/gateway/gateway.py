"""The LLM gateway: every model call of the project, with limits, retries, cache and accounting.

A ``Gateway`` serves one role. It calls litellm (which reads API keys from the environment),
holds a per-model concurrency slot during each attempt, retries transient failures with
exponential backoff and full jitter (at least as long as a server's ``Retry-After``), serves
repeated requests from a disk cache, and keeps one ``LLMCall`` row per attempt until ``drain``
hands them to the caller that stores them (``tasks/`` writes them to the lake).

The cache is on by default for the gateways of a campaign's roles, in a folder of that campaign
(``bind_campaign``): a campaign resumed after a crash gets back every answer its killed run had
received, so only the requests that were in flight are sent again, while another campaign
draws new samples. ``cache: false`` switches it off.

Two guards keep a campaign within what its servers and its budget allow: the per-model limit
adapts to latency (``limits``), a circuit breaker pauses a role after ``breaker_failures``
consecutive transient failures (the row that opened it says why in ``note``), and with
``llm.budget_usd`` set no attempt is sent once the campaign's calls have cost the cap (with
``llm.round_budget_usd``, once the calls of the gateway's round, ``for_round``, have).
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.gateway.budget import SpendLedger, ledger_for
from evosyn.agents.gateway.cache import ResponseCache, campaign_scope, request_digest
from evosyn.agents.gateway.client import direct_model, send, shared_client
from evosyn.agents.gateway.errors import BudgetExceeded, LLMError, RetryableLLMError, classify
from evosyn.agents.gateway.limits import SHARED_LIMITER, ConcurrencyLimiter
from evosyn.agents.gateway.settings import GatewaySettings, resolve_settings
from evosyn.config import LLMSection, ModelPrice
from evosyn.records import LLMCall, utcnow

logger = logging.getLogger(__name__)


def calls_batch(prefix: str, rows: Sequence[LLMCall]) -> str:
    """The lake batch key of ``llm_calls`` rows: the prefix and the first attempt.

    The same rows always land under the same key (a retried write replaces its file) and
    different rows never replace each other.
    """
    return f"{prefix}-{rows[0].call_id[:12]}-{rows[0].attempt}"


def _litellm() -> Any:
    """litellm, imported on first use: it takes seconds, and only a model call needs it."""
    import litellm

    return litellm


class Usage(BaseModel):
    """Tokens of one completion."""

    model_config = ConfigDict(extra="forbid")

    tokens_in: int = Field(default=0, ge=0, description="Prompt tokens.")
    tokens_out: int = Field(default=0, ge=0, description="Completion tokens.")


class Completion(BaseModel):
    """A model's answer, decoupled from litellm's response objects."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(description="Id of the call (shared by its LLMCall rows).")
    model: str = Field(description="litellm model string that answered.")
    text: str | None = Field(default=None, description="Text content of the reply.")
    tool_calls: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Requested tool calls in OpenAI form: id, type, function.name/arguments.",
    )
    finish_reason: str | None = Field(default=None, description="Why generation stopped.")
    usage: Usage = Field(default_factory=Usage, description="Token counts of the reply.")
    cost: float | None = Field(
        default=None,
        description="USD cost of producing the reply when litellm knows it (for a cached reply: "
        "what its first call paid; the hit itself costs nothing, see its llm_calls row).",
    )
    cached: bool = Field(default=False, description="True when served from the cache.")


class _Attempt(BaseModel):
    """One attempt before it is bound to a campaign and round."""

    call_id: str
    attempt: int
    role: str
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    outcome: Literal["ok", "error", "cached"]
    error_class: str | None = None
    note: str | None = None
    started_at: datetime


def _tool_call_dict(call: Any) -> dict[str, Any]:
    function = call.function
    return {
        "id": call.id,
        "type": getattr(call, "type", None) or "function",
        "function": {"name": function.name, "arguments": function.arguments or ""},
    }


def _cost(response: Any) -> float | None:
    # litellm prices every response as it returns it; pricing it again doubles that CPU.
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if cost is None:
        try:
            cost = _litellm().completion_cost(completion_response=response)
        except Exception:
            # Models missing from litellm's price map (local vLLM, test servers) have no cost.
            return None
    return float(cost) if cost is not None and cost >= 0 else None


def price(
    completion: Completion, price: ModelPrice | None, latency_s: float, sharing: int
) -> float | None:
    """The USD of ``completion``: litellm's price, else the configured one, else None.

    The configured price counts when litellm has none or $0 (self-hosted models). A GPU-hour
    price is shared among the ``sharing`` requests in flight during the attempt.
    """
    if completion.cost or price is None:
        return completion.cost
    return (
        completion.usage.tokens_in * price.input_per_mtok / 1e6
        + completion.usage.tokens_out * price.output_per_mtok / 1e6
        + latency_s * price.gpu_hour / 3600.0 / max(sharing, 1)
    )


def _overloaded(error: LLMError) -> bool:
    """Whether ``error`` says the server is saturated (429, 5xx, timeout, no connection)."""
    if not isinstance(error, RetryableLLMError):
        return False
    return error.status_code is None or error.status_code == 429 or error.status_code >= 500


_UNLISTED: set[str] = set()


def _listed_cost(model: str, completion: Completion) -> float | None:
    """The list price of ``completion``'s tokens in litellm's map; None if it lacks the model."""
    if model in _UNLISTED:
        return None
    try:
        cost_in, cost_out = _litellm().cost_per_token(
            model=model,
            prompt_tokens=completion.usage.tokens_in,
            completion_tokens=completion.usage.tokens_out,
        )
    except Exception:
        # Not in the price map (a local model): ask once per model, not once per call.
        _UNLISTED.add(model)
        return None
    return float(cost_in + cost_out)


def _to_completion(response: Any, call_id: str, model: str, priced: bool = True) -> Completion:
    if not getattr(response, "choices", None):
        raise ValueError("response has no choices")
    choice = response.choices[0]
    message = choice.message
    usage = getattr(response, "usage", None)
    return Completion(
        call_id=call_id,
        model=model,
        text=message.content,
        tool_calls=[_tool_call_dict(c) for c in (message.tool_calls or [])],
        finish_reason=choice.finish_reason,
        usage=Usage(
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
        ),
        cost=_cost(response) if priced else None,
    )


class Gateway:
    """The model calls of one role.

    Args:
        role: role name recorded on every row (``designer``, ``teacher``, ...).
        settings: resolved settings of the role (see ``Gateway.from_config``).
        limiter: concurrency registry; default: the one shared by the whole process.
        seed: seed of the backoff jitter.
        sleep: how to wait between attempts (tests may pass a recorder).
        campaign_id: the campaign the role serves, if any (see ``bind_campaign``).
        lake_root: the lake of that campaign (part of the cache scope; its ``llm_calls`` rows
            are the spend so far when ``budget_usd`` is set).
        clock: monotonic seconds of the circuit breaker (tests may pass their own).

    """

    def __init__(
        self,
        role: str,
        settings: GatewaySettings,
        *,
        limiter: ConcurrencyLimiter | None = None,
        seed: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        campaign_id: str | None = None,
        lake_root: str | Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.role = role
        self.settings = settings
        self.limiter = limiter or SHARED_LIMITER
        self.cache: ResponseCache | None = None
        self.campaign_id: str | None = None
        self.ledger: SpendLedger | None = None
        # The round the calls are for now (their rows' round): what the round cap counts.
        self.round: int | None = None
        self._clock = clock
        # Circuit breaker: consecutive transient failures, and while open, until when.
        self._breaker = threading.Condition()
        self._failures = 0
        self._open_until: float | None = None
        self._probing = False
        self._probe_failures = 0
        self._breaker_reason = ""
        if campaign_id is not None:
            self.bind_campaign(campaign_id, lake_root)
        elif settings.cache:
            # Asked for outside a campaign: one folder shared by every such gateway.
            self.cache = ResponseCache(settings.cache_dir)
        self._rng = random.Random(seed)
        self._sleep = sleep
        self._lock = threading.Lock()
        # One drain at a time: two overlapping drains would store the same rows twice and
        # then drop rows neither stored.
        self._drain_lock = threading.Lock()
        self._attempts: list[_Attempt] = []
        # The kind of request the adaptive limit compares latencies within: this role at
        # its endpoint (a teacher's long replies and a planner's short ones each have theirs).
        self._kind = f"{role}@{settings.api_base}" if settings.api_base else role
        # litellm prints a feedback banner on every exception; errors are ours to report.
        _litellm().suppress_debug_info = True

    @classmethod
    def from_config(
        cls,
        llm: LLMSection,
        role: str,
        *,
        limiter: ConcurrencyLimiter | None = None,
        seed: int | None = None,
        campaign_id: str | None = None,
        lake_root: str | Path | None = None,
        **overrides: Any,
    ) -> Gateway:
        """A gateway for ``role`` from the campaign's ``llm`` section (``overrides`` last)."""
        return cls(
            role,
            resolve_settings(llm, role, **overrides),
            limiter=limiter,
            seed=seed,
            campaign_id=campaign_id,
            lake_root=lake_root,
        )

    def bind_campaign(self, campaign_id: str, lake_root: str | Path | None = None) -> Gateway:
        """Serve campaign ``campaign_id`` of the lake at ``lake_root``; returns the gateway.

        Unless the role sets ``cache: false``, answers are cached under
        ``cache_dir/<campaign id>-<lake digest>`` from now on: the campaign, resumed after a
        crash, gets back what its killed run had been answered (the chunk it re-runs repeats
        those requests byte for byte), and another campaign, or the same id in another lake,
        draws new samples. Calls that must get a new answer differ in their request (a repair
        turn quotes the failed reply; a repair rollout has its own seed and prompt).
        """
        scope = campaign_scope(campaign_id, lake_root)
        self.bind_spend(campaign_id, lake_root)
        if self.settings.cache is False:
            self.cache = None
        else:
            self.cache = ResponseCache(Path(self.settings.cache_dir) / scope)
        return self

    def bind_spend(
        self, campaign_id: str, lake_root: str | Path | None = None, round: int | None = None
    ) -> Gateway:
        """Count this gateway's calls toward campaign ``campaign_id``'s caps; returns it.

        The gateway shares the campaign's ledger (when a cap is set) with every gateway bound
        to it in this process; its response cache is left as it is, so a learner's evaluation
        (bound this way) is counted and capped but never answered from the campaign's cache.
        ``round``, when given, is the round the calls are for (``for_round``).
        """
        self.campaign_id = campaign_id
        s = self.settings
        if s.budget_usd is not None or s.round_budget_usd is not None:
            self.ledger = ledger_for(campaign_scope(campaign_id, lake_root), campaign_id, lake_root)
        if round is not None:
            self.for_round(round)
        return self

    @property
    def endpoint(self) -> str:
        """The model and where its calls go: ``openai/m at http://host/v1``."""
        where = self.settings.api_base or "its provider's default endpoint"
        return f"{self.settings.model} at {where}"

    def for_round(self, round: int) -> Gateway:
        """Charge the calls from now on to ``round`` (the round their rows are stored under)."""
        self.round = round
        return self

    # ------------------------------------------------------------------ calling

    def _params(self, params: dict[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
        }
        merged.update(params)
        return {k: v for k, v in merged.items() if v is not None}

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based)."""
        s = self.settings
        ceiling = min(s.backoff_max_s, s.backoff_base_s * 2.0**attempt)
        delay = self._rng.uniform(0.0, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, s.retry_after_max_s))
        return delay

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        call_id: str | None = None,
        **params: Any,
    ) -> Completion:
        """Send one chat request and return the model's answer.

        Args:
            messages: OpenAI-style messages (``role``, ``content``, ...).
            tools: OpenAI-style tool schemas, if the model may call tools.
            call_id: id of the call; default: a fresh random one.
            **params: further request parameters (``tool_choice``, ``seed``, ``stop``,
                ``temperature`` to override the role's, ...); part of the cache key.

        Raises:
            FatalLLMError: the request cannot succeed (bad request, auth, context length).
            RetryableLLMError: every attempt failed transiently.
            BudgetExceeded: the campaign's calls have cost ``llm.budget_usd``, or its
                round's ``llm.round_budget_usd`` (a cached answer is still served: it costs
                nothing).

        """
        s = self.settings
        if params.get("stream"):
            raise ValueError("the gateway returns whole completions: stream=True is not supported")
        call_id = call_id or uuid.uuid4().hex
        msgs = [dict(m) for m in messages]
        tool_list = [dict(t) for t in tools] if tools else None
        request = self._params(params)
        digest = request_digest(s.model, msgs, tool_list, request) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(digest, Completion)
            if hit is not None:
                self._record(call_id, 0, "cached", utcnow(), 0.0)
                # The hit costs nothing (its row says so), but usage and cost describe the reply
                # as first produced: a resumed chunk stores the same messages as the first run.
                return hit.model_copy(update={"call_id": call_id, "cached": True})
        aimd = s.aimd()
        # A request after a reply of the model (a repair turn, a conversation's next turn)
        # finishes work under way: it waits for a slot before requests that start new work.
        resumes = any(m.get("role") == "assistant" for m in msgs)
        charged = self.round
        for attempt in range(s.max_attempts):
            self._check_budget(charged)
            gate = self._pass_breaker(can_wait=s.max_attempts > 1)
            started_at = utcnow()
            error: LLMError | None
            if isinstance(gate, LLMError):
                # Held back by the open breaker: an attempt that never reached the server.
                self._record(call_id, attempt, "error", started_at, 0.0, error=gate)
                self._give_up_or_wait(gate, call_id, attempt)
                continue
            probe = gate
            with self.limiter.slot(s.model, s.concurrency, aimd, resumes) as sharing:
                clock = time.monotonic()
                try:
                    completion = self._send(msgs, tool_list, request, call_id)
                except Exception as exc:
                    error = classify(exc)
                    latency = time.monotonic() - clock
                else:
                    latency = time.monotonic() - clock
                    error = None
            if error is None:
                limit_note = self.limiter.observe(
                    s.model, s.concurrency, latency_s=latency, load=sharing, kind=self._kind
                )
                self._close_breaker(probe)
                cost = price(completion, s.price, latency, sharing)
                completion = completion.model_copy(update={"cost": cost})
                if self.ledger is not None and cost:
                    self.ledger.add(cost, charged)
                self._record(
                    call_id, attempt, "ok", started_at, latency, completion, note=limit_note
                )
                if self.cache is not None:
                    try:
                        self.cache.put(digest, completion)
                    except OSError as exc:
                        # The answer is paid for and valid: a full disk costs the cache, not it.
                        logger.warning("%s: caching %s failed: %s", self.role, call_id, exc)
                return completion
            limit_note = None
            if _overloaded(error):
                status = f" {error.status_code}" if error.status_code is not None else ""
                limit_note = self.limiter.observe(
                    s.model,
                    s.concurrency,
                    latency_s=latency,
                    load=sharing,
                    overloaded=True,
                    cause=f"{error.error_class}{status}",
                    kind=self._kind,
                )
            note = "; ".join(n for n in (self._failed(error, probe), limit_note) if n) or None
            self._record(call_id, attempt, "error", started_at, latency, error=error, note=note)
            self._give_up_or_wait(error, call_id, attempt)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _give_up_or_wait(self, error: LLMError, call_id: str, attempt: int) -> None:
        """Raise ``error`` when it is fatal or the last attempt failed; else wait to retry."""
        s = self.settings
        error.attempts = attempt + 1
        error.args = (
            f"{self.role} call to {s.model} failed after {error.attempts} attempt(s): {error}",
        )
        if not isinstance(error, RetryableLLMError) or attempt + 1 >= s.max_attempts:
            raise error from None
        wait = self.backoff(attempt, error.retry_after)
        logger.warning(
            "%s call %s to %s: attempt %d/%d failed (%s); retrying in %.2fs",
            self.role,
            call_id,
            s.model,
            attempt + 1,
            s.max_attempts,
            error.error_class,
            wait,
        )
        self._sleep(wait)

    def _send(
        self,
        msgs: list[dict[str, Any]],
        tool_list: list[dict[str, Any]] | None,
        request: dict[str, Any],
        call_id: str,
    ) -> Completion:
        """One attempt: straight to an OpenAI-compatible server, or through litellm."""
        s = self.settings
        direct = direct_model(s.model, s.api_base, s.client)
        if direct is not None and s.api_base is not None:
            body = dict(request, messages=msgs)
            if tool_list:
                body["tools"] = tool_list
            response = send(shared_client(s.model, s.api_base, s.timeout), direct, body)
            completion = _to_completion(response, call_id, s.model, priced=False)
            return completion.model_copy(update={"cost": _listed_cost(s.model, completion)})
        response = _litellm().completion(
            model=s.model,
            messages=msgs,
            tools=tool_list,
            api_base=s.api_base,
            timeout=s.timeout,
            # Attempts are made and counted here, once each.
            num_retries=0,
            max_retries=0,
            **request,
        )
        return _to_completion(response, call_id, s.model)

    # ------------------------------------------------------------------ guards

    def _check_budget(self, round: int | None) -> None:
        if self.ledger is None:
            return
        cap = self.settings.budget_usd
        if cap is not None:
            spent = self.ledger.spent_usd
            if spent >= cap:
                raise BudgetExceeded(self.role, cap, spent)
        cap = self.settings.round_budget_usd
        if cap is not None and round is not None:
            spent = self.ledger.round_spent(round)
            if spent >= cap:
                raise BudgetExceeded(self.role, cap, spent, round)

    def _pass_breaker(self, can_wait: bool) -> bool | LLMError:
        """Wait while the breaker is open; True when this attempt is the probe that may close it.

        Returns the error of a held-back attempt instead: at once when the call may not wait
        (one attempt only: waiting out a pause is a retry), or when a probe failed while it
        waited (so a call spends at most one attempt per failed probe, and a dead server
        fails the call after ``max_attempts`` pauses instead of holding it for ever).
        """
        with self._breaker:
            seen = self._probe_failures
            while self._open_until is not None:
                wait = self._open_until - self._clock()
                if wait <= 0 and not self._probing:
                    self._probing = True
                    return True
                if not can_wait or self._probe_failures != seen:
                    return RetryableLLMError(
                        f"{self.role} is paused by its circuit breaker ({self._breaker_reason})",
                        "CircuitOpenError",
                    )
                # Woken when the probe settles; otherwise look again when the pause ends.
                self._breaker.wait(timeout=max(wait, 0.05) if not self._probing else None)
            return False

    def _close_breaker(self, probe: bool) -> None:
        with self._breaker:
            if self._open_until is not None:
                logger.warning(
                    "%s: circuit breaker closed: %s answered", self.role, self.settings.model
                )
            self._failures = 0
            self._open_until = None
            if probe:
                self._probing = False
            self._breaker.notify_all()

    def _failed(self, error: LLMError, probe: bool) -> str | None:
        """Count a failed attempt; the reason when it opens (or reopens) the breaker."""
        s = self.settings
        with self._breaker:
            if probe:
                self._probing = False
                self._breaker.notify_all()
            if not isinstance(error, RetryableLLMError):
                return None
            self._failures += 1
            if self._failures < s.breaker_failures or (self._open_until is not None and not probe):
                return None
            self._open_until = self._clock() + s.breaker_pause_s
            if probe:
                self._probe_failures += 1
            status = f" {error.status_code}" if error.status_code is not None else ""
            note = (
                f"circuit breaker opened: {self._failures} consecutive transient failures of "
                f"{s.model} (last {error.error_class}{status}); {self.role} paused "
                f"{s.breaker_pause_s:g}s"
            )
            self._breaker_reason = note
            logger.warning("%s: %s", self.role, note)
            return note

    @property
    def breaker_open(self) -> bool:
        """Whether the circuit breaker pauses the role now."""
        with self._breaker:
            return self._open_until is not None

    # ------------------------------------------------------------------ accounting

    def _record(
        self,
        call_id: str,
        attempt: int,
        outcome: Literal["ok", "error", "cached"],
        started_at: datetime,
        latency: float,
        completion: Completion | None = None,
        error: LLMError | None = None,
        note: str | None = None,
    ) -> None:
        row = _Attempt(
            call_id=call_id,
            attempt=attempt,
            role=self.role,
            model=self.settings.model,
            tokens_in=completion.usage.tokens_in if completion else 0,
            tokens_out=completion.usage.tokens_out if completion else 0,
            cost=completion.cost if completion else (0.0 if outcome == "cached" else None),
            latency_s=max(latency, 0.0),
            outcome=outcome,
            error_class=error.error_class if error else None,
            note=note,
            started_at=started_at,
        )
        with self._lock:
            self._attempts.append(row)

    @property
    def pending(self) -> int:
        """Attempts recorded and not yet drained."""
        with self._lock:
            return len(self._attempts)

    def records(self, campaign_id: str, round: int) -> list[LLMCall]:
        """The undrained attempts as ``LLMCall`` rows of ``campaign_id`` and ``round`` (a look)."""
        with self._lock:
            attempts = list(self._attempts)
        return [LLMCall(campaign_id=campaign_id, round=round, **a.model_dump()) for a in attempts]

    @contextmanager
    def drain(self, campaign_id: str, round: int) -> Iterator[list[LLMCall]]:
        """The unwritten attempts as ``LLMCall`` rows, for the caller to store inside the block.

        They are forgotten here when the block ends, and kept for the next drain when it
        raises (a failed lake write loses nothing). Drains take turns, so threads of one task
        sharing the gateway never store the same rows twice.
        """
        with self._drain_lock:
            rows = self.records(campaign_id, round)
            yield rows
            with self._lock:
                del self._attempts[: len(rows)]
