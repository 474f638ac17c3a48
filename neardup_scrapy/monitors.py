"""A ready spidermon monitor suite for the near-duplicate detection (``pip install spidermon``).

Enable it with::

    SPIDERMON_ENABLED = True
    EXTENSIONS = {"spidermon.contrib.scrapy.extensions.Spidermon": 500}
    SPIDERMON_SPIDER_CLOSE_MONITORS = ["neardup_scrapy.monitors.NeardupMonitorSuite"]

At spider close the suite fails, each with the values in its message, when:

* the duplicate share (exact + near over checked pages: unique + exact + near) is over
  ``NEARDUP_MONITOR_MAX_DUPLICATE_SHARE`` (default 0.5);
* the skipped share (skipped over all pages) is over ``NEARDUP_MONITOR_MAX_SKIPPED_SHARE``
  (default 0.5);

It reads the ``neardup/*`` stats, which count what the closing summary and the report count:
``neardup/pages`` is ``unique + exact + near + skipped + revisits`` (a url fetched again is a
revisit, neither checked nor skipped); responses passed on untouched (not HTML, error statuses,
``dont_neardup``) are not pages.
* more pages than ``NEARDUP_MONITOR_MAX_STORAGE_ERRORS`` (default 0) passed unchecked because
  the index store failed.

The share checks pass when fewer than ``NEARDUP_MONITOR_MIN_PAGES`` pages (default 20) were
seen. The thresholds are validated at start-up with the other ``NEARDUP_*`` settings. A failed
suite sets the stat ``neardup/monitor/failed`` (the number of failed checks), logs the
failures, and runs the suite's usual spidermon actions (add yours in a subclass).
"""

from __future__ import annotations

from typing import Any

from spidermon import Monitor, MonitorSuite, monitors
from spidermon.core.actions import Action

from .config import MonitorThresholds, parse_settings

__all__ = ["NeardupMonitor", "NeardupMonitorFailed", "NeardupMonitorSuite"]


def _thresholds(crawler: Any) -> MonitorThresholds:
    runtime = getattr(crawler, "_neardup_runtime", None)
    config = getattr(runtime, "config", None)
    if config is not None:
        return config.monitor  # type: ignore[no-any-return]
    return parse_settings(crawler.settings).monitor


@monitors.name("neardup")
class NeardupMonitor(Monitor):  # type: ignore[misc]
    """Duplicate share, skipped share and storage errors of the near-duplicate detection."""

    def _values(self) -> tuple[MonitorThresholds, int, int, int, int, int]:
        stats = self.data.stats
        pages = int(stats.get("neardup/pages", 0))
        skipped = int(stats.get("neardup/skipped", 0))
        duplicates = int(stats.get("neardup/exact", 0)) + int(stats.get("neardup/near", 0))
        checked = duplicates + int(stats.get("neardup/unique", 0))
        errors = int(stats.get("neardup/storage_errors", 0))
        return _thresholds(self.data.crawler), pages, skipped, duplicates, checked, errors

    def _assert_share(
        self, part: int, whole: int, limit: float, setting: str, names: tuple[str, str]
    ) -> None:
        """``part / whole`` is at most ``limit`` (the value of ``setting``); ``names``: what the
        share and the whole are called in the message."""
        share = part / whole
        self.assertLessEqual(
            share,
            limit,
            msg=f"{names[0]} share {share:.1%} ({part} of {whole} {names[1]}) is over {setting} = {limit}",
        )

    @monitors.name("duplicate share")  # type: ignore[untyped-decorator]
    def test_duplicate_share(self) -> None:
        """Exact and near duplicates among the checked pages, at most NEARDUP_MONITOR_MAX_DUPLICATE_SHARE."""
        limits, pages, _skipped, duplicates, checked, _errors = self._values()
        if pages >= limits.min_pages and checked > 0:
            self._assert_share(
                duplicates,
                checked,
                limits.max_duplicate_share,
                "NEARDUP_MONITOR_MAX_DUPLICATE_SHARE",
                ("duplicate", "checked pages"),
            )

    @monitors.name("skipped share")  # type: ignore[untyped-decorator]
    def test_skipped_share(self) -> None:
        """Pages not checked (non-HTML, too large, errors...), at most NEARDUP_MONITOR_MAX_SKIPPED_SHARE."""
        limits, pages, skipped, _duplicates, _checked, _errors = self._values()
        if pages >= limits.min_pages and pages > 0:
            self._assert_share(
                skipped,
                pages,
                limits.max_skipped_share,
                "NEARDUP_MONITOR_MAX_SKIPPED_SHARE",
                ("skipped", "pages"),
            )

    @monitors.name("storage errors")  # type: ignore[untyped-decorator]
    def test_storage_errors(self) -> None:
        """Pages unchecked because the store failed, at most NEARDUP_MONITOR_MAX_STORAGE_ERRORS."""
        limits, _pages, _skipped, _duplicates, _checked, errors = self._values()
        self.assertLessEqual(
            errors,
            limits.max_storage_errors,
            msg=(
                f"{errors} pages passed unchecked because the index store failed (over "
                f"NEARDUP_MONITOR_MAX_STORAGE_ERRORS = {limits.max_storage_errors})"
            ),
        )

    @monitors.name("predicted duplicates rescheduled")  # type: ignore[untyped-decorator]
    def test_predicted_rescheduled(self) -> None:
        """Skipped requests scheduled again (a rule withdrawn, or the page they named never came)
        over requests skipped, at most NEARDUP_MONITOR_MAX_RESCHEDULED_SHARE: a higher share means
        the duplicate-url rules keep changing their mind, and bandwidth goes to fetching twice."""
        stats = self.data.stats
        limits = _thresholds(self.data.crawler)
        skipped = int(stats.get("neardup/skipped/predicted", 0))
        rescheduled = int(stats.get("neardup/predicted/rescheduled", 0))
        if skipped >= limits.min_pages and skipped > 0:
            self._assert_share(
                rescheduled,
                skipped,
                limits.max_rescheduled_share,
                "NEARDUP_MONITOR_MAX_RESCHEDULED_SHARE",
                ("rescheduled", "requests skipped as predicted duplicates"),
            )


class NeardupMonitorFailed(Action):  # type: ignore[misc]
    """Counts the failed checks in the ``neardup/monitor/failed`` stat."""

    def run_action(self) -> None:
        failed = len(self.result.monitors_failed_results)
        self.data.crawler.stats.set_value("neardup/monitor/failed", failed)


class NeardupMonitorSuite(MonitorSuite):  # type: ignore[misc]
    """The :class:`NeardupMonitor` checks, with :class:`NeardupMonitorFailed` on failure."""

    monitors = [NeardupMonitor]
    monitors_failed_actions = [NeardupMonitorFailed]
