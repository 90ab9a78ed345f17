"""The control step's record of progress reports (no Spark session needed)."""

from __future__ import annotations

from elastream.runtimes.spark.progress import MetricNames, _record


def report(batch: int, rows: int, watermark: str | None) -> dict[str, object]:
    names = MetricNames("t")
    out: dict[str, object] = {
        "batchId": batch, "durationMs": {"triggerExecution": 10},
        "observedMetrics": {names.input: {"rows": rows}}, "stateOperators": []}
    if watermark is not None:
        out["eventTime"] = {"watermark": watermark}
    return out


def test_a_report_without_event_time_statistics_is_recorded() -> None:
    # A resumed query's first report may carry no eventTime at all.
    record = _record(MetricNames("t"), [report(3, 0, None)], [])
    assert record["watermark"] is None and record["batch_id"] == 3
    record = _record(MetricNames("t"), [report(3, 5, None), report(4, 7, "2001-01-01")], [])
    assert record["watermark"] == "2001-01-01" and record["input_rows"] == 12
