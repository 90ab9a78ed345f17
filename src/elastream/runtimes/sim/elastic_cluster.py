"""The cluster of the Elasticutor simulator: its parameters, layout and the cost of a shard move.

Parameters default to the paper's set-up (Wang et al., Elasticutor, §5): 32 nodes of 8 cores
on 1 Gbps Ethernet, 32 executors of 256 shards, tuples of 128 bytes costing 1 ms of CPU, shard
state of 32 KB, a load-balancing threshold θ = 1.2 and a locality threshold φ̄ = 512 KB/s. Where
the paper gives no number, the default is ours and its docstring says so.

Layout: core ``c`` lies on node ``c // cores_per_node``; executor ``j``'s main process lies on
node ``j mod nodes`` (§5: "executors are assigned to the nodes in a round-robin manner");
shard ``s`` belongs to executor ``s // shards_per_executor``; key ``k`` lies in shard
``hash(k)``, the hash being seeded and static for the run (the same for every strategy with
the same shard count): a random permutation of the keys dealt round robin over the shards, or,
with more shards than keys, distinct random shards.

>>> config = ElasticConfig()
>>> config.cores, config.shards, round(config.capacity), round(config.offered())
(256, 8192, 256000, 179200)
>>> layout = Layout.make(config, num_keys=10)
>>> layout.key_shard.tolist()
[824, 5474, 4138, 1580, 5558, 1627, 2120, 5176, 3192, 3236]
>>> round(move_cost(config, same_node=False, drained=10, coordination="executor")[1] * 1e3, 3)
1.262
>>> sync, migration, _ = round_cost(config, drain=0.5, source_nodes=[0, 0, 1],
...                                   target_nodes=[1, 2, 1])
>>> round(sync, 3), round(migration * 1e3, 3)  # 32 × 6.25 ms + 0.5 s; node 0 sends two states
(0.7, 2.524)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

import numpy as np
import numpy.typing as npt

from elastream.core import rules
from elastream.core.errors import OptionError

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Coordination = Literal["executor", "operator"]
"""Who synchronises a shard move: the executor alone (EC) or every upstream executor (RC)."""
RcProtocol = Literal["round", "move_rounds", "shard"]
"""How RC repartitions (:attr:`ElasticConfig.rc_protocol`)."""
RC_PROTOCOLS: tuple[RcProtocol, ...] = ("round", "move_rounds", "shard")


@dataclass(frozen=True)
class ElasticConfig:
    """One simulated cluster and operator. Times in seconds, sizes in bytes, rates per second."""

    nodes: int = 32
    """§5: 32 EC2 t2.xlarge instances."""
    cores_per_node: int = 8
    """§5: 8 cores per node."""
    executors: int = 32
    """``y`` (§5.3 default 32). The static and RC approaches ignore it: they run one
    single-core executor per core (§5)."""
    shards_per_executor: int = 256
    """``z`` (§5.3 default 256); the operator has ``executors × z`` shards (8192), which is also
    RC's repartitioning granularity (§5)."""
    service_time: float = 1e-3
    """CPU seconds per tuple (§5.1: "an average CPU cost of 1 ms")."""
    tuple_bytes: int = 128
    """§5.1: a 128-byte payload."""
    shard_state_bytes: float = 32 * 1024
    """§5.1: "The shard state is 32KB in size"."""
    bandwidth: float = 125e6
    """Bytes/s of a node's NIC, each direction (§5: 1 Gbps Ethernet)."""
    offered_load: float = 0.7
    """Rate the source offers, as a fraction of the cluster's capacity (cores / service
    time). Ours: the paper gives no input rate. 0.7 is below the 198.5k tuples/s one core can
    take of the hottest key (Zipf 0.5 over 10K keys: 0.504% of the tuples), so a perfectly
    balanced operator can carry it."""
    offered_rate: float | None = None
    """Tuples/s the source offers; overrides ``offered_load`` when set."""
    queue_bound: int = 1024
    """Tuples a task's queue may hold before back-pressure stops the source (Storm's
    executor receive buffer, 1024 by default)."""
    upstream_executors: int = 32
    """Executors of the upstream operator, which RC synchronises with (ours: one per node).
    While RC's repartitioning pauses them they hold at most ``upstream_executors × queue_bound``
    tuples before back-pressure blocks the source."""
    rc_protocol: RcProtocol = "round"
    """How RC's operator-level key repartitioning runs (:mod:`.elastic` docstring).
    ``"round"`` (default) follows §1's steps a–d: each controller decision is one round that
    pauses every upstream executor — nothing is sent to the operator — waits until every task
    has processed its queue, migrates the round's shard states and updates every upstream
    routing table, then resumes. ``"move_rounds"`` runs the same steps once per shard move, the
    moves one after another (the reading of Figs. 8–9, which time RC's synchronisation per
    shard). ``"shard"`` is the earlier model, kept for comparison: one shard move at a time,
    each paying the synchronisation, and only the moving shard pauses."""
    ec_sync: float = 2e-3
    """Fixed part of an elastic executor's shard synchronisation (§5.1, Fig. 9a: "around 2 ms
    regardless of the number of upstream executors")."""
    rc_sync_per_upstream: float = 6.25e-3
    """RC's fixed synchronisation per upstream executor (pausing it, its acknowledgement, its
    routing update: steps a and d of §1), charged once per round (``rc_protocol="round"``) or
    per shard move (``"shard"``), on top of the drain. Ours: the paper only says RC takes
    "2-3 orders of magnitude longer" than EC's 2 ms and grows with the upstream executors; we
    take the low end, the one kindest to RC: 6.25 ms × 32 upstream = 0.2 s = 100 × EC's 2 ms."""
    migration_overhead: float = 1e-3
    """Fixed cost of one inter-node state transfer (connection, (de)serialisation). Ours."""
    interval: float = 1.0
    """Scheduling interval: the controller measures and re-plans this often. Ours: the paper
    gives none; EC's 1–3 s transients (Fig. 7) fit a 1 s interval."""
    latency_target: float = 1.2e-3
    """``T_max`` of the allocation (§4.1). Ours: the paper gives none. Eq. (1) treats an
    executor's cores as one M/M/k pool, but its tasks only share load within θ (§3.1), so an
    executor above ``1/θ`` ≈ 83% utilisation can overload a task; at the default load a target
    of 1.2 ms keeps every executor below that (max ≈ 0.82 with 240 of 256 cores), where 5 ms
    lets executors reach 0.99."""
    theta: float = 1.2
    """§3.1: the intra-executor imbalance threshold."""
    phi: float = 512e3
    """§4.2: φ̄ = 512 KB/s, the data-intensity threshold of computation locality."""
    step: float = 0.05
    """Seconds per simulation step (fluid time step)."""
    warmup: float = 5.0
    """Seconds at the start left out of the summary metrics."""
    rho_cap: float = 0.95
    """Utilisation at which the M/M/1 waiting term stops growing (module docstring of
    :mod:`.elastic`); beyond it the fluid backlog carries the queueing."""
    seed: int = 0
    """Seed of the key → shard hash."""

    def __post_init__(self) -> None:
        rules.choice("rc_protocol", self.rc_protocol, RC_PROTOCOLS)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "rc_protocol" or (f.name == "offered_rate" and value is None):
                continue
            rules.number(f.name, value)
        for name in ("nodes", "cores_per_node", "executors", "shards_per_executor",
                     "queue_bound", "upstream_executors"):
            rules.integer(name, getattr(self, name))
        for name in ("service_time", "tuple_bytes", "bandwidth", "interval", "step",
                     "latency_target", "theta"):
            rules.number(name, getattr(self, name), above=0)
        rules.number("rho_cap", self.rho_cap, below=1)
        if abs(self.interval / self.step - round(self.interval / self.step)) > 1e-9:
            raise OptionError("interval", f"must be a multiple of step ({self.step})",
                              self.interval)

    @property
    def cores(self) -> int:
        """Cores in the cluster."""
        return self.nodes * self.cores_per_node

    @property
    def shards(self) -> int:
        """Shards of the operator (``executors × shards_per_executor``)."""
        return self.executors * self.shards_per_executor

    @property
    def service_rate(self) -> float:
        """μ: tuples/s one core processes."""
        return 1.0 / self.service_time

    @property
    def capacity(self) -> float:
        """Tuples/s all cores process together."""
        return self.cores * self.service_rate

    def offered(self) -> float:
        """Tuples/s the source offers."""
        return self.offered_rate if self.offered_rate is not None \
            else self.offered_load * self.capacity


