"""Elasticutor (Wang et al.): executor-centric elasticity, its model, scheduler and baselines.

Pure, engine-free modules, one algorithm each:

==========================  ================================================================
module                      what (paper section)
==========================  ================================================================
:mod:`.latency`             M/M/k executors in a Jackson network: Erlang C, eq. (1) (§4.1)
:mod:`.allocation`          how many cores each executor needs: the greedy of §4.1
:mod:`.shard_balance`       shards over an executor's tasks within θ (§3.1)
:mod:`.assignment`          which node's cores each executor gets: Algorithm 1 (§4.2)
==========================  ================================================================
"""
