"""The checking strategies (``neardup_scrapy.checking``): one interface, raw outcomes, the
policy applied by the runtime alone, imports that only go down, and the old import paths."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import make_crawler
from scrapy import Spider

from neardup_scrapy.checking.base import Checker, Outcome
from neardup_scrapy.checking.inline import InlineChecker
from neardup_scrapy.checking.process import ProcessChecker
from neardup_scrapy.checking.thread import ThreadChecker
from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.storage.base import StorageError
from neardup_scrapy.pages import html_tree
from neardup_scrapy.runtime import NeardupRuntime

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "neardup_scrapy"
#: modules above the strategies: the runtime, its policy and the Scrapy components
ABOVE = {"runtime", "policy", "mirrorskip", "middlewares", "extension", "pipelines", "urlrules", "addon"}


class _Spider(Spider):
    name = "checking"


def _imports(path: Path) -> set[str]:
    """The modules of ``neardup_scrapy`` a file imports (first part below the package), at any depth."""
    names: set[str] = set()
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                target = [*base, *(node.module or "").split(".")] if node.module else base
            else:
                target = (node.module or "").split(".")
            if target[:1] == ["neardup_scrapy"]:
                names.add(".".join(target[1:3]))
                names.update(f"{'.'.join(target[1:])}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(
                a.name.removeprefix("neardup_scrapy.")
                for a in node.names
                if a.name.startswith("neardup_scrapy")
            )
    return names


def test_the_strategies_import_nothing_above_them() -> None:
    files = sorted((PACKAGE / "checking").glob("*.py"))
    assert {f.stem for f in files} >= {"base", "inline", "thread", "process", "channel", "child"}
    for path in files:
        upward = {name for name in _imports(path) if name.split(".")[0] in ABOVE}
        assert not upward, (path.name, upward)
    # the runtime's collaborators do not import it back (no circle)
    for name in ("policy.py", "mirrorskip.py"):
        assert not {n for n in _imports(PACKAGE / name) if n.split(".")[0] == "runtime"}, name


def test_the_worker_process_loads_no_framework() -> None:
    code = (
        "import sys, neardup_scrapy.checking.child\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted', 'parsel'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "", result.stdout


@pytest.mark.parametrize("strategy", [InlineChecker, ThreadChecker, ProcessChecker])
def test_every_strategy_implements_the_whole_interface(strategy: type[Checker]) -> None:
    assert issubclass(strategy, Checker)
    assert not strategy.__abstractmethods__


class _FailingStore(NearDupDetector):
    def check(self, *args: Any, **kwargs: Any) -> Any:
        raise StorageError("the store is away")


def test_a_strategy_returns_a_store_failure_and_the_runtime_counts_it() -> None:
    crawler = make_crawler(_Spider, {"NEARDUP_WORKER": "inline"})
    runtime = NeardupRuntime.of(crawler)
    try:
        checker = InlineChecker(_FailingStore(), timeout=1.0, tree_of_text=html_tree)
        outcome = checker.check_html("http://a.test/p", "<p>" + "words of a page " * 30, 500, None, "")
        assert outcome.verdict is None and isinstance(outcome.error, StorageError)
        assert crawler.stats.get_value("neardup/storage_errors") is None  # the strategy counted nothing
        verdict = runtime._settle(outcome)
        assert (verdict.status, verdict.reason) == ("skipped", "storage error")
        assert crawler.stats.get_value("neardup/storage_errors") == 1
        assert crawler.stats.get_value("neardup/skipped/storage_error") == 1
        # any other error is a bug: skipped with reason "error", counted as such
        bug = runtime._settle(Outcome("http://a.test/q", error=KeyError("x")))
        assert (bug.status, bug.reason) == ("skipped", "error")
        assert crawler.stats.get_value("neardup/skipped/error") == 1
    finally:
        runtime.close()


def test_mirrors_in_an_outcome_reach_the_map_before_the_verdict_is_counted() -> None:
    crawler = make_crawler(_Spider, {"NEARDUP_WORKER": "inline"})
    runtime = NeardupRuntime.of(crawler)
    seen: list[str | None] = []
    runtime.on_page(lambda verdict: seen.append(runtime.mirror_of("http://b.test/x")))
    try:
        checker = InlineChecker(NearDupDetector(), timeout=1.0, tree_of_text=html_tree)
        outcome = checker.check_html("http://b.test/p", "<p>" + "words of a page " * 30, 500, None, "")
        assert outcome.verdict is not None
        runtime._settle(Outcome(outcome.url, verdict=outcome.verdict, mirrors={"b.test": "a.test"}))
        assert seen == ["a.test"] and crawler.stats.get_value("neardup/mirror_hosts") == 1
        checker.close()
    finally:
        runtime.close()


def test_the_old_import_paths_still_work() -> None:
    from neardup_scrapy import check_thread, worker
    from neardup_scrapy.checking import channel, child, frames, thread

    assert worker.DetectorWorker is channel.DetectorWorker
    assert (worker.WorkerError, worker.WorkerCallError) == (frames.WorkerError, frames.WorkerCallError)
    assert (worker.serve, worker._check) == (child.serve, child.check)
    assert check_thread.CheckThread is thread.CheckThread
    # `python -m neardup_scrapy.worker` still runs a worker: it answers until its input closes
    result = subprocess.run(
        [sys.executable, "-m", "neardup_scrapy.worker"],
        input=b"",
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
