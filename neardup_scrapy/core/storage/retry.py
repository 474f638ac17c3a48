"""Retry with exponential backoff for stores that talk to a server (Redis).

A store wraps each round trip in :func:`call_with_retry`: transient errors (connection lost,
timeout, server loading) are retried ``attempts - 1`` times with delays ``base``, ``2 * base``,
``4 * base``... (capped at ``max_delay``), then a :class:`~.base.StorageError` is raised with the
last error chained, so the detector's caller applies its error policy once per page instead of
seeing a driver traceback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .base import StorageError

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a failing round trip.

    Attributes:
        attempts: total tries (1 = no retry).
        base_delay: seconds before the first retry; doubled before each further one.
        max_delay: cap of a single delay.
    """

    attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be >= 1")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy delays must be >= 0")

    def delays(self) -> list[float]:
        """The sleeps between tries (``attempts - 1`` of them)."""
        return [min(self.base_delay * (2**i), self.max_delay) for i in range(self.attempts - 1)]


def call_with_retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    transient: tuple[type[BaseException], ...],
    what: str,
    *,
    on_retry: Callable[[BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    said: Callable[[BaseException], str] = str,
) -> T:
    """Call ``fn``; retry on ``transient`` errors with backoff, then raise :class:`StorageError`.

    Args:
        fn: the round trip (must be safe to repeat: stores make their writes idempotent).
        policy: attempts and delays.
        transient: exception types worth retrying; anything else propagates at once.
        what: short description for the log and the error message (no secrets).
        on_retry: called with the error before each retry (e.g. to reset a connection pool).
        sleep: the sleep function (tests replace it).
        said: an error's message as logged and raised (a store removes its url's secrets).

    Raises:
        StorageError: every attempt failed with a transient error.
    """
    delays = policy.delays()
    for attempt in range(policy.attempts):
        try:
            return fn()
        except transient as exc:
            if attempt >= len(delays):
                raise StorageError(f"{what} failed after {policy.attempts} attempt(s): {said(exc)}") from exc
            delay = delays[attempt]
            logger.warning(
                "neardup: %s failed (%s); retry %d/%d in %.2fs",
                what,
                said(exc),
                attempt + 1,
                len(delays),
                delay,
            )
            if on_retry is not None:
                on_retry(exc)
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


#: Seconds the report and the exports at the end of a crawl wait for a failing store (Redis
#: down, a Redis Cluster failover) to answer again before they give up.
CLOSE_PATIENCE = 30.0
#: Seconds between tries while waiting (a store in its spell between probes fails at once).
_PATIENT_STEP = 0.25


def call_patiently(
    fn: Callable[[], T],
    patience: float,
    what: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Call ``fn``; while it raises :class:`StorageError`, try again for up to ``patience`` seconds.

    For what a crawl must not lose to a short outage, such as the report at its end: the pages
    passed unchecked while the store failed, but the report covers the whole index once the
    store answers again. Logs one WARNING when it starts waiting and one when the wait ends.

    Raises:
        StorageError: the last failure, when the store still fails after ``patience`` seconds.
    """
    deadline = clock() + patience
    waited: StorageError | None = None
    started = clock()
    while True:
        try:
            result = fn()
        except StorageError as exc:
            if clock() >= deadline:
                raise
            if waited is None:
                logger.warning(
                    "neardup: the index store fails (%s); waiting up to %.0f s for it to answer to build %s",
                    exc,
                    patience,
                    what,
                )
            waited = exc
            sleep(max(0.0, min(_PATIENT_STEP, deadline - clock())))
            continue
        if waited is not None:
            logger.warning(
                "neardup: the index store answers again after %.1f s; %s is built", clock() - started, what
            )
        return result
