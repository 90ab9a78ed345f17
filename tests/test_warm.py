"""Starting a job's Python workers beside the first query planning (:mod:`.warm`).

The modules the warm-up imports are the ones the job's stages unpickle their functions with
(a renamed module would make the warm-up fail quietly forever), and on local Spark the warm-up
is one job of a task per core that succeeds.
"""

from __future__ import annotations

from typing import Any

import pytest

from elastream.runtimes.spark.warm import import_job_modules, warm_python_workers


def test_the_warm_up_imports_the_modules_of_the_job_stages() -> None:
    assert list(import_job_modules(iter([1, 2]))) == []


@pytest.mark.spark
def test_the_warm_up_is_a_job_of_a_task_per_core_that_succeeds(
        spark: Any) -> None:
    context = spark.sparkContext
    tracker = context.statusTracker()
    thread = warm_python_workers(spark, group="elastream-warm-test")
    thread.join(timeout=300)
    assert not thread.is_alive()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup("elastream-warm-test")]
    assert [job.status for job in jobs] == ["SUCCEEDED"]
    stages = [tracker.getStageInfo(s) for s in jobs[0].stageIds]
    assert sum(stage.numTasks for stage in stages) == context.defaultParallelism
