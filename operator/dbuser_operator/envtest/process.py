"""A server process with its output in a log file, started and stopped cleanly.

No server outlives the process that started it: one still running at exit (a fixture whose teardown never
ran) is stopped then (``atexit``), and :func:`stop_servers_on_sigterm` makes SIGTERM an interrupt, so that
the exit, and the teardowns, happen then too. Only SIGKILL of the test process can leave a server behind.
"""

from __future__ import annotations

import atexit
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

_running: set[subprocess.Popen[bytes]] = set()  # every server started here and not stopped yet
_running_lock = threading.Lock()

PORT_ATTEMPTS: Final = 3
"""Starts of a server on fresh ports when its port was taken between the probe and its bind."""


class ProcessFailedError(RuntimeError):
    """A server exited, or did not become ready in time; the message carries its log's last lines."""


class ManagedProcess:
    """One child process of a local test server, in its own session, logging to ``log_path``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The process id while it runs (of the final program, for a server in a root), else None."""
        return self._process.pid if self.running and self._process is not None else None

    def start(self) -> None:
        """Start the process; its stdout and stderr are appended to the log file."""
        if self.running:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"--- starting: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._process = subprocess.Popen(  # noqa: S603 - argv is built by this package, not a shell
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
            )
        with _running_lock:
            _running.add(self._process)

    def wait_ready(self, probe: Callable[[], bool], timeout: float, interval: float = 0.1) -> None:
        """Poll ``probe`` until it is true; raise :class:`ProcessFailedError` on exit or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running:
                raise ProcessFailedError(f"{self.name} exited during start-up:\n{self.log_tail()}")
            if probe():
                return
            time.sleep(interval)
        raise ProcessFailedError(f"{self.name} was not ready within {timeout:.0f} s:\n{self.log_tail()}")

    def start_ready(self, probe: Callable[[], bool], timeout: float) -> None:
        """:meth:`start`, then :meth:`wait_ready`; a process that is not ready in time is stopped before
        the error is raised (none is left running behind a failed start)."""
        self.start()
        try:
            self.wait_ready(probe, timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; waits for the exit."""
        process, self._process = self._process, None
        if process is not None:
            _terminate([process], timeout)

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets open but answers nothing (a hung server)."""
        if self._process is not None:
            self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self._process is not None:
            self._process.send_signal(signal.SIGCONT)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the log, for error messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def port_taken(error: ProcessFailedError) -> bool:
    """Whether a server failed to start because its port was taken (its log says so)."""
    return "address already in use" in str(error).lower()


def on_free_ports(
    start: Callable[[], None], repick: Callable[[], None], attempts: int = PORT_ATTEMPTS
) -> None:
    """``start`` a server (it raises :class:`ProcessFailedError`, the server stopped, when it does not come
    up); when its port was taken meanwhile — :func:`~.ports.free_port` only probes, and another process may
    bind the port before the server does —, ``repick`` its ports and start again, ``attempts`` times in all.
    """
    for attempt in range(1, attempts + 1):
        try:
            start()
        except ProcessFailedError as error:
            if attempt == attempts or not port_taken(error):
                raise
            repick()
        else:
            return


def _terminate(processes: list[subprocess.Popen[bytes]], timeout: float) -> None:
    """SIGTERM to each (a paused one is resumed, to hear it), SIGKILL to those still running after
    ``timeout`` seconds; waits for every exit."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.send_signal(signal.SIGCONT)
    for process in processes:
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        with _running_lock:
            _running.discard(process)


@atexit.register
def _stop_all_servers() -> None:
    """At exit, stop every server still running (its fixture never tore down)."""
    with _running_lock:
        left = list(_running)
    _terminate(left, timeout=10.0)


def stop_servers_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt in the main thread, as Ctrl-C does: the test run stops, tears
    down, and exits, stopping its servers (by default SIGTERM ends the process at once, and its servers,
    each in a session of its own, are left to init)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
