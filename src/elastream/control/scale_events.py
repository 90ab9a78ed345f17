"""What a job's scale events did, read from its metrics records (summary, console, report).

An event is *asked* when the control loop starts it (its record has ``scale_to``; ``by``:
``scale_at``, or ``request`` from ``job.scale`` or a resumed run's slots) and *done*
when its moves are over: a job that scales by key-group ranges has no key group left to move
(``key_groups_to_move`` 0); a job that scales by moves has emptied every slot it marked as
leaving (``slots_gone``; a scale-out is done at once: its new slots are there for the planner
to fill). A scheduled event (``scale_at``) whose batch the job never reached is listed as not
asked. Each event says why it is not done, and whether its migration plan fell back.

>>> records = [{"batch_id": 0, "moves": 0},
...            {"batch_id": 2, "scale_to": 3, "scale_asked_by": "scale_at", "slots_added": [],
...             "slots_marked": [3], "moves": 2},
...            {"batch_id": 3, "moves": 1, "slots_gone": [3]}]
>>> [e["done"] for e in scale_events(records, [(2, 3), (9, 6)])]
[True, False]
>>> scale_events(records, [(2, 3), (9, 6)])[1]["why"]
'not asked: the job ended at batch 3, before batch 9'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def scale_events(records: Sequence[dict[str, Any]],
                 scheduled: Sequence[tuple[int, int]] = ()) -> list[dict[str, Any]]:
    """Every scale event of ``records`` (a job's metrics, in order), then those never asked.

    ``scheduled``: the job's ``scale_at`` events as ``(batch, slots)``.
    """
    events: list[dict[str, Any]] = []
    for record in records:
        if record.get("scale_to"):
            events.append(_asked(record))
        elif events:
            _follow(events[-1], record)
    last = max((int(r["batch_id"]) for r in records), default=-1)
    for event in events:
        if not event["done"]:
            left = event.pop("_left")
            event["why"] = (f"the job ended with {left} still to move" if left else
                            "the job ended before its moves began")
        event.pop("_left", None)
        event.pop("_marked", None)
    asked = sum(1 for e in events if e["by"] == "scale_at")
    for batch, slots in list(scheduled)[asked:]:
        events.append({"batch": batch, "slots": slots, "asked": False, "by": "scale_at",
                       "done": False,
                       "why": f"not asked: the job ended at batch {last}, before batch {batch}"})
    return events


def unfinished(events: Sequence[dict[str, Any]]) -> list[str]:
    """One line per event that is not done or whose plan fell back, for the console."""
    lines = []
    for e in events:
        if not e["done"]:
            lines.append(f"scale to {e['slots']} slots (batch {e['batch']}) not done: {e['why']}")
        if e.get("fallback"):
            lines.append(f"scale to {e['slots']} slots (batch {e['batch']}): no "
                         f"{e['asked_plan']} plan within the load bound, {e['plan']} used "
                         f"({e['status']})")
    return lines


def _asked(record: dict[str, Any]) -> dict[str, Any]:
    marked = list(record.get("slots_marked", []))
    event: dict[str, Any] = {
        "batch": int(record["batch_id"]), "slots": int(record["scale_to"]), "asked": True,
        "by": record.get("scale_asked_by", "scale_at"),
        "plan": record.get("scale_plan"), "status": record.get("scale_plan_status"),
        "moves": 0, "done": False, "_marked": set(marked), "_left": None}
    if record.get("scale_fallback"):
        event.update(fallback=True, asked_plan=record["scale_fallback"])
    if "slots_added" in record:
        event.update(added=record["slots_added"], leaving=marked)
    _follow(event, record)
    return event


def _follow(event: dict[str, Any], record: dict[str, Any]) -> None:
    """Count ``record``'s moves toward ``event`` until it is done; check whether it is."""
    if event["done"]:
        return
    event["moves"] += int(record.get("moves", 0))
    if "added" in event:  # by moves: done once every marked slot is gone
        event["_marked"] -= set(record.get("slots_gone", []))
        event["_left"] = f"slots {sorted(event['_marked'])} holding key groups" \
            if event["_marked"] else None
        event["done"] = not event["_marked"]
    elif "key_groups_to_move" in record:
        left = int(record["key_groups_to_move"])
        event["_left"] = f"{left} key groups" if left else None
        event["done"] = left == 0
    if event["done"]:
        event["done_batch"] = int(record["batch_id"])
