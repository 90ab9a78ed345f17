"""Where a job keeps what outlives a micro-batch, between the pure core and the control loop.

The filesystem layer (local, HDFS, object stores), the routing store (versions and the
micro-batches bound to them) and its compacted history, the migration store (key-group state in
flight between slots) and the metrics file. No engine: the Spark runtime and the simulators
use them alike.
"""
