"""Which Spark settings a session gets: given ones kept, needed ones set or refused, defaults."""

from __future__ import annotations

import pytest

from elastream.core.errors import SessionError
from elastream.runtimes.spark.settings import (
    CHECKPOINT_MANAGER,
    LOCAL_CHECKPOINT_FILES,
    OPERATOR_DISTRIBUTION,
    ROCKSDB,
    SHUFFLE_PARTITIONS,
    STATE_STORE,
    session_settings,
)

CLUSTER = "spark://127.0.0.1:7077"
WAIT = "spark.scheduler.minRegisteredResourcesRatio"


def test_a_new_local_session_gets_the_needed_settings_and_the_defaults() -> None:
    settings = session_settings({}, jvm_started=False)
    assert settings["spark.master"] == "local[2]"
    assert settings[STATE_STORE] == ROCKSDB and settings[OPERATOR_DISTRIBUTION] == "false"
    assert settings["spark.driver.memory"] == "2g"
    assert settings[CHECKPOINT_MANAGER] == LOCAL_CHECKPOINT_FILES
    assert WAIT not in settings  # nothing to wait for on a local master
    assert SHUFFLE_PARTITIONS not in settings  # one per core, once the session knows them


def test_given_settings_are_kept_and_a_cluster_waits_for_its_executors() -> None:
    given = {"spark.master": CLUSTER, "spark.executor.memory": "3g", "spark.ui.enabled": "true",
             "spark.app.name": "mine", WAIT: "0.5"}
    settings = session_settings(given, jvm_started=False)
    assert {k: settings[k] for k in given} == given
    assert session_settings({"spark.master": CLUSTER}, jvm_started=False)[WAIT] == "1.0"


def test_driver_settings_are_left_alone_once_its_jvm_runs() -> None:
    """Under spark-submit the driver's JVM was started with spark-submit's own settings."""
    settings = session_settings({"spark.master": CLUSTER}, jvm_started=True)
    assert "spark.driver.memory" not in settings
    assert "spark.driver.extraJavaOptions" not in settings


def test_checkpoints_through_the_local_file_manager_only_on_a_local_file_system() -> None:
    hdfs = {"spark.hadoop.fs.defaultFS": "hdfs://namenode:8020"}
    assert CHECKPOINT_MANAGER not in session_settings(hdfs, jvm_started=False)
    local = {"spark.hadoop.fs.defaultFS": "file:///"}
    assert session_settings(local, jvm_started=False)[CHECKPOINT_MANAGER] == (
        LOCAL_CHECKPOINT_FILES)


def test_a_jobs_partitions_are_set_and_equal_given_values_accepted() -> None:
    assert session_settings({}, jvm_started=False, partitions=4)[SHUFFLE_PARTITIONS] == "4"
    given = {SHUFFLE_PARTITIONS: "4", OPERATOR_DISTRIBUTION: "false", STATE_STORE: ROCKSDB}
    settings = session_settings(given, jvm_started=False, partitions=4)
    assert {k: settings[k] for k in given} == given


@pytest.mark.parametrize(("setting", "value", "partitions"), [
    (OPERATOR_DISTRIBUTION, "true", None),
    (STATE_STORE, "org.apache.spark.sql.execution.streaming.state."
                  "HDFSBackedStateStoreProvider", None),
    (SHUFFLE_PARTITIONS, "200", 4),
])
def test_a_given_value_elastream_cannot_work_with_is_refused_naming_it(
        setting: str, value: str, partitions: int | None) -> None:
    with pytest.raises(SessionError) as caught:
        session_settings({setting: value}, jvm_started=False, partitions=partitions)
    message = str(caught.value)
    assert message.startswith(f"{setting} must be ")
    assert f"got {value!r}" in message and "remove it or set it to" in message


def test_every_wrong_setting_is_named_at_once() -> None:
    with pytest.raises(SessionError) as caught:
        session_settings({OPERATOR_DISTRIBUTION: "true", SHUFFLE_PARTITIONS: "8"},
                         jvm_started=False, partitions=2)
    assert OPERATOR_DISTRIBUTION in str(caught.value)
    assert SHUFFLE_PARTITIONS in str(caught.value)
