"""Log lines: JSON by default with the reconcile's context; tracebacks without local variables."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
import structlog

from dbuser_operator.runtime.controller import Controller, Result
from dbuser_operator.runtime.logging import configure_logging
from dbuser_operator.runtime.resources import ObjectKey
from tests.support.kube import eventually


@pytest.fixture
def restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield None
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


async def test_every_reconcile_line_carries_the_reconcile_context(
    restore_logging: object, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("json", "info")
    log = structlog.get_logger("test")
    secret_value = "hunter2-must-not-appear"

    async def reconcile(key: ObjectKey) -> Result:
        log.info("working", step="one")
        password = secret_value  # a local variable a traceback with locals would print
        raise RuntimeError(f"failed for a reason ({len(password)})")

    controller = Controller("logging-test", reconcile, max_concurrent_reconciles=1)
    task = asyncio.create_task(controller.run())
    controller.queue.add(ObjectKey("ns", "obj"))
    await eventually(lambda: controller.queue.num_requeues(ObjectKey("ns", "obj")) >= 1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    reconcile_lines = [
        line
        for line in lines
        if line.get("event") in {"working", "reconcile raised an unexpected exception; retrying"}
    ]
    assert len(reconcile_lines) >= 2
    for line in reconcile_lines:
        assert line["controller"] == "logging-test"
        assert line["namespace"] == "ns"
        assert line["name"] == "obj"
        assert len(line["reconcile_id"]) == 12
        assert line["level"] in {"info", "error"}
        assert "timestamp" in line
    # Both lines of one reconcile share its id; the traceback is structured and has no locals.
    assert reconcile_lines[0]["reconcile_id"] == reconcile_lines[1]["reconcile_id"]
    failure = reconcile_lines[1]
    assert failure["exception"][0]["exc_type"] == "RuntimeError"
    assert secret_value not in json.dumps(lines)


def test_console_format_is_key_value(restore_logging: object, capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("console", "info")
    structlog.get_logger("test").info("hello", answer=42)
    line = capsys.readouterr().err.strip()
    assert "hello" in line
    assert "answer=42" in line
    assert not line.startswith("{")
