"""Vectorised cluster simulator: grouping schemes feeding FIFO workers (see :mod:`.simulator`)."""

from elastream.runtimes.sim.config import SimConfig, WorkerEvent
from elastream.runtimes.sim.metrics import LatencyStats
from elastream.runtimes.sim.simulator import RoutingError, SimResult, simulate

__all__ = ["LatencyStats", "RoutingError", "SimConfig", "SimResult", "WorkerEvent", "simulate"]
