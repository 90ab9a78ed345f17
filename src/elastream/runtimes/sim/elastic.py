"""A fluid simulator of one keyed operator under Elasticutor's four strategies (Wang et al., §5).

It reproduces the micro-benchmarks of Elasticutor (§5.1–§5.3): a source emits the key-shuffle
workload (:mod:`elastream.workloads.key_shuffle`) into one stateful operator on a cluster of
nodes × cores; a controller (:mod:`.elastic_policies`: static, RC, EC, naive-EC) moves cores
between executors and shards between tasks every scheduling interval. One call runs one
strategy; the strategies share everything else, so their differences are their decisions and
the protocol costs of carrying them out.

What it models:

* **Time** advances in fluid steps of ``config.step`` seconds (50 ms). Tuples are amounts, not
  individuals: within a step a shard receives ``rate × step × frequency`` tuples. We chose a
  fluid model because the paper's set-up processes ~200k tuples/s on 256 cores for minutes and
  the effects it measures (seconds-long pauses, overloaded tasks, moved state) live at the
  scale of milliseconds to seconds; an exact per-tuple queue would cost ~10⁸ events per run.
* **Tasks**: one per core, each a FIFO queue served at ``1/service_time`` tuples/s. A shard is
  routed to one task (its executor's routing table, §3.2).
* **Source and back-pressure**: the source offers ``config.offered()`` tuples/s with the
  workload's key frequencies. It emits only as much as keeps every task's queue within
  ``queue_bound`` tuples (Storm's back-pressure stops the spouts when a receive queue fills):
  the fraction emitted in a step is ``min(1, min_c (bound + capacity_c − queue_c) / arrivals_c)``,
  and no more than RC's paused upstream executors can hold (below). In a step that an RC round
  splits into a paused part and a receiving part, each part gets its own fraction (the parts
  follow one another). What is not emitted is never generated (a blocked spout) and is not
  counted anywhere.
* **Shard reassignment, EC / naive-EC** (§3.3): each executor runs its moves one after
  another, executors in parallel. A move starts when the previous one ends; it pauses the
  shard, waits for the tuples queued ahead at the source task (``queue × service_time``) plus
  ``ec_sync``, migrates the shard's state if the destination is on another node (``overhead +
  state / bandwidth``; free within a node: intra-process state sharing), then routes the shard
  to its new task (:func:`.elastic_cluster.move_cost`). Tuples of a paused shard wait at the
  executor's receiver and join the new task's queue when the move ends. Only the moving shard
  pauses: upstream executors keep sending to the receiver (inter-operator independence).
* **Key repartitioning, RC** (§1 steps a–d, §2.2; ``rc_protocol="round"``, the default): each
  controller decision that moves shards is one *round*, the new key-space partitioning of the
  whole operator. a) Every upstream executor stops sending to the operator: every shard pauses,
  not only the moving ones. b) The round waits until every task of the operator has processed
  the tuples queued at it (``max_c queue_c / μ_c`` at the round's start; nothing new arrives).
  c) The round's shard states migrate (:func:`.elastic_cluster.round_cost`: free within a node,
  state sharing is RC's too (§5); between nodes each NIC sends and receives its transfers one
  after another, nodes in parallel). d) Every upstream executor updates its routing table;
  then all shards resume at their new tasks. a) and d) together cost ``upstream_executors ×
  rc_sync_per_upstream``; the steps run one after another, so a round lasts that plus the
  drain plus the migration. Meanwhile the source keeps feeding the paused upstream executors,
  which hold at most ``upstream_executors × queue_bound`` tuples before back-pressure blocks
  the source; the held tuples join their new tasks' queues when the round ends. A decision made
  while a round runs waits for it to end (the controller does not move the round's shards).
  Two options for comparison: ``rc_protocol="move_rounds"`` runs these steps once per shard
  move, the moves one after another (the paper times RC's synchronisation per shard, Figs.
  8–9); ``rc_protocol="shard"`` is the earlier model: RC's moves run one after another (one at
  a time for the whole operator), each costing the fixed synchronisation above plus its
  source task's queue, and only the moving shard pauses while the upstream executors hold
  its tuples.
* **Cores**: the controller gives each executor cores (EC: :func:`allocate_cores` then
  :func:`assign_cores`); a core taken from an executor keeps serving the shards still routed to
  it until they are moved away, so a core never serves two executors faster than one core.
* **Remote tasks** (§3.3, §5.2): a task on another node than its executor's main process gets
  its tuples through the main node's NIC; the executors' remote tasks on one home node share
  ``bandwidth / tuple_bytes`` tuples/s equally (each direction; results go back the same way).
* **Measurement**: the controller sees each shard's rate — the tuples the source emitted for it
  over the last interval, divided by the interval — the core owners, the routing and the
  queues; not the workload's true frequencies. While an RC round pauses the operator the
  stream is not observable: the rate then counts only the tuples sent to the operator and
  divides by the seconds it was receiving (the previous rates stand if a round paused the whole
  interval). Without this, a round that blocks the source for most of an interval reads as a
  drop in load and RC's model scales in. A decision replaces the moves of the previous one that
  have not started yet.

What it does not model:

* Per-tuple randomness inside a step: a task's queueing below saturation is approximated by
  the M/M/1 waiting time at its utilisation (capped at ``rho_cap``); above it the fluid backlog
  carries the waiting. There is no network latency per tuple, no CPU cost of routing,
  receiving or emitting, and the main process needs no core of its own.
* Network contention between state migration, remote tuples and other executors' traffic: a
  migration always gets the whole link, remote tuples get their home NIC's bandwidth.
* The cost of RC creating or deleting an executor (its strategy may use fewer single-core
  executors than cores; a new one starts empty at no cost), executor splitting or merging
  (§4.2's coarse-grained operations), failures, the SSE application of §5.4 (its data is not
  public; Table 2 is measured on the key-shuffle workload).
* Time spent computing plans: the controller's decisions take effect at once (Table 3 times
  the scheduler separately). Likewise an RC round stops the stream to the operator at its
  start (no tuples sent while the pause request travels; the fixed synchronisation cost stands
  for those messages), and its drain is computed from the queues at the start of its step.

Metrics, exactly (over ``[warmup, duration)`` unless a series):

* ``throughput``: tuples processed per second, mean; ``throughput_series[i]``: tuples
  processed in second ``[i, i+1)`` (Fig. 7's 1 s window).
* ``latency``: each step's arrivals at task ``c`` wait ``queue_c / μ_c`` behind the fluid
  backlog, then ``(1/μ_c) / (1 − min(ρ_c, rho_cap))``: M/M/1 queueing and service at the
  task's utilisation ``ρ_c`` in the step when it has no backlog, its service ``1/μ_c`` alone
  when it has one (the backlog already carries the queueing). Tuples held during a move or
  round add their mean time held (the integral of the held amount over the pause, divided by
  the amount), then join their new task's queue as one batch per shard behind its backlog and
  the batches released to it before (FIFO): mean wait ``(backlog + amount / 2) / μ_c + 1/μ_c``.
  Each batch enters the distribution at its mean wait. Mean over tuples, and p50/p95/p99 of
  that distribution (log-spaced histogram, 1 % resolution).
* ``moves``: every shard move with its start, sync and migration seconds and whether it
  crossed nodes (an RC round's moves share its start and sync; migration is each one's own
  transfer); ``rounds``: RC's repartitioning rounds (empty otherwise), each with its start,
  moves, drain, sync and migration seconds — the operator receives nothing from its start to
  ``start + sync + migration``; ``migrated_bytes``: state sent across nodes;
  ``remote_bytes``: tuple bytes sent from executors to their remote tasks (inputs only).
* ``cores``: ``cores[i, j]`` executor ``j``'s cores at ``control_times[i]``.
* Conservation: ``emitted = processed + queued + held`` at the end (``in_system``).

>>> from elastream.runtimes.sim.elastic_policies import Scheduled
>>> from elastream.workloads.key_shuffle import KeyShuffle
>>> config = ElasticConfig(nodes=1, cores_per_node=2, executors=2, shards_per_executor=1,
...                        offered_rate=1000.0, warmup=0.0)
>>> static = Scheduled("static", config)
>>> r = simulate_elastic(config, static, KeyShuffle(omega=0, duration=2.0, num_keys=2))
>>> round(r.throughput), round(r.latency.mean * 1e3, 3), r.in_system
(1000, 2.121, 0.0)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from elastream.core.errors import OptionError
from elastream.runtimes.sim.elastic_cluster import ElasticConfig, Layout, move_cost, round_cost
from elastream.runtimes.sim.elastic_policies import Decision, ElasticPolicy, View
from elastream.workloads.key_shuffle import KeyShuffle

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

_EMPTY = 1e-9
"""Tuples below which a task's queue counts as empty."""
_BINS = np.logspace(-5, 4, 9 * 230 + 1)
"""Latency histogram edges, seconds: 10 µs .. 10⁴ s, 1 % apart."""


