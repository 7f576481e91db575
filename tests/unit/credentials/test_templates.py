"""Connection-Secret templates: Jinja2's sandbox in a bounded worker process; hostile ones refused."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from dbuser_operator.credentials.templates import (
    WALL_CLOCK_FACTOR,
    TemplateError,
    TemplateRenderer,
    render_all,
)

VALUES = {
    "host": "db",
    "port": "3306",
    "username": "app",
    "password": "s3cr3t-Value",
    "database": "shop",
    "DATABASE_URL": "mysql://app:s3cr3t-Value@db:3306/shop",
    "JDBC_URL": "jdbc:mysql://db:3306/shop?user=app&password=s3cr3t-Value",
}
LIMIT = 4096


def test_renders_the_values() -> None:
    templates = {
        "GO_DSN": "{{ username }}:{{ password }}@tcp({{ host }}:{{ port }})/{{ database }}",
        "encoded": "{{ password | urlencode }}",
        "quoted": "{{ 'p@ss/w:rd?' | urlquote }}",
        "branch": "{% if database %}{{ database | upper }}{% else %}none{% endif %}",
    }
    assert render_all(templates, VALUES, LIMIT) == {
        "GO_DSN": "app:s3cr3t-Value@tcp(db:3306)/shop",
        "encoded": "s3cr3t-Value",
        "quoted": "p%40ss%2Fw%3Ard%3F",
        "branch": "SHOP",
    }


@pytest.mark.parametrize(
    ("template", "complaint"),
    [
        ("{{ ''.__class__ }}", "access to attribute '__class__' of 'str' object is unsafe"),
        ("{{ password.__class__.__mro__[1].__subclasses__() }}", "is unsafe"),
        ("{{ password|attr('__class__') }}", "is unsafe"),
        ("{{ password.__len__() }}", "is unsafe"),
        ("{{ cycler.__init__.__globals__ }}", "uses 'cycler'"),
        ("{{ range(10) }}", "uses 'range'"),
        ("{{ hots }}", "uses 'hots'"),
        ("{% if %}", "line 1: Expected an expression"),
        ("{{ 'x' * 1000000000 }}", "a repetition longer than 4096 characters"),
        ("{{ [1, 2] * 100000 }}", "a repetition longer than"),
        ("{{ (9 ** 999999) ** 999999 }}", "an exponent above"),
        (
            "{% for a in JDBC_URL %}{% for b in JDBC_URL %}{{ JDBC_URL }}{% endfor %}{% endfor %}",
            "renders more",
        ),
        ("{{ {}[password] }}", "failed to render (UndefinedError)"),
        ("{{ password + 1 }}", "failed to render (TypeError)"),
    ],
)
def test_hostile_templates_are_refused_without_the_values(template: str, complaint: str) -> None:
    with pytest.raises(TemplateError) as refused:
        render_all({"evil": template}, VALUES, LIMIT)
    message = str(refused.value)
    assert complaint in message
    assert "'evil'" in message
    assert not any(value in message for value in VALUES.values() if len(value) > 4)


async def test_the_worker_bounds_cpu_time_and_serves_on() -> None:
    renderer = TemplateRenderer(timeout=1.0)
    try:
        await renderer._start()  # a worker bounded by 1 s of CPU time per render
        endless = "{% for a in JDBC_URL %}" * 6 + "{% endfor %}" * 6
        # Bounded by 1 s of CPU time; on a machine so busy that the worker (at nice 10) gets less than a
        # tenth of a core, by the wall-clock backstop first: either way, bounded.
        with pytest.raises(TemplateError, match=r"took longer than (1 s of CPU time|10 s to render)"):
            await renderer.render({"endless": endless}, VALUES)
        # The renderer serves the next render (bounds no busy machine reaches: serving is the point).
        renderer.timeout = 30.0
        assert await renderer.render({"user": "{{ username }}!"}, VALUES) == {"user": "app!"}
        with pytest.raises(TemplateError, match="uses 'lipsum'"):
            await renderer.render({"x": "{{ lipsum }}"}, VALUES)
    finally:
        await renderer.close()


async def test_a_render_slowed_by_a_busy_machine_is_not_cut_short() -> None:
    """The bound is CPU time: a worker that gets no CPU for longer than the bound (here: stopped, as by a
    machine busy with other work) still renders an honest template."""
    renderer = TemplateRenderer(timeout=0.5)
    try:
        await renderer._start()  # a worker bounded by 0.5 s of CPU time per render
        renderer.timeout = 30.0  # and a wall-clock backstop no busy machine reaches (not what is tested)
        worker = renderer._worker
        assert worker is not None
        slow = "{% for a in 'x' * 40 %}{% for b in 'x' * 40 %}{{ a }}{% endfor %}{% endfor %}{{ username }}"
        os.kill(worker.pid, signal.SIGSTOP)
        rendering = asyncio.create_task(renderer.render({"slow": slow}, VALUES))
        await asyncio.sleep(1.0)  # twice the bound, of wall-clock time without CPU
        os.kill(worker.pid, signal.SIGCONT)
        assert (await rendering)["slow"].endswith("app")
    finally:
        await renderer.close()


async def test_a_worker_that_never_answers_is_killed_at_the_wall_clock_backstop() -> None:
    # The renders that must succeed get bounds no busy machine reaches; only the stuck one gets the short
    # backstop (the bound is read at each render, the worker's CPU limit when it starts).
    renderer = TemplateRenderer(timeout=30.0)
    try:
        await renderer.render({"warm": "{{ username }}"}, VALUES)
        worker = renderer._worker
        assert worker is not None
        os.kill(worker.pid, signal.SIGSTOP)  # stuck where the CPU timer cannot fire
        renderer.timeout = 0.1  # backstop: 0.1 s x WALL_CLOCK_FACTOR
        with pytest.raises(TemplateError, match=f"took longer than {0.1 * WALL_CLOCK_FACTOR:g} s to render"):
            await renderer.render({"user": "{{ username }}"}, VALUES)
        assert await worker.wait() == -signal.SIGKILL  # killed, and replaced:
        renderer.timeout = 30.0
        assert await renderer.render({"user": "{{ username }}"}, VALUES) == {"user": "app"}
    finally:
        await renderer.close()


async def test_the_worker_bounds_memory() -> None:
    renderer = TemplateRenderer(timeout=20.0, max_output=2**31, memory_limit=512 * 1024**2)
    try:
        with pytest.raises(TemplateError, match=r"memory|stopped"):
            await renderer.render({"huge": "{{ password * 150000000 }}"}, VALUES)  # 1.8 GB
        assert await renderer.render({"user": "{{ username }}"}, VALUES) == {"user": "app"}
    finally:
        await renderer.close()


async def test_no_templates_no_worker() -> None:
    renderer = TemplateRenderer()
    assert await renderer.render({}, VALUES) == {}
    assert renderer._worker is None
