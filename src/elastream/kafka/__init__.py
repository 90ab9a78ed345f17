"""Kafka on this machine, for tests, demos and benchmarks.

A one-node broker (:mod:`~elastream.kafka.broker`), a file producer
(:mod:`~elastream.kafka.produce`) and the JVM jars they and Spark need
(:mod:`~elastream.kafka.jars`: Spark's Kafka connector, the broker), fetched by ``make jars``.
No Spark here: a Spark session takes :func:`~elastream.kafka.jars.spark_kafka_jars` as its
``spark.jars``. The Python client (``confluent-kafka``) is the ``kafka`` extra.
"""