@dataclass(frozen=True)
class Layout:
    """Where things are: nodes of cores, home nodes of executors, shards of keys."""

    core_node: I64
    home: I64
    """``home[j]``: the node of executor ``j``'s main process, ``I(j)`` in §4.2."""
    shard_executor: I64
    key_shard: I64

    @classmethod
    def make(cls, config: ElasticConfig, num_keys: int, *, executors: int | None = None,
             shards_per_executor: int | None = None) -> Layout:
        """The layout of ``config`` (or of ``executors × shards_per_executor`` if given)."""
        m = config.executors if executors is None else executors
        z = config.shards_per_executor if shards_per_executor is None else shards_per_executor
        shards = m * z
        # The hash: a seeded permutation dealt round robin when there are at least as many
        # keys as shards (every shard gets ⌊K/Z⌋ or ⌈K/Z⌉ keys), else distinct random shards
        # spread over the whole shard range.
        rng = np.random.default_rng(config.seed)
        hashed = rng.permutation(num_keys).astype(np.int64) % shards if num_keys >= shards \
            else rng.permutation(shards)[:num_keys].astype(np.int64)
        return cls(
            core_node=np.arange(config.cores, dtype=np.int64) // config.cores_per_node,
            home=np.arange(m, dtype=np.int64) % config.nodes,
            shard_executor=np.arange(shards, dtype=np.int64) // z,
            key_shard=hashed,
        )


