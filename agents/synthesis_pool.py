"""Programmatic synthesis spread over worker processes, with the rows of a one-process run.

A programmatic Generator, teacher and Verifier are pure computation under one interpreter
lock: threads give a round one core. :class:`ProcessSynthesis` runs them on ``workers``
processes instead. The processes start once per parent process, forked from a fork server
that imported the synthesis modules once (so no worker imports anything), and are kept for
every later round, chunk and campaign; each builds its roles once from a picklable
:data:`RoleSource` (for a campaign, its config through the registries, as
:func:`~evosyn.agents.roles.build_roles` does) and keeps them. Model-backed roles stay on
threads: their work is waiting on the network.

Rows equal a one-process run's, in the same order:

* **Rollouts** are independent per task (every role seeds itself from the task and the
  campaign seed): pieces of a chunk go to the processes and come back in task order.
* **Generation** depends on order: a blueprint's Generator is screened against every task
  kept before it (:class:`~evosyn.agents.synthesis.KeptTasks`) and skips a candidate the
  screen stops. Each process keeps a replica of that index (the caller's kept tasks, then
  every task the parent has kept since) and generates its chunks of blueprints against it,
  and against its own guesses the parent has not taken yet, recording what the screen
  answered for each candidate. The parent takes the blueprints in order and accepts a guess
  only when its index, as it stands then, gives the same answers for the same candidates: a
  Generator is deterministic in (blueprint, seed, screen answers), so the guess is then the
  task it would have made itself. Any other guess (it missed a task kept in a chunk still in
  flight; its Generator raised) is generated again in the parent, by the parent's own
  Generator, retries included; :attr:`ProcessSynthesis.regenerated` counts them. While the
  workers are still starting, the parent generates the first chunks itself rather than wait.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import pickle
import threading
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from tau2.data_model.tasks import Task

from evosyn.agents.generator import Generator, GeneratorRejection
from evosyn.agents.roles import REGISTRIES
from evosyn.agents.synthesis import KeptTasks, Outcome, SynthesisBatch, roll_out_each
from evosyn.agents.teacher import Teacher
from evosyn.agents.verifier import Verifier
from evosyn.config import CampaignConfig
from evosyn.environments.dedup import SeenTasks
from evosyn.environments.registry import DOMAIN_PACKAGES
from evosyn.records import Blueprint, SynthTask

R = TypeVar("R")

SYNTH_WORKERS_ENV = "EVOSYN_SYNTH_WORKERS"
"""Environment variable that overrides the configured worker count on this machine."""

#: Blueprints per generation job: small, so a worker's replica lags the parent's index little.
GENERATION_CHUNK = 8
#: Generation jobs out per worker: enough that a worker never waits for the parent to send
#: more, few because the further the workers run ahead of the parent's checks, the more
#: guesses miss a task kept meanwhile.
GENERATION_QUEUED = 3
#: Tasks per rollout job: large enough that a job's pickling is a small share of its work.
ROLLOUT_PIECE = 10
#: Rollout jobs a worker may hold before a caller waits for one to finish.
ROLLOUT_QUEUED = 2
#: Modules the fork server imports once, so that no worker pays for them (``__main__``: a
#: worker would otherwise import the program's main module, the CLI, itself).
PRELOAD = (
    "__main__",
    "evosyn.agents.synthesis_pool",
    "evosyn.agents.roles",
    *(f"evosyn.environments.{domain}" for domain in DOMAIN_PACKAGES),
)


def local_cores() -> int:
    """Cores this process may run on (its affinity, not the whole machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no affinity call
        return os.cpu_count() or 1


def synthesis_workers(configured: int = 1, environ: Mapping[str, str] | None = None) -> int:
    """Processes programmatic synthesis runs on; 1 means this process (no pool).

    ``EVOSYN_SYNTH_WORKERS``, when set, overrides ``configured`` (the worker count is a
    property of the machine a round runs on). 0 means every core this process may use.

    Raises:
        ValueError: If the variable is not a whole number of at least 0.
    """
    env = os.environ if environ is None else environ
    raw = env.get(SYNTH_WORKERS_ENV, "").strip()
    if raw:
        try:
            configured = int(raw)
        except ValueError:
            configured = -1
        if configured < 0:
            raise ValueError(f"{SYNTH_WORKERS_ENV}={raw!r}: must be a whole number, 0 or more")
    return configured or local_cores()


@dataclass(frozen=True)
class SynthesisRoles:
    """The programmatic roles a worker process synthesizes with."""

    generator: Generator
    teacher: Teacher
    verifier: Verifier


RoleSource = Callable[[], SynthesisRoles]
"""Builds the roles in a worker: picklable, and hashable (a worker keeps what it built)."""


@dataclass(frozen=True)
class CampaignRoles:
    """The Generator, teacher and Verifier of a campaign config, built by their registries."""

    config_json: str = field(repr=False)

    @classmethod
    def of(cls, cfg: CampaignConfig) -> CampaignRoles:
        """The roles of ``cfg``."""
        return cls(cfg.model_dump_json())

    def __call__(self) -> SynthesisRoles:
        """Build the roles (in a worker process)."""
        cfg = CampaignConfig.model_validate_json(self.config_json)

        def build(role: str) -> Any:
            return REGISTRIES[role].build(getattr(cfg.agents, role).kind, cfg)

        return SynthesisRoles(build("generator"), build("teacher"), build("verifier"))


class ProcessSynthesis:
    """The roles of ``roles`` on ``workers`` processes; see the module docstring."""

    def __init__(self, roles: RoleSource, workers: int) -> None:
        if workers < 2:
            raise ValueError(f"a process pool needs 2 or more workers, not {workers}")
        self.roles = roles
        self.workers = workers
        #: Blueprints whose worker guess was not the task the parent's Generator makes now,
        #: generated again in the parent.
        self.regenerated = 0
        #: Blueprints the parent generated itself while the workers were starting.
        self.before_start = 0

    def generated(
        self,
        blueprints: Sequence[Blueprint],
        seed: int,
        kept: KeptTasks,
        here: Callable[[Blueprint], Outcome],
    ) -> Iterator[tuple[Blueprint, Outcome]]:
        """Each blueprint's outcome, in order, as ``here`` (this process's Generator) gives it.

        The caller screens each outcome and keeps tasks in ``kept`` before it asks for the
        next; a blueprint's guess from a worker is checked against ``kept`` as it is then.
        """
        pool = _pool(self.workers)
        token = uuid.uuid4().hex
        base = pickle.dumps(kept.seen) if kept.seen is not None else None
        size = GENERATION_CHUNK
        chunks = [blueprints[i : i + size] for i in range(0, len(blueprints), size)]
        # How many of ``kept.tasks`` each worker's replica has; None: it has no replica yet.
        sent: list[int | None] = [None] * self.workers
        queue: deque[tuple[int, int, Future[list[_Guess] | None]]] = deque()
        taken = 0  # chunks whose outcomes were given to the caller
        ahead = GENERATION_QUEUED * self.workers  # chunks out, done or not, before one is taken

        def top_up() -> None:
            """Give a worker with fewer than GENERATION_QUEUED unfinished chunks the next ones."""
            unfinished = Counter(w for _, w, f in queue if not f.done())
            for worker in range(self.workers):
                while unfinished[worker] < GENERATION_QUEUED and len(queue) < ahead:
                    index = taken + len(queue)
                    if index >= len(chunks):
                        return
                    start = sent[worker]
                    sent[worker] = len(kept.tasks)
                    job = _GenerationJob(
                        roles=self.roles,
                        token=token,
                        base=base if start is None else None,
                        reset=start is None,
                        kept=kept.tasks[start or 0 :],
                        taken=taken,
                        index=index,
                        blueprints=list(chunks[index]),
                        seed=seed,
                    )
                    queue.append((index, worker, pool.submit(worker, _generate, job)))
                    unfinished[worker] += 1

        if not pool.started.is_set():
            self.warm(wait=False)  # the first job would wait for the processes: none is sent
        try:
            while taken < len(chunks):
                if not queue and not pool.started.is_set():
                    # The workers are still starting: the parent generates a chunk itself.
                    for blueprint in chunks[taken]:
                        self.before_start += 1
                        yield blueprint, here(blueprint)
                    taken += 1
                    continue
                top_up()
                index, worker, future = queue[0]
                # A worker that finishes meanwhile gets more, so none waits on the one behind.
                while not future.done():
                    wait([f for _, _, f in queue if not f.done()], return_when=FIRST_COMPLETED)
                    top_up()
                queue.popleft()
                guesses = _result(future)
                if guesses is None:  # the worker lost its replica: send it again
                    sent[worker] = None
                for position, blueprint in enumerate(chunks[index]):
                    guess = guesses[position] if guesses is not None else None
                    if guess is not None and guess.holds(kept):
                        assert guess.outcome is not None
                        yield blueprint, guess.outcome
                    else:
                        self.regenerated += 1
                        yield blueprint, here(blueprint)
                taken = index + 1
        finally:
            for _, _, future in queue:
                future.cancel()

    def roll_out(
        self,
        tasks: Sequence[SynthTask],
        seed: int,
        tries: int = 1,
        progress: Callable[[int], None] | None = None,
    ) -> SynthesisBatch:
        """:func:`~evosyn.agents.synthesis.roll_out_each` over ``tasks``, on the workers."""
        pool = _pool(self.workers)
        pieces = [list(tasks[i : i + ROLLOUT_PIECE]) for i in range(0, len(tasks), ROLLOUT_PIECE)]
        futures: list[Future[SynthesisBatch]] = []
        try:
            for piece in pieces:
                futures.append(pool.submit(None, _roll_out, self.roles, piece, seed, tries))
            batch = SynthesisBatch()
            for piece, future in zip(pieces, futures, strict=True):
                one = _result(future)
                batch.trajectories += one.trajectories
                batch.verifications += one.verifications
                batch.rejections += one.rejections
                if progress is not None:
                    progress(len(piece))
            return batch
        finally:
            for future in futures:
                future.cancel()

    def warm(self, wait: bool = True) -> None:
        """Start the workers and build their roles ahead of the first job.

        With ``wait`` false this returns at once: the processes start on a thread of their own
        (starting the fork server imports the synthesis modules there, seconds), while the
        caller goes on; a start that fails is raised again by the first job.
        """
        if not wait:
            threading.Thread(target=self._warm_quietly, name="synthesis-warm", daemon=True).start()
            return
        pool = _pool(self.workers)
        for future in [pool.submit(w, _warm, self.roles) for w in range(self.workers)]:
            _result(future)

    def _warm_quietly(self) -> None:
        with contextlib.suppress(Exception):  # the first job meets it again, and raises it
            self.warm()


# ----------------------------------------------------------------------------- the pool


class _Pool:
    """``workers`` processes, each its own one-process executor, so a job can go to a given one."""

    def __init__(self, workers: int) -> None:
        context = _context()
        self._executors = [ProcessPoolExecutor(1, mp_context=context) for _ in range(workers)]
        self._busy = [0] * workers
        self._free = threading.Condition()
        #: Set once a job has finished: the processes are up.
        self.started = threading.Event()

    def submit(self, worker: int | None, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``fn(*args)`` on ``worker``, or on the least busy one once it has a free slot."""
        with self._free:
            if worker is None:
                self._free.wait_for(lambda: min(self._busy) < ROLLOUT_QUEUED)
                worker = min(range(len(self._busy)), key=self._busy.__getitem__)
            self._busy[worker] += 1
        try:
            future = self._executors[worker].submit(fn, *args)
        except BaseException as exc:
            self._done(worker, None)
            if isinstance(exc, BrokenProcessPool):
                _broken(exc)
            raise
        future.add_done_callback(functools.partial(self._done, worker))
        return future

    def _done(self, worker: int, future: Future[Any] | None) -> None:
        with self._free:
            self._busy[worker] -= 1
            self._free.notify_all()
        if future is not None and not future.cancelled():
            self.started.set()

    def shutdown(self) -> None:
        """Stop the processes (without waiting for them)."""
        for executor in self._executors:
            executor.shutdown(wait=False, cancel_futures=True)


#: The pools of this process, by (process id, workers): a forked child starts its own.
_pools: dict[tuple[int, int], _Pool] = {}
_pools_lock = threading.Lock()


def _context() -> multiprocessing.context.BaseContext:
    """A fork server whose process has imported the synthesis modules; else a fresh interpreter.

    Not a plain fork: the parent runs threads (Prefect's, the task runner's), and a child
    forked while one of them holds a lock would wait on it forever.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(PRELOAD))  # ignored once the server runs
        return context
    return multiprocessing.get_context("spawn")


def _pool(workers: int) -> _Pool:
    """The pool of ``workers`` processes of the calling process, started once and then kept."""
    with _pools_lock:
        key = (os.getpid(), workers)
        if key not in _pools:
            _pools[key] = _Pool(workers)
        return _pools[key]


def _result(future: Future[R]) -> R:
    """``future``'s result; a pool whose process died is dropped, so the next call starts anew."""
    try:
        return future.result()
    except BrokenProcessPool as exc:
        _broken(exc)
        raise


def _broken(exc: BrokenProcessPool) -> NoReturn:
    with _pools_lock:
        for key, pool in list(_pools.items()):
            pool.shutdown()
            del _pools[key]
    raise RuntimeError(
        "a synthesis worker process stopped (killed, or out of memory?); "
        f"{SYNTH_WORKERS_ENV}=1 runs synthesis in this process"
    ) from exc


# ----------------------------------------------------------------------------- in a worker


@dataclass
class _Guess:
    """A worker's outcome for one blueprint, with what its screen answered for each candidate."""

    outcome: Outcome | None  # None: the Generator raised; the parent generates it again
    screened: list[tuple[Task, str | None]]

    def holds(self, kept: KeptTasks) -> bool:
        """Whether ``kept`` answers every screened candidate as the worker's replica did."""
        return self.outcome is not None and all(
            kept.reason(task) == answer for task, answer in self.screened
        )


@dataclass
class _GenerationJob:
    """A chunk of blueprints, and what a worker's replica of the kept tasks needs to catch up."""

    roles: RoleSource
    token: str  # one ``generated`` call
    base: bytes | None  # the pickled index of the tasks kept before the call
    reset: bool  # start the replica from ``base``
    kept: list[SynthTask]  # tasks the parent kept since the replica was last sent any
    taken: int  # chunks the parent has taken: ``kept`` holds what they kept
    index: int  # this chunk's
    blueprints: list[Blueprint]
    seed: int


@dataclass
class _Replica:
    """A worker's view of one ``generated`` call's kept tasks."""

    seen: SeenTasks | None  # what the parent kept, as far as it has told
    # This worker's guesses of chunks the parent has not taken yet, by chunk, in order.
    pending: list[tuple[int, list[SynthTask]]] = field(default_factory=list)


#: A worker's replicas, by ``generated`` call (a few calls may overlap).
_replicas: OrderedDict[str, _Replica] = OrderedDict()
_REPLICAS = 8


@functools.lru_cache(maxsize=2)
def _built(roles: RoleSource) -> SynthesisRoles:
    return roles()


def _warm(roles: RoleSource) -> None:
    _built(roles)


def _generate(job: _GenerationJob) -> list[_Guess] | None:
    """Generate ``job``'s blueprints against the replica; None if this worker has none for it.

    The replica holds only what the parent kept. This worker's own guesses in chunks the
    parent has not taken yet (this one's included) are screened by an index of their own,
    asked second: a guess the parent turns down never lingers.
    """
    generator = _built(job.roles).generator
    if job.reset:
        _replicas[job.token] = _Replica(pickle.loads(job.base) if job.base is not None else None)
        while len(_replicas) > _REPLICAS:
            _replicas.popitem(last=False)
    elif job.token not in _replicas:
        return None
    _replicas.move_to_end(job.token)
    replica = _replicas[job.token]
    known = KeptTasks(replica.seen)
    for synth in job.kept:
        _keep(known, synth)
    replica.seen = known.seen
    replica.pending = [(i, tasks) for i, tasks in replica.pending if i >= job.taken]
    guessed = KeptTasks(None)
    for _, tasks in replica.pending:
        for synth in tasks:
            _keep(guessed, synth)

    def reason(task: Task) -> str | None:
        return known.reason(task) or guessed.reason(task)

    guesses = []
    mine: list[SynthTask] = []
    for blueprint in job.blueprints:
        screened: list[tuple[Task, str | None]] = []

        def screen(task: Task, screened: list[tuple[Task, str | None]] = screened) -> str | None:
            answer = reason(task)
            screened.append((task, answer))
            return answer

        outcome: Outcome | None
        try:
            outcome = generator.generate(blueprint, job.seed, screen=screen)
        except GeneratorRejection as exc:
            outcome = exc
        except Exception:
            outcome = None
        if isinstance(outcome, SynthTask):
            # Kept, as far as this worker can tell (a programmatic Generator screens out
            # official tasks itself; a wrong guess here costs a blueprint generated again).
            # The screen's last answer is usually about this very task.
            last = screened[-1] if screened else None
            answer = last[1] if last and last[0] is outcome.task else reason(outcome.task)
            if answer is None:
                _keep(guessed, outcome)
                mine.append(outcome)
        guesses.append(_Guess(outcome, screened))
    replica.pending.append((job.index, mine))
    return guesses


def _keep(kept: KeptTasks, synth: SynthTask) -> None:
    """``kept.add(synth)``, its first index copied from an empty one (building one is slow)."""
    if kept.seen is None:
        kept.seen = pickle.loads(_empty_index(synth.domain))
    kept.add(synth)


@functools.cache
def _empty_index(domain: str) -> bytes:
    # Building an index sizes its LSH bands by numerical integration, tens of milliseconds.
    return pickle.dumps(SeenTasks(domain))


def _roll_out(roles: RoleSource, tasks: list[SynthTask], seed: int, tries: int) -> SynthesisBatch:
    built = _built(roles)
    return roll_out_each(tasks, built.teacher, built.verifier, seed, tries=tries)