@dataclass(frozen=True)
class Latency:
    """Mean and percentiles (seconds) of the tuples' latency (module docstring)."""

    mean: float
    p50: float
    p95: float
    p99: float


@dataclass(frozen=True)
class MoveRecord:
    """One shard move: who, when, and what it cost (seconds)."""

    group: int
    shard: int
    source: int
    target: int
    start: float
    sync: float
    migration: float
    inter_node: bool


@dataclass(frozen=True)
class RoundRecord:
    """One RC repartitioning round (§1 a–d), times in seconds.

    The operator receives nothing from ``start`` to :attr:`end`; ``sync`` includes ``drain``.
    """

    start: float
    moves: int
    drain: float
    sync: float
    migration: float

    @property
    def end(self) -> float:
        """When the upstream executors resume sending."""
        return self.start + self.sync + self.migration


@dataclass(frozen=True)
class ElasticResult:
    """One strategy over one workload; metrics defined in the module docstring."""

    strategy: str
    duration: float
    offered: float
    throughput: float
    latency: Latency
    throughput_series: F64
    moves: tuple[MoveRecord, ...]
    migrated_bytes: float
    remote_bytes: float
    control_times: F64
    cores: I64
    emitted: float
    processed: float
    in_system: float
    statuses: tuple[str, ...] = field(default=())
    rounds: tuple[RoundRecord, ...] = field(default=())


