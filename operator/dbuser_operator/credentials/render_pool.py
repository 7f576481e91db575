"""The render pool: template renders shared fairly between namespaces, and not repeated when nothing changed
(issue 28).

One render may take up to the renderer's time bound (2 s). When reconciles waited in line for one worker
process, 40 expensive templates in one namespace held every reconcile worker and kept an unrelated
namespace's plain DatabaseUser from Ready for 51 s. The design, and why:

- **A reconcile never waits in a line.** A render that can start at once (a worker process is free and its
  namespace has none in flight) is awaited by its reconcile: that reconcile's own cost, at most the time
  bound. Otherwise the render is queued and :class:`Pending` is raised: the reconcile ends at once, freeing
  its worker, and ``notify`` puts the resource back in the work queue when the render is done; that pass
  takes the outputs. So at most ``workers`` reconcile workers are ever held by renders, one per namespace,
  and a DatabaseUser without templates never reaches this class at all.
- **A small pool, one render in flight per namespace, round-robin.** ``workers`` worker processes (2: a
  second core's worth, and one flooding namespace can never hold them all); each namespace has a FIFO of
  queued renders, at most one per resource (a newer request replaces the queued one in place), and a free
  worker takes the next namespace in turn that has nothing in flight. One namespace's flood occupies one
  worker at most, so another namespace's render starts at once; with ``k`` namespaces flooding together a
  render waits for at most ``ceil(k / workers)`` renders of others (each at most the time bound, plus the
  restart of a worker killed at that bound).
- **Not rendered again when nothing changed.** A keyed BLAKE2b digest (a random key per process) of the
  templates and their inputs maps to a digest of what they rendered (an LRU of ``cache_size``). When the
  Secret already holds outputs whose digest matches, they are used as they are. Only digests stay in
  memory: a finished render's outputs wait for the reconcile that asked (taken once, dropped after
  ``result_ttl``), and a queued render's inputs are dropped as soon as it ran.

The worker processes are :class:`~dbuser_operator.credentials.templates.TemplateRenderer`: the sandbox, the
time bound and the output and memory bounds are theirs, unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import structlog

from dbuser_operator.credentials.templates import TemplateError, TemplateRenderer

log = structlog.get_logger(__name__)

DEFAULT_WORKERS: Final = 2  # worker processes: one namespace can hold one of them at most
DEFAULT_CACHE_SIZE: Final = 4096  # input digests remembered (about 100 bytes each)
DEFAULT_RESULT_TTL: Final = 60.0  # seconds a finished render's outputs wait for their reconcile


class Renderer(Protocol):
    """One worker: renders templates over values (a :class:`TemplateRenderer`)."""

    async def render(self, templates: Mapping[str, str], values: Mapping[str, str]) -> dict[str, str]: ...

    async def close(self) -> None: ...


class Pending(Exception):
    """The render is queued behind others; ``notify`` is called once it is done."""


@dataclass(eq=False)
class _Job:
    namespace: str
    owner: Hashable
    digest: bytes
    templates: dict[str, str]
    values: dict[str, str] = field(repr=False)
    notify: Callable[[], None]
    future: asyncio.Future[dict[str, str]]
    started: bool = False
    awaited: bool = False  # a reconcile awaits it: the outputs go to it, not to ``_done``


@dataclass
class _Done:
    digest: bytes
    at: float
    outputs: dict[str, str] | None = field(repr=False)
    error: TemplateError | None


class RenderPool:
    """Renders the templates of many resources over a small pool, fairly between namespaces."""

    def __init__(
        self,
        renderers: Sequence[Renderer] | None = None,
        *,
        workers: int = DEFAULT_WORKERS,
        cache_size: int = DEFAULT_CACHE_SIZE,
        result_ttl: float = DEFAULT_RESULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        pool: list[Renderer] = list(renderers or ())
        pool = pool or [TemplateRenderer() for _ in range(workers)]
        if not pool:
            raise ValueError("a RenderPool needs at least one renderer")
        self._all: tuple[Renderer, ...] = tuple(pool)
        self._idle: list[Renderer] = pool
        self._cache_size = cache_size
        self._result_ttl = result_ttl
        self._clock = clock
        self._key = secrets.token_bytes(32)
        self._queues: dict[str, OrderedDict[Hashable, _Job]] = {}  # per namespace, FIFO, one per owner
        self._rotation: deque[str] = deque()  # namespaces with queued jobs, in turn
        self._busy: set[str] = set()  # namespaces with a render in flight
        self._running: dict[Hashable, _Job] = {}
        self._done: dict[Hashable, _Done] = {}
        self._known: OrderedDict[bytes, bytes] = OrderedDict()  # input digest -> output digest
        self._tasks: set[asyncio.Task[None]] = set()
        self.renders = 0  # renders started (for tests and metrics)

    def digest(self, data: Mapping[str, str] | tuple[Mapping[str, str], Mapping[str, str]]) -> bytes:
        """A keyed digest of ``data``: nothing about a value can be learnt from it without the key."""
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), key=self._key, digest_size=32).digest()

    def queued(self, namespace: str) -> int:
        """Renders of ``namespace`` waiting for a worker."""
        return len(self._queues.get(namespace, ()))

    async def render(
        self,
        namespace: str,
        owner: Hashable,
        templates: Mapping[str, str],
        values: Mapping[str, str],
        *,
        current: Mapping[str, str] | None = None,
        notify: Callable[[], None] = lambda: None,
    ) -> dict[str, str]:
        """``templates`` rendered over ``values`` for the resource ``owner`` of ``namespace``.

        ``current``: what the Secret holds now for these keys, used as it is when the same templates over
        the same values rendered it. Raises :class:`Pending` when the render had to be queued (``notify`` is
        called when it is done: ask again then), :class:`TemplateError` when it cannot be rendered.
        """
        if not templates:
            return {}
        self._expire()
        digest = self.digest((templates, values))
        if current is not None and set(current) == set(templates) and self._remembered(digest, current):
            return dict(current)
        done = self._done.pop(owner, None)
        if done is not None and done.digest == digest:
            if done.error is not None:
                raise done.error
            return dict(done.outputs or {})
        job = self._running.get(owner)
        if job is None or job.digest != digest:
            job = self._submit(namespace, owner, digest, templates=templates, values=values, notify=notify)
        if not job.started:
            raise Pending(f"{self.queued(namespace)} render(s) of this namespace are queued")
        job.awaited = True
        return dict(await asyncio.shield(job.future))

    def _remembered(self, digest: bytes, outputs: Mapping[str, str]) -> bool:
        known = self._known.get(digest)
        if known is None or known != self.digest(outputs):
            return False
        self._known.move_to_end(digest)
        return True

    def _remember(self, digest: bytes, outputs: Mapping[str, str]) -> None:
        self._known[digest] = self.digest(outputs)
        self._known.move_to_end(digest)
        while len(self._known) > self._cache_size:
            self._known.popitem(last=False)

    def _expire(self) -> None:
        """Drop finished outputs nobody came for (their resource is gone, or changed meanwhile)."""
        limit = self._clock() - self._result_ttl
        for owner in [owner for owner, done in self._done.items() if done.at < limit]:
            del self._done[owner]

    def _submit(
        self,
        namespace: str,
        owner: Hashable,
        digest: bytes,
        *,
        templates: Mapping[str, str],
        values: Mapping[str, str],
        notify: Callable[[], None],
    ) -> _Job:
        queue = self._queues.get(namespace)
        if queue is None:
            queue = self._queues[namespace] = OrderedDict()
            self._rotation.append(namespace)
        job = queue.get(owner)
        if job is None or job.digest != digest:  # new, or replacing the queued one in its place
            future = asyncio.get_running_loop().create_future()
            job = _Job(namespace, owner, digest, dict(templates), dict(values), notify, future)
            queue[owner] = job
        self._dispatch()
        return job

    def _dispatch(self) -> None:
        """Start queued renders while a worker is free: the next namespace in turn with none in flight."""
        while self._idle:
            for _ in range(len(self._rotation)):
                namespace = self._rotation[0]
                self._rotation.rotate(-1)
                if namespace not in self._busy:
                    break
            else:
                return  # nothing queued, or every namespace with queued renders has one in flight
            queue = self._queues[namespace]
            owner, job = queue.popitem(last=False)
            if not queue:
                del self._queues[namespace]
                self._rotation.remove(namespace)
            job.started = True
            self._busy.add(namespace)
            self._running[owner] = job
            self.renders += 1
            task = asyncio.create_task(self._run(job, self._idle.pop()), name=f"render {namespace}")
            self._tasks.add(task)
            task.add_done_callback(self._finished)

    async def _run(self, job: _Job, renderer: Renderer) -> None:
        outputs: dict[str, str] | None = None
        error: TemplateError | None = None
        try:
            outputs = await renderer.render(job.templates, job.values)
        except TemplateError as failure:
            error = failure
        except asyncio.CancelledError:
            job.future.cancel()  # closing: a reconcile awaiting it stops too
            raise
        except Exception:  # a worker's own failure: the resource is told, the pool goes on
            log.exception("template render failed unexpectedly")
            error = TemplateError("the templates could not be rendered (the renderer failed)")
        finally:
            job.values = {}  # the inputs are not kept past the render
            self._idle.append(renderer)
            self._busy.discard(job.namespace)
            if self._running.get(job.owner) is job:
                del self._running[job.owner]
        if outputs is not None:
            self._remember(job.digest, outputs)
            job.future.set_result(outputs)
        else:
            job.future.set_exception(error or TemplateError("the templates could not be rendered"))
            job.future.exception()  # retrieved: its awaiter, if any, still gets it
        if not job.awaited:
            self._done[job.owner] = _Done(job.digest, self._clock(), outputs, error)
            job.notify()
        self._dispatch()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("template render task failed", exc_info=task.exception())

    async def close(self) -> None:
        """Cancel the renders in flight and stop every worker process."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._queues.clear()
        self._rotation.clear()
        self._done.clear()
        for renderer in self._all:
            await renderer.close()
