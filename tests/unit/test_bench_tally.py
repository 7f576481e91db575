"""The bench's pure counting: a window of counters (bench.tally), py-spy's stacks by function
(bench.profile_summary), the side-by-side table (bench.peers_table)."""

from __future__ import annotations

import pytest
from bench.common import parse_metrics
from bench.mariadb_operator import round_order
from bench.peers_table import table
from bench.profile_summary import by_library, by_own, by_task, parse, summarise
from bench.tally import Reading, difference

APISERVER_METRICS = """\
# HELP apiserver_request_total Counter of apiserver requests
apiserver_request_total{code="201",resource="users",verb="POST"} 12
apiserver_request_total{code="200",resource="users",subresource="status",verb="PATCH"} 30
apiserver_request_total{code="200",resource="leases",verb="PUT"} 99
apiserver_request_total{code="200",resource="users",verb="WATCH"} 4
"""


def test_difference_takes_out_the_harness_own_writes_and_statements() -> None:
    before = Reading(
        {"users": 10.0}, 5.0, {"Questions": 100, "Com_create_user": 1, "Com_select": 7}, 2.0, 0.0
    )
    after = Reading(
        {"users": 40.0, "events": 10.0},
        15.0,
        {"Questions": 131, "Com_create_user": 11, "Com_select": 9},
        3.5,
        4.0,
    )
    counted = difference(before, after, harness_statements=1, per=10)
    assert counted["api_writes"] == 30  # 40 served, 10 of them the harness's
    assert counted["apiserver_writes_by_resource"] == {"users": 30.0, "events": 10.0}
    assert counted["sql"]["Questions"] == 30  # less the SHOW GLOBAL STATUS that read ``after``
    assert counted["sql_statements_per"] == 3.0
    assert counted["sql_writes_per"] == 1.0  # Com_create_user; Com_select is no write
    assert counted["cpu_seconds"] == pytest.approx(1.5)
    assert counted["wall_seconds"] == 4.0


def test_apiserver_writes_are_parsed_by_verb_and_resource() -> None:
    samples = parse_metrics(APISERVER_METRICS, {"apiserver_request_total"})
    assert [(labels["resource"], labels["verb"], value) for _, labels, value in samples] == [
        ("users", "POST", 12.0),
        ("users", "PATCH", 30.0),
        ("leases", "PUT", 99.0),
        ("users", "WATCH", 4.0),
    ]


RUN = "<module> (runpy.py:198);run (/usr/lib/python3.12/asyncio/runners.py:118)"
RECONCILE = "reconcile (/w/operator/dbuser_operator/controllers/user.py:{line})"
EXECUTE = "execute (/w/.venv/lib/python3.12/site-packages/aiomysql/cursors.py:239)"
STACKS = "\n".join(
    [
        f"{RUN};{RECONCILE.format(line=40)};{EXECUTE} 7",
        f"{RUN};{RECONCILE.format(line=41)} 2",
        "<module> (runpy.py:198);_run_once (/usr/lib/python3.12/asyncio/base_events.py:1999) 1",
        f"{RUN};Handle._run (asyncio/events.py:84);_work (dbuser_operator/runtime/controller.py:9) 3",
        "",
    ]
)


def test_profile_samples_by_own_function_and_library() -> None:
    stacks = parse(STACKS)
    assert sum(count for _, count in stacks) == 13
    own = by_own(stacks)
    assert own["reconcile (/w/operator/dbuser_operator/controllers/user.py)"] == 9  # line numbers merged
    assert own["(outside)"] == 1
    assert own["_work (dbuser_operator/runtime/controller.py)"] == 3
    assert by_library(stacks) == {"aiomysql": 7, "dbuser_operator": 5, "asyncio": 1}
    assert by_task(stacks) == {
        "(outside the event loop)": 10,
        "_work (dbuser_operator/runtime/controller.py)": 3,
    }
    text = summarise(STACKS, top=2)
    assert text.startswith("13 samples")
    assert "| `execute (/w/.venv/lib/python3.12/site-packages/aiomysql/cursors.py)` | 7 | 53.8 % |" in text


def _row(implementation: str, cpu: float) -> dict[str, object]:
    rotation = {
        "p50_ms": 30.0,
        "p99_ms": 80.0,
        "api_writes_per_rotation": 2.0,
        "sql_writes_per_rotation": 1.0,
        "cpu_seconds": 0.5,
        "samples": 100,
    }
    return {
        "round": 1,
        "implementation": implementation,
        "seconds": 20.0,
        "cpu_seconds_settled": cpu,
        "peak_rss_mib": 80.0,
        "peak_rss_10s_later_mib": 81.0,
        "api_writes_per_user": 3.0,
        "sql_statements_per_user": 3.03,
        "sql_writes_per_user": 2.0,
        "rotation": rotation,
    }


def test_the_table_gives_dbuser_operator_cpu_over_the_peer_of_its_round() -> None:
    lines = table([_row("dbuser-operator", 5.0), _row("mariadb-operator", 10.0)]).splitlines()
    assert lines[2].split(" | ")[4] == "0.50"
    assert lines[3].split(" | ")[4] == ""
    assert lines[2].endswith("| 30 / 80 | 2.00 / 1.00 | 5.0 |")


def test_the_table_says_who_ran_first_and_the_median_ratio_of_the_rounds() -> None:
    runs = [
        {**_row("dbuser-operator", 5.0), "round": 1, "first": "dbuser-operator"},
        {**_row("mariadb-operator", 10.0), "round": 1, "first": "dbuser-operator"},
        {**_row("mariadb-operator", 10.0), "round": 2, "first": "mariadb-operator"},
        {**_row("dbuser-operator", 6.0), "round": 2, "first": "mariadb-operator"},
        {**_row("dbuser-operator", 4.0), "round": 3, "first": "dbuser-operator"},
        {**_row("mariadb-operator", 10.0), "round": 3, "first": "dbuser-operator"},
    ]
    lines = table(runs).splitlines()
    assert lines[2].startswith("| 1 (dbuser-operator first) | dbuser-operator |")
    assert lines[5].split(" | ")[4] == "0.60"
    assert lines[-1] == "CPU ratio, median of 3 round(s): 0.50"


def test_the_rounds_alternate_who_runs_first() -> None:
    both = {"dbuser-operator", "mariadb-operator"}
    assert round_order(0, both) == ["dbuser-operator", "mariadb-operator"]
    assert round_order(1, both) == ["mariadb-operator", "dbuser-operator"]
    assert round_order(2, both) == ["dbuser-operator", "mariadb-operator"]
    assert round_order(1, {"dbuser-operator"}) == ["dbuser-operator"]
