"""Where the JVM jars are: Spark's Kafka connector and the Kafka broker.

``make jars`` copies them with Maven into the checkout's ``.jars/`` (their versions are pinned in
``jvm/*.pom.xml``): ``.jars/spark-kafka/`` for a Spark session's ``spark.jars``,
``.jars/kafka-broker/`` for the broker's class path. ``$ELASTREAM_JARS`` names another folder
holding those two; outside a checkout the default is ``~/.cache/elastream/jars``.
"""

from __future__ import annotations

import os
from pathlib import Path

from elastream.core.errors import ElastreamError

JARS_ENV = "ELASTREAM_JARS"
SPARK_KAFKA = "spark-kafka"
KAFKA_BROKER = "kafka-broker"
CONNECTOR_JAR = "spark-sql-kafka-0-10_"
"""The name every version of Spark's Kafka connector jar starts with."""
BROKER_JAR = "kafka_2.13-"
"""The name every version of the broker's jar starts with."""


class MissingJars(ElastreamError):  # noqa: N818 (named for what is missing)
    """A folder of jars ``make jars`` fills is missing, or lacks its main jar."""


def jars_dir() -> Path:
    """``$ELASTREAM_JARS``; else the checkout's ``.jars``; else ``~/.cache/elastream/jars``.

    The checkout is the first folder above this file that holds ``pyproject.toml`` and ``jvm/``
    (an editable install); an installed wheel has none.
    """
    given = os.environ.get(JARS_ENV)
    if given:
        return Path(given)
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "jvm").is_dir():
            return folder / ".jars"
    return Path.home() / ".cache" / "elastream" / "jars"


def spark_kafka_jars() -> list[str]:
    """The paths of Spark's Kafka connector and its dependencies, for ``spark.jars``."""
    folder = _folder(SPARK_KAFKA, CONNECTOR_JAR, "the Kafka connector's")
    return sorted(str(jar) for jar in folder.glob("*.jar"))


def broker_classpath() -> str:
    """The broker's class path, ``FOLDER/*`` (the ``java`` launcher expands the wildcard)."""
    folder = _folder(KAFKA_BROKER, BROKER_JAR, "the Kafka broker's")
    return f"{folder}/*"


def _folder(name: str, main_jar: str, whose: str) -> Path:
    """``jars_dir() / name`` if it holds a jar whose name starts with ``main_jar``."""
    folder = jars_dir() / name
    if not any(folder.glob(f"{main_jar}*.jar")):
        raise MissingJars(f"{whose} jars are not in {folder}: run `make jars` (Maven), "
                          f"or set {JARS_ENV} to a folder holding {SPARK_KAFKA}/ and "
                          f"{KAFKA_BROKER}/")
    return folder
