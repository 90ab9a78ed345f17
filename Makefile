# Set-up and entry points. `make run` and `make test` each install everything they need first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# What `pip install elastream` users get: the newest versions pyproject's ranges allow, no
# constraints file. Installed when pyproject.toml changes; `rm -r .venv-latest` refreshes it.
LATEST := .venv-latest
LATEST_STAMP := $(LATEST)/.installed-stamp
# Apache Flink for benchmarks/throughput/run.py's flink engines: its own environment, since
# PyFlink's pins conflict with the project's (benchmarks/throughput/flink-requirements.txt).
FLINK := .venv-flink
FLINK_STAMP := $(FLINK)/.installed-stamp
# The JVM jars pinned in jvm/*.pom.xml (Spark's Kafka connector, the Kafka broker), copied by
# Maven into .jars/<pom's name>/; a folder is fetched anew only when its pom changes.
JARS := .jars
JAR_STAMPS := $(patsubst jvm/%.pom.xml,$(JARS)/%.stamp,$(wildcard jvm/*.pom.xml))

.PHONY: run test test-fast test-latest lint bench bench-flink browser jars

# `make run > summary.json` keeps stdout the job's JSON alone: what make says goes to stderr.
$(STAMP): pyproject.toml constraints.txt
	@echo "make: installing elastream and its pinned dependencies into $(VENV)" >&2
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade "pip>=24" >&2
	@$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]" >&2
	@touch $(STAMP)

$(LATEST_STAMP): pyproject.toml
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/pip install --quiet --upgrade "pip>=24"
	$(LATEST)/bin/pip install --quiet --upgrade --upgrade-strategy eager -e ".[dev]"
	touch $(LATEST_STAMP)

$(FLINK_STAMP): benchmarks/throughput/flink-requirements.txt
	$(PYTHON) -m venv $(FLINK)
	$(FLINK)/bin/pip install --quiet --upgrade "pip>=24"
	$(FLINK)/bin/pip install --quiet -r benchmarks/throughput/flink-requirements.txt
	touch $(FLINK_STAMP)

# Maven's output goes to .jars/NAME.log, shown only if it fails (`-q` still prints escapes).
$(JARS)/%.stamp: jvm/%.pom.xml
	@echo "make: copying the jars of $< into $(JARS)/$* (Maven)" >&2
	@rm -rf $(JARS)/$* && mkdir -p $(JARS)
	@mvn -q -B -f $< dependency:copy-dependencies >$(JARS)/$*.log 2>&1 \
	  || { cat $(JARS)/$*.log >&2; exit 1; }
	@touch $@

jars: $(JAR_STAMPS)

run: $(STAMP)
	@echo "$(BIN)/elastream run $(ARGS)" >&2
	@$(BIN)/elastream run $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

# PyFlink for benchmarks/throughput/run.py --engines flink,flink-rocksdb-cp5 (its default
# --flink-python is $(FLINK)/bin/python).
bench-flink: $(FLINK_STAMP)

# Debian's Chromium, for the report's browser test (tests/test_report_browser.py).
browser:
	@command -v chromium >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q chromium >/dev/null; }; }

# Two pytest workers share the test files out (a file's tests run in one worker, so a module's
# Spark job or cluster starts once). A Spark job keeps its 2 cores busy only ~70 % of the time
# (a micro-batch waits on its driver, its state server and its Python workers): two at once
# finish sooner.
test: lint browser jars test-latest
	$(BIN)/python -m pytest -n 2 --dist loadfile -q --durations=15

# The non-Spark suite (with the --json stdout checks) on the newest allowed versions, its
# property tests with a quarter of their examples (tests/properties.py).
test-latest: $(LATEST_STAMP) browser jars
	@echo "test-latest: $$($(LATEST)/bin/pip freeze --exclude-editable | tr '\n' ' ')"
	ELASTREAM_EXAMPLES_SCALE=0.25 $(LATEST)/bin/python -m pytest -m "not spark" -n 2 -q

test-fast: $(STAMP) browser jars
	$(BIN)/python -m pytest -m "not spark" -n 2
