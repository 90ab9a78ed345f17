"""Grouping schemes: which worker each tuple of a keyed stream goes to (FISH and its baselines).

Build one with :func:`elastream.algorithms.grouping.registry.make_scheme`; the interface is
:class:`elastream.algorithms.grouping.base.GroupingScheme`.
"""
