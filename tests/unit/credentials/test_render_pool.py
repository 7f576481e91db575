"""RenderPool: renders shared fairly between namespaces, queued renders never hold a reconcile, unchanged
inputs not rendered again, and nothing but digests kept."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from functools import partial

import pytest

from dbuser_operator.credentials.render_pool import Pending, RenderPool
from dbuser_operator.credentials.templates import TemplateError, TemplateRenderer


class Gates(dict[str, asyncio.Event]):
    """When each render (by its ``who``) may finish: those named ``held`` wait for :meth:`release`."""

    def __init__(self, *held: str) -> None:
        super().__init__()
        self.held = set(held)

    def __missing__(self, who: str) -> asyncio.Event:
        self[who] = asyncio.Event()
        if who not in self.held:
            self[who].set()
        return self[who]

    def release(self, *whos: str) -> None:
        for who in whos:
            self[who].set()


class Gated:
    """A renderer whose renders finish when the test says so; it records what it started, in order."""

    def __init__(self, log: list[str], gates: Gates | None = None) -> None:
        self.log = log
        self.gates = gates if gates is not None else Gates()
        self.closed = False

    async def render(self, templates: Mapping[str, str], values: Mapping[str, str]) -> dict[str, str]:
        self.log.append(values["who"])
        await self.gates[values["who"]].wait()
        if "fail" in templates:
            raise TemplateError("template 'fail' failed to render (ZeroDivisionError)")
        return {key: f"{source}:{values['who']}" for key, source in templates.items()}

    async def close(self) -> None:
        self.closed = True


TEMPLATES = {"t": "tpl"}


def values(who: str) -> dict[str, str]:
    return {"who": who, "password": f"pw-{who}"}


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def gated_pool(size: int, *held: str) -> tuple[RenderPool, list[str], Gates]:
    """A RenderPool over ``size`` gated renderers: the log of what they started, and the gates."""
    log: list[str] = []
    gates = Gates(*held)
    renderers = [Gated(log, gates) for _ in range(size)]
    return RenderPool(renderers), log, gates


async def test_a_flood_holds_one_worker_and_another_namespace_renders_at_once() -> None:
    noisy_names = [f"n{n}" for n in range(10)]
    pool, log, gates = gated_pool(2, *noisy_names)
    notified: list[str] = []
    # The flood's first render starts at once and its reconcile awaits it; the rest are queued.
    head = asyncio.create_task(pool.render("noisy", "n0", TEMPLATES, values("n0")))
    await settle()
    for name in noisy_names[1:]:
        with pytest.raises(Pending):
            await pool.render("noisy", name, TEMPLATES, values(name), notify=partial(notified.append, name))
    assert pool.queued("noisy") == 9
    # The quiet namespace's render starts on the other worker at once: no Pending.
    assert await pool.render("quiet", "q0", TEMPLATES, values("q0")) == {"t": "tpl:q0"}
    await settle()
    assert log == ["n0", "q0"]  # one in flight for the noisy namespace, though a worker is idle
    gates.release("n0")
    assert await head == {"t": "tpl:n0"}
    await settle()
    assert log == ["n0", "q0", "n1"]
    assert notified == []
    gates.release(*noisy_names)
    for _ in range(10):
        await settle()
    assert notified == noisy_names[1:]  # in order, one at a time
    await pool.close()
    assert all(renderer.closed for renderer in pool._all)  # type: ignore[attr-defined]


async def test_namespaces_take_turns() -> None:
    pool, log, gates = gated_pool(1, "x0", "a1", "a2", "a3", "b1", "b2", "c1")
    busy = asyncio.create_task(pool.render("x", "x0", TEMPLATES, values("x0")))
    await settle()
    for namespace, owner in (("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("b", "b2"), ("c", "c1")):
        with pytest.raises(Pending):
            await pool.render(namespace, owner, TEMPLATES, values(owner))
    gates.release("x0", "a1", "a2", "a3", "b1", "b2", "c1")
    for _ in range(10):
        await settle()
    await busy
    assert log == ["x0", "a1", "b1", "c1", "a2", "b2", "a3"]
    await pool.close()


async def test_a_queued_render_notifies_and_its_next_pass_takes_the_outputs_once() -> None:
    pool, _, gates = gated_pool(1, "x0")
    blocker = asyncio.create_task(pool.render("x", "x0", TEMPLATES, values("x0")))
    await settle()
    notified: list[str] = []
    with pytest.raises(Pending):
        await pool.render("a", "a1", TEMPLATES, values("a1"), notify=lambda: notified.append("a1"))
    gates.release("x0")
    await blocker
    await settle()
    assert notified == ["a1"]
    assert await pool.render("a", "a1", TEMPLATES, values("a1")) == {"t": "tpl:a1"}
    assert pool.renders == 2
    # With the Secret holding those outputs, the same inputs are not rendered again.
    assert await pool.render("a", "a1", TEMPLATES, values("a1"), current={"t": "tpl:a1"}) == {"t": "tpl:a1"}
    assert pool.renders == 2
    await pool.close()


async def test_changed_inputs_or_a_changed_secret_are_rendered_again() -> None:
    pool, _, _ = gated_pool(1)
    assert await pool.render("a", "a1", TEMPLATES, values("a1")) == {"t": "tpl:a1"}
    for current, inputs in (
        ({"t": "edited by hand"}, values("a1")),  # the Secret changed: rendered again
        ({"t": "tpl:a1"}, {**values("a1"), "password": "new"}),  # a new password: rendered again
        ({"t": "tpl:a1"}, values("a1")),  # nothing changed: not rendered
        ({}, values("a1")),  # the Secret lacks the key: rendered again
    ):
        await pool.render("a", "a1", TEMPLATES, inputs, current=current)
    assert pool.renders == 4
    await pool.close()


async def test_a_newer_request_replaces_the_queued_one_in_place() -> None:
    pool, log, gates = gated_pool(1, "x0")
    blocker = asyncio.create_task(pool.render("x", "x0", TEMPLATES, values("x0")))
    await settle()
    for who in ("old", "new"):
        with pytest.raises(Pending):
            await pool.render("a", "a1", TEMPLATES, values(who))
    assert pool.queued("a") == 1
    gates.release("x0")
    await blocker
    await settle()
    assert log == ["x0", "new"]
    await pool.close()


async def test_a_failure_reaches_the_resource_that_asked_and_the_pool_goes_on() -> None:
    pool, _, _ = gated_pool(1)
    with pytest.raises(TemplateError, match="ZeroDivisionError"):
        await pool.render("a", "a1", {"fail": "x"}, values("a1"))
    assert await pool.render("a", "a1", TEMPLATES, values("a1")) == {"t": "tpl:a1"}
    await pool.close()


async def test_finished_outputs_nobody_took_expire_and_only_digests_stay() -> None:
    now = [0.0]
    log: list[str] = []
    gates = Gates("x0")
    pool = RenderPool([Gated(log, gates)], result_ttl=10.0, clock=lambda: now[0])
    blocker = asyncio.create_task(pool.render("x", "x0", TEMPLATES, values("x0")))
    await settle()
    with pytest.raises(Pending):
        await pool.render("a", "a1", TEMPLATES, values("a1"))
    gates.release("x0")
    await blocker
    await settle()
    state = repr(vars(pool))
    assert "pw-x0" not in state  # taken by its reconcile: not kept
    now[0] = 11.0
    await pool.render("a", "a1", TEMPLATES, values("a1"))  # its outputs expired: rendered again
    assert pool.renders == 3
    assert "pw-a1" not in repr(vars(pool))
    await pool.close()


async def test_no_templates_never_reach_the_pool() -> None:
    pool, log, _ = gated_pool(1)
    assert await pool.render("a", "a1", {}, values("a1")) == {}
    assert pool.renders == 0
    assert log == []


async def test_with_real_workers_a_slow_namespace_leaves_the_other_worker_free() -> None:
    pool = RenderPool([TemplateRenderer(), TemplateRenderer()])
    slow = ("{% for a in '" + "x" * 60 + "' %}") * 4 + "{% endfor %}" * 4 + "{{ who }}"
    loop = asyncio.get_running_loop()
    try:
        # Both worker processes started (two namespaces at once).
        await asyncio.gather(*(pool.render(n, n, {"t": "{{ who }}"}, values(n)) for n in ("w1", "w2")))
        noisy = asyncio.create_task(pool.render("noisy", "n0", {"t": slow}, values("n0")))
        await asyncio.sleep(0.05)
        with pytest.raises(Pending):
            await pool.render("noisy", "n1", {"t": slow}, values("n1"))
        started = loop.time()
        assert await pool.render("quiet", "q0", {"t": "{{ who }}"}, values("q0")) == {"t": "q0"}
        quiet = loop.time() - started
        assert await noisy == {"t": "n0"}
        assert quiet < (loop.time() - started) / 2, quiet
    finally:
        await pool.close()
