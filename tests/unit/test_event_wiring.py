"""The operator's Event recorder yields to the DatabaseUser controller's own queue, and to nothing else."""

from __future__ import annotations

from typing import cast

from pydantic_settings import CliApp

from dbuser_operator.app import queue_and_recorder
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.settings import Settings


async def test_events_yield_while_users_are_queued_and_only_then() -> None:
    queue, recorder = queue_and_recorder(CliApp.run(Settings, cli_args=[]), cast(KubeClient, object()))
    assert recorder.yield_to is not None
    assert recorder.max_delay == 60.0
    assert not recorder.yield_to()  # nothing queued: Events go at once

    queue.add(ObjectKey("team-a", "app"))
    assert recorder.yield_to()  # a user waits for its reconcile: Normal Events wait too

    key = await queue.get()  # taken by a worker: being processed is not waiting
    assert not recorder.yield_to()
    queue.done(key)
    queue.add_after(ObjectKey("team-a", "later"), 30.0)  # a delayed requeue is not waiting either
    assert not recorder.yield_to()
    queue.shutdown()
