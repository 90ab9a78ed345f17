"""The Spark Structured Streaming runtime: the only package that imports pyspark."""
