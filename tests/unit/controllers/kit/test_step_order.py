"""A kind's step order is data, checked when the pipeline is built: a step runs after those it reads."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic_settings import CliApp

from dbuser_operator.controllers.databaseuser import setup
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.kit.steps import Step, StepOrderError, check_order, flattened
from dbuser_operator.controllers.shared import Shared
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue
from dbuser_operator.settings import Settings


class Toy:
    def __init__(self, name: str, *after: str, steps: tuple[Step, ...] = ()) -> None:
        self.name = name
        self.after = after
        if steps:
            self.steps = list(steps)

    async def ensure(self, ctx: Any) -> None:
        """Nothing."""

    async def delete(self, ctx: Any) -> None:
        """Nothing."""


def test_a_step_after_those_it_reads_is_accepted() -> None:
    steps = [Toy("password"), Toy("hosts", steps=(Toy("ownership"), Toy("account", "password", "ownership")))]
    assert check_order(steps) == steps
    assert [step.name for step in flattened(steps)] == ["password", "hosts", "ownership", "account"]


@pytest.mark.parametrize(
    "steps",
    [
        [Toy("account", "password"), Toy("password")],  # before it
        [Toy("account", "password")],  # missing
        [Toy("hosts", steps=(Toy("account", "password"),)), Toy("password")],  # nested, before it
    ],
)
def test_a_step_before_one_it_reads_is_refused_naming_both(steps: list[Step]) -> None:
    with pytest.raises(StepOrderError, match="the account step must run after the password step"):
        check_order(steps)


def test_the_databaseuser_steps_are_in_an_order_they_accept() -> None:
    settings = CliApp.run(Settings, cli_args=[])
    shared = cast(
        Shared,
        SimpleNamespace(
            settings=settings,
            kube=object(),
            reader=object(),
            scope=Scope(settings.target_label, settings.target),
            guard=object(),
            policy=object(),
            secrets=object(),
            roles=object(),
            users=object(),
        ),
    )
    steps = setup.steps(shared, cast(Any, object()), cast(Any, object()), RateLimitingQueue[ObjectKey]("t"))
    names = [step.name for step in flattened(check_order(steps))]
    assert names.index("password") < names.index("account") < names.index("connection-secret")
    assert names.index("connection-secret") < names.index("rotation-discard")
    # spec.comment is refused before any account statement; the owner entry written once the account exists
    assert names.index("comment-check") < names.index("ownership")
    assert names.index("account") < names.index("account-metadata") < names.index("credentials")
    # A generated password is rotated on every host at once, before the connection Secret offers it.
    assert names.index("hosts") < names.index("rotation-schedule") < names.index("connection-secret")
    assert "rotation-schedule" not in [
        step.name for step in flattened(cast(Any, steps[names.index("hosts")]).steps)
    ]
    assert all(
        getattr(step, "after", None) is not None for step in flattened(steps) if step.name == "account"
    )
