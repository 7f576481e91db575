"""structlog configuration: JSON lines for machines (default), key-value lines for humans.

Every line of a reconcile carries controller, namespace, name and reconcile_id (bound as context
variables by the controller). Tracebacks never include local variables: they could hold secrets.
Standard-library loggers (kubernetes-asyncio, aiohttp, aiomysql) go through the same renderer.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog
from structlog.tracebacks import ExceptionDictTransformer

LogFormat = Literal["json", "console"]


def configure_logging(log_format: LogFormat = "json", level: str = "info") -> None:
    """Configure structlog and the standard library's root logger for the whole process."""
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor
    if log_format == "json":
        shared.append(structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)))
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiohttp.access", "kubernetes_asyncio"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