def simulate_elastic(config: ElasticConfig, strategy: ElasticPolicy,
                     workload: KeyShuffle) -> ElasticResult:
    """Run ``strategy`` on ``config``'s cluster for the workload's duration."""
    layout = strategy.layout(config, workload.num_keys)
    run = _Run(config, strategy, layout, workload)
    for k in range(run.steps):
        run.step(k)
    return run.result()


@dataclass
class _Active:
    shard: int
    source: int
    target: int
    end: float


@dataclass
class _Group:
    pending: deque[tuple[int, int]] = field(default_factory=deque)
    active: _Active | None = None
    free_at: float = 0.0


@dataclass
class _Round:
    shards: I64
    targets: I64
    end: float


@dataclass
class _Rounds:
    """RC's repartitioning rounds: the next decision's moves, the round running, and when."""

    pending: deque[list[tuple[int, int]]] = field(default_factory=deque)
    active: _Round | None = None
    free_at: float = 0.0


class _Run:
    """The state of one simulation, advanced one step at a time."""

    def __init__(self, config: ElasticConfig, strategy: ElasticPolicy, layout: Layout,
                 workload: KeyShuffle) -> None:
        self.config, self.strategy, self.layout, self.workload = config, strategy, layout, workload
        self.dt = config.step
        self.steps = round(workload.duration / self.dt)
        self.per_interval = round(config.interval / self.dt)
        cores, shards = config.cores, len(layout.shard_executor)
        owner, shard_core, home = strategy.start(config, layout)
        if owner.shape != (cores,) or shard_core.shape != (shards,) or home.shape != (cores,):
            raise OptionError("strategy", "must start with one owner and home per core and one "
                              "core per shard", (owner.shape, shard_core.shape, home.shape))
        self.owner, self.shard_core = owner.copy(), shard_core.copy()
        self.core_home = home.copy()
        self.queue = np.zeros(cores)
        self.held = np.zeros(shards)
        self.held_wait = np.zeros(shards)
        self.measured = np.zeros(shards)
        self.measured_time = 0.0
        self.rates = np.full(shards, config.offered() / shards)
        self.groups: dict[int, _Group] = {}
        self.round_mode = strategy.coordination == "operator" and config.rc_protocol != "shard"
        self.rounds = _Rounds()
        self.round_records: list[RoundRecord] = []
        self.executors = len(layout.home)
        self.offered = config.offered()
        self.capacity = self._capacity()
        # Shard frequencies of each epoch: the keys' frequencies summed per shard.
        self.shard_freq = np.stack([np.bincount(layout.key_shard, weights=f, minlength=shards)
                                    for f in workload.frequencies])
        self.epoch_of_step = workload.epoch_at(np.arange(self.steps) * self.dt)
        self.hist = np.zeros(len(_BINS) + 1)
        self.latency_sum = 0.0
        self.series = np.zeros(int(np.ceil(workload.duration)))
        self.moves: list[MoveRecord] = []
        self.migrated = 0.0
        self.remote = 0.0
        self.emitted = 0.0
        self.processed = 0.0
        self.measured_processed = 0.0
        self.control_times: list[float] = [0.0]
        self.core_counts: list[I64] = [self._core_counts()]
        self.statuses: list[str] = []

    # -- control ------------------------------------------------------------------------
    def _core_counts(self) -> I64:
        owned = self.owner[self.owner >= 0]
        counts: I64 = np.bincount(owned, minlength=self.executors).astype(np.int64)
        return counts[: self.executors]

    def _capacity(self) -> F64:
        """Tuples per step each core can serve: μ·step, less for remote tasks sharing a NIC."""
        cap = np.full(self.config.cores, self.config.service_rate * self.dt)
        home = self.core_home
        remote = self._remote_cores()
        if remote.any():
            sharing = np.bincount(home[remote], minlength=self.config.nodes)
            link = self.config.bandwidth / self.config.tuple_bytes * self.dt
            cap[remote] = np.minimum(cap[remote], link / sharing[home[remote]])
        return cap

    def _moving(self) -> frozenset[int]:
        moving = {g.active.shard for g in self.groups.values() if g.active}
        if self.rounds.active is not None:
            moving.update(self.rounds.active.shards.tolist())
        return frozenset(moving)

    def control(self, now: float) -> None:
        if self.measured_time > 0:
            self.rates = self.measured / self.measured_time
        view = View(now=now, core_owner=self.owner.copy(), shard_core=self.shard_core.copy(),
                    moving=self._moving(), shard_rates=self.rates.copy(),
                    queue=self.queue.copy())
        decision: Decision = self.strategy.control(view)
        self.measured[:] = 0.0
        self.measured_time = 0.0
        if decision.core_owner is not None:
            if decision.core_home is None:
                raise OptionError("decision", "must give core_home with core_owner", None)
            self.owner = np.asarray(decision.core_owner, dtype=np.int64).copy()
            self.core_home = np.asarray(decision.core_home, dtype=np.int64).copy()
            self.capacity = self._capacity()
        moves = decision.moves or {}
        if self.round_mode:  # the decision's moves, whatever their group, make the next rounds
            planned = [move for g in sorted(moves) for move in moves[g]]
            self.rounds.pending = deque([planned] if self.config.rc_protocol == "round"
                                        else [[move] for move in planned])
        else:
            for group in self.groups.values():
                group.pending.clear()
            for g, planned in moves.items():
                self.groups.setdefault(g, _Group()).pending.extend(planned)
        self.control_times.append(now)
        self.core_counts.append(self._core_counts())
        status = getattr(self.strategy, "last_status", "")
        if status:
            self.statuses.append(status)

    # -- one step -----------------------------------------------------------------------
    def step(self, k: int) -> None:
        dt, config = self.dt, self.config
        t0, t1 = k * dt, (k + 1) * dt
        if k and k % self.per_interval == 0:
            self.control(t0)
        paused, completed = self._advance_moves(t0, t1)
        offered = self.offered * dt * self.shard_freq[self.epoch_of_step[k]]
        to_tasks = offered * (1.0 - paused)
        arrivals: F64 = np.bincount(self.shard_core, weights=to_tasks,
                                    minlength=config.cores).astype(np.float64)
        held_add = offered * paused
        sent, kept = self._emittable(arrivals, held_add)
        self.emitted += sent * float(to_tasks.sum()) + kept * float(held_add.sum())
        arrivals *= sent
        held_add *= kept
        if self.round_mode:  # a round hides the stream: measure only while the operator receives
            self.measured += sent * to_tasks
            self.measured_time += dt * (1.0 - float(paused[0]))
        else:
            self.measured += sent * offered
            self.measured_time += dt
        # Latency of this step's arrivals at each task, then FIFO service.
        busy = arrivals > 0
        mu = self.capacity[busy] / dt
        backlog = self.queue[busy]
        rho = np.minimum(arrivals[busy] / self.capacity[busy], config.rho_cap)
        rho[backlog > _EMPTY] = 0.0  # a backlog already carries the queueing
        waits = backlog / mu + (1.0 / mu) / (1.0 - rho)
        measuring = t0 >= config.warmup
        if measuring:
            self._record(waits, arrivals[busy])
        total = self.queue + arrivals
        served = np.minimum(total, self.capacity)
        self.queue = total - served
        done = float(served.sum())
        self.processed += done
        self.series[int(t0)] += done
        if measuring:
            self.measured_processed += done
        self.remote += float(served[self._remote_cores()].sum()) * config.tuple_bytes
        before = self.held.copy()
        self.held += held_add
        self.held_wait += (before + self.held) / 2.0 * dt
        for shards, targets in completed:
            self._release(shards, targets, measuring)

    def _remote_cores(self) -> npt.NDArray[np.bool_]:
        """Cores whose executor's main process lies on another node."""
        remote: npt.NDArray[np.bool_] = (self.core_home >= 0) \
            & (self.core_home != self.layout.core_node)
        return remote

    def _emittable(self, arrivals: F64, held_add: F64) -> tuple[float, float]:
        """Fractions of this step's tuples for the tasks and for holding that the source emits.

        Back-pressure: no task's queue may exceed ``queue_bound`` and RC's paused upstream
        executors hold at most ``upstream_executors × queue_bound`` tuples. A source blocked by
        either emits nothing (one stream, in order): both fractions are the smaller one — except
        in a step that an RC round splits into a paused part and a receiving part, one after
        another, where each part is limited only by what it fills.
        """
        to_tasks = 1.0
        busy = arrivals > 0
        if busy.any():
            room = self.config.queue_bound + self.capacity[busy] - self.queue[busy]
            to_tasks = min(to_tasks, float((room / arrivals[busy]).min()))
        to_held = 1.0
        adding = float(held_add.sum())
        if self.strategy.coordination == "operator" and adding > 0:
            room_held = self.config.upstream_executors * self.config.queue_bound \
                - float(self.held.sum())
            to_held = min(to_held, room_held / adding)
        if self.round_mode:
            return max(0.0, to_tasks), max(0.0, to_held)
        both = max(0.0, min(to_tasks, to_held))
        return both, both

    def _advance_moves(self, t0: float, t1: float) -> tuple[F64, list[tuple[I64, I64]]]:
        """Start and finish the moves of ``[t0, t1)``.

        Returns the fraction of the step each shard is paused and the ``(shards, targets)`` of
        the moves (or rounds) that end in it.
        """
        if self.round_mode:
            return self._advance_rounds(t0, t1)
        paused = np.zeros(len(self.shard_core))
        completed: list[tuple[I64, I64]] = []
        for g, group in self.groups.items():
            while True:
                if group.active is None:
                    if not group.pending:
                        break
                    start = max(t0, group.free_at)
                    if start >= t1:
                        break
                    shard, target = group.pending.popleft()
                    source = int(self.shard_core[shard])
                    if source == target:
                        continue
                    same = bool(self.layout.core_node[source] == self.layout.core_node[target])
                    sync, migration = move_cost(self.config, same_node=same,
                                                drained=float(self.queue[source]),
                                                coordination=self.strategy.coordination)
                    group.active = _Active(shard, source, target, start + sync + migration)
                    self.moves.append(MoveRecord(g, shard, source, target, start, sync,
                                                 migration, not same))
                    if not same:
                        self.migrated += self.config.shard_state_bytes
                    group.free_at = start
                active = group.active
                paused[active.shard] += (min(active.end, t1) - max(group.free_at, t0)) / self.dt
                if active.end > t1:
                    break
                completed.append((np.array([active.shard]), np.array([active.target])))
                group.active = None
                group.free_at = active.end
        return np.minimum(paused, 1.0), completed

    def _advance_rounds(self, t0: float, t1: float) -> tuple[F64, list[tuple[I64, I64]]]:
        """RC's rounds in ``[t0, t1)``: while one runs, every shard is paused (§1 a–d)."""
        rounds = self.rounds
        paused = 0.0
        completed: list[tuple[I64, I64]] = []
        while True:
            if rounds.active is None:
                if not rounds.pending:
                    break
                start = max(t0, rounds.free_at)
                if start >= t1:
                    break
                self._start_round(start)
                if rounds.active is None:
                    continue
            active = rounds.active
            paused += (min(active.end, t1) - max(rounds.free_at, t0)) / self.dt
            if active.end > t1:
                break
            completed.append((active.shards, active.targets))
            rounds.active = None
            rounds.free_at = active.end
        return np.full(len(self.shard_core), min(paused, 1.0)), completed

    def _start_round(self, start: float) -> None:
        """Start the next pending round at ``start``: its cost from the queues now."""
        rounds = self.rounds
        moves = [(s, t) for s, t in rounds.pending.popleft() if int(self.shard_core[s]) != t]
        if not moves:
            return
        shards = np.array([s for s, _ in moves], dtype=np.int64)
        targets = np.array([t for _, t in moves], dtype=np.int64)
        sources = self.shard_core[shards]
        drain = float((self.queue * self.dt / self.capacity).max())
        node = self.layout.core_node
        sync, migration, per_move = round_cost(self.config, drain=drain,
                                               source_nodes=node[sources],
                                               target_nodes=node[targets])
        rounds.active = _Round(shards, targets, start + sync + migration)
        rounds.free_at = start
        self.round_records.append(RoundRecord(start, len(moves), drain, sync, migration))
        inter = node[sources] != node[targets]
        self.moves.extend(MoveRecord(0, int(s), int(a), int(b), start, sync, float(m), bool(x))
                          for s, a, b, m, x in zip(shards, sources, targets, per_move, inter,
                                                   strict=True))
        self.migrated += self.config.shard_state_bytes * int(inter.sum())

    def _release(self, shards: I64, targets: I64, measuring: bool) -> None:
        """End moves: route ``shards`` to ``targets``, hand the new tasks the tuples held.

        Per-shard moves release their own shards' tuples; a round releases every shard's. Each
        shard's batch joins its task's queue behind the backlog and the batches released to it
        before it (module docstring).
        """
        self.shard_core[shards] = targets
        released = np.flatnonzero(self.held > 0) if self.round_mode \
            else shards[self.held[shards] > 0]
        if len(released) == 0:
            return
        core = self.shard_core[released]
        order = np.lexsort((released, core))
        released, core = released[order], core[order]
        amount = self.held[released]
        total = np.cumsum(amount)
        first = np.concatenate([[True], core[1:] != core[:-1]])
        before = total - amount
        ahead = before - before[first][np.cumsum(first) - 1]  # batches of this core released first
        mu = self.capacity[core] / self.dt
        wait = self.held_wait[released] / amount + (self.queue[core] + ahead + amount / 2) / mu \
            + 1.0 / mu
        if measuring:
            self._record(wait, amount)
        self.queue += np.bincount(core, weights=amount, minlength=len(self.queue))
        self.held[released] = 0.0
        self.held_wait[released] = 0.0

    def _record(self, waits: F64, weights: F64) -> None:
        self.latency_sum += float(np.dot(waits, weights))
        self.hist += np.bincount(np.searchsorted(_BINS, waits), weights=weights,
                                 minlength=len(self.hist))

    # -- result ---------------------------------------------------------------------------
    def result(self) -> ElasticResult:
        measured_seconds = max(self.steps * self.dt - self.config.warmup, self.dt)
        weight = float(self.hist.sum())
        return ElasticResult(
            strategy=self.strategy.name,
            duration=self.steps * self.dt,
            offered=self.offered,
            throughput=self.measured_processed / measured_seconds,
            latency=_latency(self.hist, self.latency_sum, weight),
            throughput_series=self.series,
            moves=tuple(self.moves),
            migrated_bytes=self.migrated,
            remote_bytes=self.remote,
            control_times=np.array(self.control_times),
            cores=np.stack(self.core_counts),
            emitted=self.emitted,
            processed=self.processed,
            in_system=float(self.queue.sum() + self.held.sum()),
            statuses=tuple(self.statuses),
            rounds=tuple(self.round_records),
        )


def _latency(hist: F64, total: float, weight: float) -> Latency:
    if weight <= 0:
        return Latency(float("nan"), float("nan"), float("nan"), float("nan"))
    cumulative = np.cumsum(hist) / weight
    centres = np.concatenate([[_BINS[0]], np.sqrt(_BINS[1:] * _BINS[:-1]), [_BINS[-1]]])

    def quantile(q: float) -> float:
        return float(centres[int(np.searchsorted(cumulative, q))])

    return Latency(total / weight, quantile(0.50), quantile(0.95), quantile(0.99))
