"""Elasticutor (Wang et al.): executor-centric elasticity, its model, scheduler and baselines.

Pure, engine-free modules, one algorithm each:

==========================  ================================================================
module                      what (paper section)
==========================  ================================================================
:mod:`.latency`             M/M/k executors in a Jackson network: Erlang C, eq. (1) (§4.1)
:mod:`.allocation`          how many cores each executor needs: the greedy of §4.1
:mod:`.shard_balance`       shards over an executor's tasks within θ (§3.1)
:mod:`.assignment`          which node's cores each executor gets: Algorithm 1 (§4.2)
:mod:`.strategy`            ``Workload`` and ``Schedule``: what every strategy takes/returns
:mod:`.executor_centric`    Elasticutor (EC): allocation, Algorithm 1, shard balancing (§2–4)
:mod:`.static`              baseline: one executor per core, fixed keys (§2.2)
:mod:`.resource_centric`    baseline RC: keys re-partitioned over one-core executors (§2.2)
:mod:`.naive_ec`            baseline: EC with cost- and locality-blind placement (§5.4)
:mod:`.strategies`          the four strategies by name
==========================  ================================================================

**One shape for every strategy.** A simulator calls each strategy as
``schedule(workload, previous) -> Schedule`` (:data:`.strategy.Strategy`): ``workload`` is one
interval's observation (per-shard rates, state and bytes/s, the per-core service rate, the
executor count, the nodes' cores, the latency target, θ and φ̄); ``previous`` the schedule in
force (``None`` at the start). A :class:`.strategy.Schedule` lists each task (core) with its
executor and node, each shard's task, the model's latency with a status, and the state that
moved between nodes; :meth:`.strategy.Schedule.remote_rate` gives the remote data transfer.
:data:`.strategies.STRATEGIES` maps ``static``, ``rc``, ``ec``, ``naive_ec`` to them.

The Spark runtime's planner over key groups and slots is
:mod:`elastream.algorithms.balance.elasticutor`.
"""
