"""User templates of the connection Secret, rendered by Jinja2's sandbox in a worker process.

Jinja2's ``SandboxedEnvironment`` refuses attribute access to internals (``''.__class__``) and bounds
``range``, but not the work a template does: nested loops, huge repetitions (``'x' * 10**9``) or
``10**10**10`` would stall or exhaust the operator. So the templates are rendered in a separate process,
limited in memory (``RLIMIT_AS``) and in time (it is killed and replaced when a render takes too long), and
each output is bounded in size. The time bound is CPU time (``ITIMER_VIRTUAL`` in the worker), so a busy
machine does not turn an honest template into an invalid one; a wall-clock backstop many times longer kills
a worker stuck where the timer cannot interrupt it. The worker runs at a low CPU priority (``nice``):
renders take what CPU the operator's control loop, the API server and MySQL leave. Names a template uses
are checked before rendering: only the connection values exist (``StrictUndefined``).

A failure is a :class:`TemplateError` whose message never holds a value: syntax and security errors say
what the template did (they are about its text), any other error says only its kind, since its message
could quote a credential.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

DEFAULT_TIMEOUT: Final = 2.0  # seconds of CPU time a render may take
WALL_CLOCK_FACTOR: Final = 10  # the backstop: a render is killed after this many times its CPU bound
NICENESS: Final = 10  # the worker's CPU priority below the operator's
DEFAULT_MAX_OUTPUT: Final = 64 * 1024  # characters of one rendered key (a Secret holds at most 1 MiB)
DEFAULT_MEMORY_LIMIT: Final = (
    256 * 1024**2
)  # bytes of address space of the worker (it starts at about 32 MiB)
MAX_EXPONENT: Final = 1024
START_TIMEOUT: Final = 60.0  # seconds the worker may take to start (imports, on a loaded machine)


class TemplateError(Exception):
    """A template cannot be rendered; the message is safe to show (it never holds a value)."""


def check_names(templates: Mapping[str, str], names: frozenset[str]) -> None:
    """Refuse, before rendering, a template that does not parse or names a variable that does not exist.
    Run it in the worker process too: even parsing a hostile template can take long."""
    from jinja2 import TemplateSyntaxError, nodes  # noqa: PLC0415 - jinja2 is imported where it renders
    from jinja2.sandbox import SandboxedEnvironment  # noqa: PLC0415

    environment = SandboxedEnvironment()
    for key, source in templates.items():
        try:
            # The names read minus those the template sets (jinja2.meta would fold constants: 'x' * 10**9).
            found = list(environment.parse(source).find_all(nodes.Name))
            read = {name.name for name in found if name.ctx == "load"}
            unknown = sorted(read - {name.name for name in found if name.ctx != "load"} - names)
        except TemplateSyntaxError as error:
            raise TemplateError(f"template {key!r}, line {error.lineno}: {error.message}") from None
        if unknown:
            allowed = ", ".join(sorted(names))
            raise TemplateError(
                f"template {key!r} uses {', '.join(map(repr, unknown))}; it may use {allowed}"
            )


def render_all(templates: Mapping[str, str], values: Mapping[str, str], max_output: int) -> dict[str, str]:
    """Render each template over ``values`` in Jinja2's sandbox, each output at most ``max_output``
    characters (run in the worker process: it bounds memory and time)."""
    from jinja2 import StrictUndefined, TemplateSyntaxError  # noqa: PLC0415
    from jinja2.exceptions import SecurityError  # noqa: PLC0415
    from jinja2.runtime import Context  # noqa: PLC0415
    from jinja2.sandbox import SandboxedEnvironment  # noqa: PLC0415

    class BoundedSandbox(SandboxedEnvironment):
        """The sandbox, refusing at once a repetition longer than an output may be, and huge powers
        (intercepted operators are also never folded into constants when the template compiles)."""

        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for sequence, times in ((left, right), (right, left)):
                    sized = isinstance(sequence, str | list | tuple) and isinstance(times, int)
                    if sized and len(sequence) * times > max_output:
                        raise TemplateError(f"a repetition longer than {max_output} characters")
            if operator == "**" and isinstance(right, int) and abs(right) > MAX_EXPONENT:
                raise TemplateError(f"an exponent above {MAX_EXPONENT}")
            return super().call_binop(context, operator, left, right)

    check_names(templates, frozenset(values))
    environment = BoundedSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    # Every reserved character percent-encoded, "/" too (Jinja2's urlencode leaves it): for URL parts.
    environment.filters["urlquote"] = lambda value: quote(str(value), safe="")
    rendered: dict[str, str] = {}
    for key, source in templates.items():
        size, parts = 0, []
        try:
            for part in environment.from_string(source).generate(values):
                size += len(part)
                if size > max_output:
                    raise TemplateError(f"it renders more than {max_output} characters")
                parts.append(part)
        except TemplateError as error:
            raise TemplateError(f"template {key!r} is not allowed: {error}") from None
        except SecurityError as error:
            raise TemplateError(f"template {key!r} is not allowed: {error}") from None
        except TemplateSyntaxError as error:
            raise TemplateError(f"template {key!r}, line {error.lineno}: {error.message}") from None
        except MemoryError:
            raise TemplateError(f"template {key!r} needs too much memory") from None
        except Exception as error:  # its message may quote a value: only the kind is told
            raise TemplateError(f"template {key!r} failed to render ({type(error).__name__})") from None
        rendered[key] = "".join(parts)
    return rendered


class _OutOfTime(BaseException):
    """The render used up its CPU time (a BaseException: no ``except Exception`` of a template catches it)."""


def _out_of_time(signum: int, frame: object) -> None:
    raise _OutOfTime


def serve(max_output: int, memory_limit: int, cpu_limit: float = DEFAULT_TIMEOUT) -> None:
    """The worker process's loop: one JSON request per line on stdin (templates and values), one JSON
    answer per line on stdout: ``{"ok": outputs}`` or ``{"error": message}``; an empty request is a ping.
    Each render may use ``cpu_limit`` seconds of CPU time."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as oom:
        oom.write("1000")  # under the pod's memory limit, the kernel ends this process, not the operator
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    signal.signal(signal.SIGVTALRM, _out_of_time)
    for line in sys.stdin:
        answer: dict[str, Any]
        try:
            request = json.loads(line)
            signal.setitimer(signal.ITIMER_VIRTUAL, cpu_limit)
            try:
                outputs = render_all(request["templates"], request["values"], max_output) if request else {}
            finally:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
            answer = {"ok": outputs}
        except TemplateError as error:
            answer = {"error": str(error)}
        except MemoryError:
            answer = {"error": "the templates need too much memory"}
        except _OutOfTime:
            answer = {"error": f"the templates took longer than {cpu_limit:g} s of CPU time to render"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


class TemplateRenderer:
    """Renders templates in a worker process it starts on first use and replaces when a render times out.

    Its renders are serialised: a hostile template holds the others back for ``timeout`` seconds of CPU
    time (and ``timeout * WALL_CLOCK_FACTOR`` of wall-clock time) at most. The operator
    renders through :class:`~dbuser_operator.credentials.render_pool.RenderPool`, a small pool of
    these shared fairly between namespaces.
    """

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_output: int = DEFAULT_MAX_OUTPUT,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
    ) -> None:
        self.timeout = timeout
        self.max_output = max_output
        self.memory_limit = memory_limit
        self._lock = asyncio.Lock()
        self._worker: asyncio.subprocess.Process | None = None

    async def render(self, templates: Mapping[str, str], values: Mapping[str, str]) -> dict[str, str]:
        """Every template rendered over ``values``; :class:`TemplateError` if one cannot be."""
        if not templates:
            return {}
        async with self._lock:
            worker = self._worker or await self._start()
            try:
                async with asyncio.timeout(self.timeout * WALL_CLOCK_FACTOR):
                    answer = await _ask(worker, {"templates": dict(templates), "values": dict(values)})
            except TimeoutError:
                await self._stop()
                wall = self.timeout * WALL_CLOCK_FACTOR
                raise TemplateError(f"the templates took longer than {wall:g} s to render") from None
            except (EOFError, OSError, ValueError):  # the worker died (e.g. at its memory limit)
                await self._stop()
                raise TemplateError("the templates could not be rendered (the renderer stopped)") from None
        if "error" in answer:
            raise TemplateError(str(answer["error"]))
        return {str(key): str(value) for key, value in answer["ok"].items()}

    async def close(self) -> None:
        """Stop the worker process."""
        async with self._lock:
            await self._stop()

    async def _start(self) -> asyncio.subprocess.Process:
        command = (
            "from dbuser_operator.credentials.templates import serve; "
            f"serve({self.max_output:d}, {self.memory_limit:d}, {self.timeout!r})"
        )
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,  # nothing it could say about a template leaves it
            limit=_LINE_LIMIT,
        )
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await _ask(worker, {})
        except (TimeoutError, EOFError, OSError, ValueError):
            await _end(worker)
            raise TemplateError("the template renderer did not start") from None
        self._worker = worker
        return worker

    async def _stop(self) -> None:
        if self._worker is not None:
            worker, self._worker = self._worker, None
            await _end(worker)


_LINE_LIMIT: Final = 16 * 1024**2  # bytes of one answer line: every output of a Secret, JSON-escaped


async def _ask(worker: asyncio.subprocess.Process, request: Mapping[str, Any]) -> dict[str, Any]:
    """Send one request line; the answer line, parsed."""
    if worker.stdin is None or worker.stdout is None:
        raise OSError("the renderer has no pipes")
    worker.stdin.write(json.dumps(request).encode() + b"\n")
    await worker.stdin.drain()
    line = await worker.stdout.readline()
    if not line:
        raise EOFError("the renderer ended")
    answer: dict[str, Any] = json.loads(line)
    return answer


async def _end(worker: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        worker.kill()
    await worker.wait()
