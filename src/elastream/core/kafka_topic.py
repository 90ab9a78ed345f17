"""A Kafka topic named by a URL, ``kafka://HOST:PORT[,HOST:PORT…]/TOPIC``: an input or a sink.

>>> topic = kafka_topic("--input", "kafka://127.0.0.1:9092/flights")
>>> topic.bootstrap, topic.topic, str(topic)
('127.0.0.1:9092', 'flights', 'kafka://127.0.0.1:9092/flights')
>>> is_kafka("kafka://h:1/t"), is_kafka("data/flights.parquet")
(True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from elastream.core.errors import OptionError

SCHEME = "kafka://"
_SERVER = r"[A-Za-z0-9._-]+:\d{1,5}"
_URL = re.compile(rf"kafka://(?P<servers>{_SERVER}(?:,{_SERVER})*)/(?P<topic>[A-Za-z0-9._-]+)")
"""Kafka's topic names: letters, digits, ``.``, ``_`` and ``-``."""


@dataclass(frozen=True)
class KafkaTopic:
    """A topic and the brokers that bootstrap a client to it."""

    bootstrap: str
    topic: str

    def __str__(self) -> str:
        return f"{SCHEME}{self.bootstrap}/{self.topic}"


def is_kafka(text: str) -> bool:
    """Whether ``text`` is meant as a Kafka URL."""
    return text.startswith(SCHEME)


def kafka_topic(option: str, text: str) -> KafkaTopic:
    """The topic of ``text``, or an :class:`OptionError` naming ``option``."""
    match = _URL.fullmatch(text)
    if match is None:
        raise OptionError(option, "must look like kafka://HOST:PORT/TOPIC (several brokers "
                          "joined by commas)", text)
    return KafkaTopic(match["servers"], match["topic"])
