"""Operator state migration planners (Ding et al., *Efficient Operator State Migration*).

*Efficient Operator State Migration for Cloud-Based Data Stream Management Systems*: which tasks
go to which node when an operator changes its node count, so that the least state moves while
the work stays balanced.

- :mod:`.intervals` — instances, plans, cost (state moved) and load ratio;
- :mod:`.ssm` — optimal single-step migration, the §4.3 dynamic program;
- :mod:`.oms` — optimal migration sequence for known node counts (§5.1);
- :mod:`.pmc`, :mod:`.mtm` — projected migration costs by value iteration and MTM-aware
  migration (§5.2);
- :mod:`.ch`, :mod:`.storm`, :mod:`.redist` — the paper's baselines;
- :mod:`.matching`, :mod:`.partitions` — cheapest node assignment for fixed intervals, and every
  partitioning that meets τ;
- :mod:`.registry` — the planners by name.
"""
