"""What every way of checking a page provides, and what a check gives back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

    from neardup_scrapy.core import NearDupDetector, Verdict

__all__ = ["Checker", "Outcome"]


@dataclass(slots=True)
class Outcome:
    """The raw result of checking (or skipping) one page, before any policy is applied; read,
    never changed (not frozen: a frozen dataclass takes twice as long to make, once per page).

    Attributes:
        url: the page's url.
        verdict: the index's verdict; ``None`` when ``error`` is set.
        error: why there is no verdict: a :class:`~neardup_scrapy.core.storage.base.StorageError`
            (the store failed, or the worker process died) or any other exception (a bug).
        mirrors: the index's whole map of mirror hosts (``{mirror host: origin host}``) when it
            changed since the last outcome that carried one; ``None`` otherwise.
    """

    url: str
    verdict: Verdict | None = None
    error: BaseException | None = None
    mirrors: dict[str, str] | None = None


class Checker(ABC):
    """One way of checking pages: it owns the page index and answers with raw outcomes.

    A checker never counts, tags or decides what an error means; it raises only where a
    method says so. ``timeout`` arguments are the seconds a call may wait for the index (the
    runtime's ``REPORT_TIMEOUT``).
    """

    @property
    @abstractmethod
    def detector(self) -> NearDupDetector | None:
        """The page index when it lives in this process (``None`` in a worker process)."""

    @abstractmethod
    def describe(self) -> str:
        """How pages are checked, for the start-up log line (``"inline"``, ``"process (pid 12)"``)."""

    @abstractmethod
    def check_html(
        self, url: str, text: str, nbytes: int, tree: Callable[[], Any] | None, canonical: str
    ) -> Outcome | Deferred[Outcome]:
        """Check an HTML page (arguments as :meth:`NeardupRuntime.check_page
        <neardup_scrapy.runtime.NeardupRuntime.check_page>`); never raises, and a Deferred
        never fails."""

    @abstractmethod
    def record_skip(self, url: str, reason: str) -> Outcome | None:
        """Count a page in the index as skipped without checking it; ``None`` when the skip was
        handed over to where the index lives (nothing comes back: the caller makes the verdict)."""

    @abstractmethod
    def mirrors_at_open(self) -> dict[str, str] | None:
        """The index's map of mirror hosts as it was opened (a resumed or shared index names
        some before the first page); ``None`` when it was given out already."""

    @abstractmethod
    def exchange_url_rules(self, writer: str, state: bytes | None, timeout: float) -> list[bytes]:
        """Save ``writer``'s duplicate-url rules with the index and return every other writer's
        (waits here). Raises what the index raises."""

    @abstractmethod
    def exchange_url_rules_later(self, writer: str, state: bytes | None) -> Deferred[list[bytes]]:
        """:meth:`exchange_url_rules` where the index lives; the Deferred fires (or fails) in the
        reactor's thread."""

    @abstractmethod
    def surviving_mirrors(
        self, unseen: dict[str, int], timeout: float
    ) -> tuple[dict[str, str], dict[str, str] | None]:
        """The hosts of ``unseen`` whose claim holds (see :meth:`NearDupDetector.surviving_mirrors
        <neardup_scrapy.core.NearDupDetector.surviving_mirrors>`), and the map of mirror hosts
        read afresh when it changed (else ``None``). Raises what the index raises."""

    @abstractmethod
    def report(self, options: dict[str, int], timeout: float) -> dict[str, Any]:
        """The index's report (``options``: its keyword arguments). Raises what the index raises."""

    @abstractmethod
    def cluster_rows(self, timeout: float) -> list[dict[str, Any]]:
        """Every cluster of the page index, every member. Raises what the index raises."""

    @abstractmethod
    def stop_growing(self) -> None:
        """The spider closed: start no helper (thread, new worker process) from now on."""

    @abstractmethod
    def close(self, timeout: float) -> list[Exception]:
        """Close the index and stop any helper (idempotent); the errors met on the way."""
