"""Each option is defined once: the CLI, the API, the spec, job.json and the README follow it."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from elastream.api import windowed
from elastream.cli import run
from elastream.control.planners import PLANNERS
from elastream.core.errors import OptionError
from elastream.core.identity import identity
from elastream.core.options import OPTIONS, markdown, spec_values
from elastream.core.spec import PART_CLASSES, PipelineSpec, RunSpec

README = Path(__file__).parents[1] / "README.md"
BEGIN = "<!-- options: elastream.core.options.markdown(); tests/test_options.py keeps it equal -->"


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    run.register(commands)
    return commands.choices["run"]


def test_the_readme_table_is_the_options_table() -> None:
    text = README.read_text()
    table = text[text.index(BEGIN) + len(BEGIN) + 1:text.index("<!-- /options -->")]
    assert table == markdown(list(PLANNERS)), (
        "README's option table differs from elastream.core.options: paste "
        "`.venv/bin/python -c 'from elastream.core.options import markdown; from "
        "elastream.control.planners import PLANNERS; print(markdown(list(PLANNERS)), end=\"\")'`")


def test_the_cli_has_a_flag_for_each_option_that_names_one_and_no_other() -> None:
    flags = {a.dest: a.option_strings[0] for a in _run_parser()._actions if a.option_strings}
    flags.pop("help")
    assert flags == {o.name: o.flag for o in OPTIONS.values() if o.flag}


def test_the_api_takes_each_api_option_with_its_default() -> None:
    params = inspect.signature(windowed).parameters
    taken = {n for n in params if n not in ("df", "start_controller")}
    assert taken == {o.name for o in OPTIONS.values() if o.api}
    for name in taken - {"planner_options"}:  # None there: no settings
        default = params[name].default
        assert default in (inspect.Parameter.empty, OPTIONS[name].default), name


def test_each_part_holds_exactly_the_fields_of_its_options() -> None:
    assert set(PART_CLASSES) == {o.part for o in OPTIONS.values() if o.field}
    for part, cls in PART_CLASSES.items():
        assert [f.name for f in fields(cls)] == [
            o.field for o in OPTIONS.values() if o.part == part and o.field], part


def test_a_spec_holds_its_parts_under_one_name_each() -> None:
    assert RunSpec.parts() == {"input": "source", "windows": "windowing",
                               "chain": "chaining", "routing": "routing",
                               "scaling": "scaling", "run": "files"}


def test_each_spec_field_is_an_option_with_the_options_default() -> None:
    by_field = {o.field: o for o in OPTIONS.values() if o.field}
    for cls in PART_CLASSES.values():
        for spec_field in fields(cls):
            option = by_field[spec_field.name]
            if spec_field.default is not MISSING and option.to_spec is None:
                assert spec_field.default == option.default, spec_field.name


def test_a_spec_is_built_and_changed_by_flat_fields(tmp_path: Path) -> None:
    job = _job(tmp_path)
    assert RunSpec.of(**job.flat()) == job
    changed = job.with_(slots=2, planner="hash", mode="watch")
    assert (changed.scaling.slots, changed.routing.planner, changed.files.mode) == (
        2, "hash", "watch")
    assert changed.source is job.source and changed.value("slots") == 2
    with pytest.raises(TypeError, match="PipelineSpec has no field 'input'"):
        PipelineSpec.of(input=tmp_path)


def test_job_json_records_exactly_the_options_a_rerun_must_keep(tmp_path: Path) -> None:
    # graph is not a field of its own: a graph's operators are the chain's, recorded as chain.
    recorded = set(identity(_job(tmp_path))["defining"])
    assert recorded == {o.name for o in OPTIONS.values() if o.rerun == "never" and o.field}


def _job(tmp_path: Path) -> RunSpec:
    return run._spec(_run_parser().parse_args([]), tmp_path)


@pytest.mark.parametrize(("api", "cli"), [
    ({"slots": 0}, ["--slots", "0"]),
    ({"rows_per_batch": 0}, ["--rows-per-batch", "0"]),
    ({"tau": -1.0}, ["--tau", "-1"]),
    ({"autoscale": (3, 2)}, ["--autoscale", "3:2"]),
    ({"latency_threshold": 1.0}, ["--latency-threshold", "1"]),
    ({"max_moves": -1}, ["--max-moves", "-1"]),
    ({"release_after": -1.0}, ["--release-after", "-1"]),
])
def test_the_api_and_the_cli_break_one_rule_with_one_message(
        tmp_path: Path, api: dict[str, object], cli: list[str]) -> None:
    """The API names the argument, the CLI the flag; the rule and the value are the same."""
    base = _job(tmp_path)
    values = base.flat()
    name, value = next(iter(api.items()))
    values[OPTIONS[name].field] = value
    with pytest.raises(OptionError) as from_api:
        RunSpec.of(**values)
    with pytest.raises(OptionError) as from_cli:
        try:
            run._spec(_run_parser().parse_args(cli), tmp_path)
        except OptionError as error:
            raise run.as_flags(error) from None
    assert from_api.value.option == name
    assert from_cli.value.option == OPTIONS[name].flag
    assert run.as_flags(from_api.value).rule == from_cli.value.rule
    assert from_api.value.value == from_cli.value.value


def test_a_pipeline_spec_holds_no_option_of_where_a_run_reads_and_writes() -> None:
    assert "run" not in PipelineSpec.parts()
    assert not any(PipelineSpec.holds(o.field) for o in OPTIONS.values() if o.part == "run")


def test_an_api_option_left_none_becomes_the_specs_default() -> None:
    assert spec_values({"planner_options": None, "autoscale": None}) == {
        "planner_options": {}, "autoscale": None}
