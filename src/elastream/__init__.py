"""elastream: elastic, skew-aware stateful stream processing for Apache Spark."""

__version__ = "0.1.0"