def move_cost(config: ElasticConfig, *, same_node: bool, drained: float,
              coordination: Coordination) -> tuple[float, float]:
    """``(sync, migration)`` seconds of moving one shard (§3.3, §5.1 Figs. 8–9).

    Synchronisation waits for the labelling tuple to pass the ``drained`` tuples queued ahead of
    it at the source task (``drained × service_time``), plus the fixed protocol cost: ``ec_sync``
    for an elastic executor, ``upstream_executors × rc_sync_per_upstream`` for RC, which pauses
    and re-routes every upstream executor. Migration is free between tasks of one node
    (intra-process state sharing, §3.2 — RC uses it too, §5), else ``migration_overhead +
    shard_state_bytes / bandwidth``.
    """
    fixed = config.ec_sync if coordination == "executor" else rc_fixed_sync(config)
    sync = fixed + max(0.0, drained) * config.service_time
    migration = 0.0 if same_node else state_transfer(config)
    return sync, migration


def rc_fixed_sync(config: ElasticConfig) -> float:
    """Seconds RC spends pausing and re-routing every upstream executor (§1 steps a and d)."""
    return config.upstream_executors * config.rc_sync_per_upstream


def state_transfer(config: ElasticConfig) -> float:
    """Seconds one shard's state takes between nodes: ``overhead + state / bandwidth``."""
    return config.migration_overhead + config.shard_state_bytes / config.bandwidth


def round_cost(config: ElasticConfig, *, drain: float, source_nodes: npt.ArrayLike,
               target_nodes: npt.ArrayLike) -> tuple[float, float, F64]:
    """``(sync, migration, per_move)`` seconds of one RC repartitioning round (§1 steps a–d).

    The steps run one after another (§1: "the system needs to sequentially perform the following
    operations"). ``sync`` is the fixed cost of pausing and re-routing every upstream executor
    (:func:`rc_fixed_sync`, steps a and d) plus ``drain``, the seconds until every task has
    processed the tuples queued at it (step b; the caller computes it from the queues).
    ``migration`` is step c: the moves between nodes each transfer one shard state
    (:func:`state_transfer`, ``per_move``; 0 within a node, intra-process state sharing, §5);
    a node's NIC sends its transfers one after another and receives its transfers one after
    another, different nodes work in parallel, so the step lasts as long as the busiest NIC
    direction. The paper gives no schedule for the transfers; this one is the fastest a node's
    link allows, the choice kindest to RC.
    """
    source = np.asarray(source_nodes, dtype=np.int64)
    target = np.asarray(target_nodes, dtype=np.int64)
    per_move: F64 = np.where(source == target, 0.0, state_transfer(config))
    migration = 0.0
    if len(per_move) and per_move.max() > 0:
        sent = np.bincount(source, weights=per_move)
        received = np.bincount(target, weights=per_move)
        migration = float(max(sent.max(), received.max()))
    return rc_fixed_sync(config) + max(0.0, drain), migration, per_move
