"""The reward server: a trajectory in, the replay verifier's reward and reasons out, over HTTP.

Routes (JSON):

* ``GET /health``: ``{"status": "ok", "domains": [...], "tasks": N}``;
* ``POST /reward``: one :class:`RewardRequest`, answered with a :class:`RewardVerdict`;
* ``POST /rewards``: ``{"requests": [...]}``, answered with ``{"verdicts": [...]}`` in order.

A request names a task of the served task set (``task_id``) or brings a τ²-bench task
(``task``, as in ``tasks.json``); ``messages`` are τ²-bench messages as JSON (what
``Message.model_dump(mode="json")`` writes: ``role``, ``content``, ``tool_calls``, tool
messages' ``id``...). A malformed request is a 400 and an unknown task a 404, each with an
``error`` line. The verdict is τ²-bench's (``tau2_reward``) and the verifier's (``reward``,
``passed``), as :class:`~evosyn.agents.episodes.reward.RewardScorer` computes them.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from tau2.data_model.simulation import TerminationReason
from tau2.data_model.tasks import Task

from evosyn.agents.episodes.reward import RewardScorer, RewardVerdict
from evosyn.agents.episodes.tasks import TaskSet
from evosyn.environments.registry import list_domains
from evosyn.environments.trajectories import parse_message

ModelT = TypeVar("ModelT", bound=BaseModel)

# Parsed inline tasks kept, by the digest of their JSON: trainers send the same tasks again.
_TASK_CACHE = 1024


class RewardRequest(BaseModel):
    """One conversation to score."""

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = Field(default=None, description="A task of the served set.")
    task: dict[str, Any] | None = Field(default=None, description="A τ²-bench task as JSON.")
    domain: str | None = Field(
        default=None, description="Domain of an inline task (default: the served set's)."
    )
    messages: list[dict[str, Any]] = Field(description="The conversation, τ²-bench messages.")
    termination_reason: str | None = Field(
        default=None, description="How the conversation ended (τ²-bench's reason); None: a stop."
    )


class RequestError(ValueError):
    """A request the server cannot score; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class RewardService:
    """Scores :class:`RewardRequest`s: tasks by id or inline, one scorer per domain.

    Args:
        tasks: The task set requests may name by id (None: inline tasks only).
        domain: The domain of inline tasks without one (default: the task set's).
        policy: Which trajectories the domain's policy model checks (see
            :class:`RewardScorer`).
    """

    def __init__(
        self, tasks: TaskSet | None = None, domain: str | None = None, policy: str = "synthetic"
    ) -> None:
        self.tasks = tasks
        self.domain = domain or (tasks.domain if tasks is not None else None)
        self.policy = policy
        self._scorers: dict[str, RewardScorer] = {}
        self._inline: OrderedDict[str, Task] = OrderedDict()

    def domains(self) -> list[str]:
        """The domains scored so far, and the default one."""
        return sorted({*self._scorers, *([self.domain] if self.domain else [])})

    def scorer(self, domain: str) -> RewardScorer:
        """The scorer of ``domain`` (made on first use)."""
        if domain not in list_domains():
            raise RequestError(f"unknown domain {domain!r}; known: {', '.join(list_domains())}")
        if domain not in self._scorers:
            self._scorers[domain] = RewardScorer(domain, policy=self.policy)
        return self._scorers[domain]

    def score(self, request: RewardRequest) -> RewardVerdict:
        """The verdict on one request.

        Raises:
            RequestError: A malformed request (400) or an unknown task (404).
        """
        task, domain = self._task(request)
        if request.termination_reason is not None:
            try:
                TerminationReason(request.termination_reason)
            except ValueError:
                known = ", ".join(r.value for r in TerminationReason)
                raise RequestError(
                    f"unknown termination_reason {request.termination_reason!r}; known: {known}"
                ) from None
        messages = []
        for index, data in enumerate(request.messages):
            try:
                messages.append(parse_message(data))
            except ValueError as exc:
                raise RequestError(f"messages[{index}]: {exc}") from None
        return self.scorer(domain).score(task, messages, request.termination_reason)

    def _task(self, request: RewardRequest) -> tuple[Task, str]:
        if (request.task_id is None) == (request.task is None):
            raise RequestError("give exactly one of task_id and task")
        if request.task_id is not None:
            if self.tasks is None:
                raise RequestError("this server holds no task set: send the task itself", 404)
            if request.task_id not in self.tasks.items:
                raise RequestError(f"no task {request.task_id!r} in the served set", 404)
            return self.tasks[request.task_id].task, self.tasks.domain
        domain = request.domain or self.domain
        if domain is None:
            raise RequestError("an inline task needs a domain (this server has no default)")
        text = json.dumps(request.task, sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()
        task = self._inline.get(key)
        if task is None:
            try:
                task = Task.model_validate(request.task)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise RequestError(f"task: {where}: {first['msg']}") from None
            self._inline[key] = task
            if len(self._inline) > _TASK_CACHE:
                self._inline.popitem(last=False)
        return task, domain


def reward_app(service: RewardService) -> Starlette:
    """The HTTP application of ``service``."""

    async def health(request: Request) -> Response:
        domains = service.domains()
        count = len(service.tasks) if service.tasks is not None else 0
        return JSONResponse({"status": "ok", "domains": domains, "tasks": count})

    async def reward(request: Request) -> Response:
        try:
            verdict = service.score(_parse(RewardRequest, await request.body()))
        except RequestError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        return Response(verdict.model_dump_json(), media_type="application/json")

    async def rewards(request: Request) -> Response:
        try:
            batch = _parse(RewardBatch, await request.body())
            verdicts = [service.score(r) for r in batch.requests]
        except RequestError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        body = RewardVerdicts(verdicts=verdicts).model_dump_json()
        return Response(body, media_type="application/json")

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/reward", reward, methods=["POST"]),
            Route("/rewards", rewards, methods=["POST"]),
        ]
    )


class RewardBatch(BaseModel):
    """Several conversations to score in one request."""

    model_config = ConfigDict(extra="forbid")

    requests: list[RewardRequest] = Field(description="The conversations, in order.")


class RewardVerdicts(BaseModel):
    """The verdicts of a :class:`RewardBatch`, in its order."""

    model_config = ConfigDict(extra="forbid")

    verdicts: list[RewardVerdict] = Field(description="One verdict per request.")


def _parse(model: type[ModelT], body: bytes) -> ModelT:
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise RequestError(f"{where}: {first['msg']}") from None


def serve(service: RewardService, host: str = "127.0.0.1", port: int = 8808) -> None:
    """Serve ``service`` with uvicorn until interrupted (one process, one event loop)."""
    import uvicorn

    uvicorn.run(reward_app(service), host=host, port=port, log_level="warning", access_log=False)
