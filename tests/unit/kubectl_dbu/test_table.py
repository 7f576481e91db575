"""The plugin's tables and ages: kubectl's column layout and its AGE column's rounding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dbuser_operator.kubectl_dbu.table import age, human_duration, printable, table


@pytest.mark.parametrize(
    ("delta", "shown"),
    [
        (timedelta(seconds=-5), "<invalid>"),
        (timedelta(seconds=-1), "0s"),
        (timedelta(0), "0s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=2), "2m"),
        (timedelta(minutes=3, seconds=12), "3m12s"),
        (timedelta(minutes=10, seconds=59), "10m"),
        (timedelta(hours=2, minutes=59), "179m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=5, minutes=30), "5h30m"),
        (timedelta(hours=20, minutes=30), "20h"),
        (timedelta(days=3, hours=4), "3d4h"),
        (timedelta(days=5), "5d"),
        (timedelta(days=40, hours=23), "40d"),
        (timedelta(days=365 * 3 + 20), "3y20d"),
        (timedelta(days=365 * 2), "2y"),
        (timedelta(days=365 * 10 + 100), "10y"),
    ],
)
def test_ages_are_rounded_as_kubectl_rounds_them(delta: timedelta, shown: str) -> None:
    assert human_duration(delta) == shown


def test_age_of_an_api_time_and_of_none() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert age("2026-01-02T02:04:05Z", now) == "60m"
    assert age(None, now) == "-"
    assert age("not a time", now) == "-"


def test_columns_line_up_without_trailing_spaces() -> None:
    text = table(("NAME", "READY", "AGE"), [["app", "True", "5m"], ["a-longer-name", "False", "-"]])
    assert text.splitlines() == [
        "NAME            READY   AGE",
        "app             True    5m",
        "a-longer-name   False   -",
    ]
    assert table(("NAME", "READY"), []) == "NAME   READY"


def test_text_from_others_cannot_drive_the_terminal() -> None:
    hostile = "ok\x1b]0;owned\x07\r\u202egnp.exe\nnext"
    assert printable(hostile) == "ok\\x1b]0;owned\\x07\\x0d\\u202egnp.exe\\x0anext"
    assert printable("line\nline", keep="\n") == "line\nline"
    assert printable("café ✓") == "café ✓"
    text = table(("NAME", "MESSAGE"), [["a", "two\nlines\x1b[2J"]])
    assert text.splitlines()[1] == "a      two\\x0alines\\x1b[2J"
