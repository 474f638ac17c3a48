"""Run one real Scrapy crawl in a subprocess and collect what it produced.

The Twisted reactor cannot be restarted, so each crawl gets its own Python process:
:func:`run_crawl` (pytest side) writes a spec, runs ``python tests/e2e_crawl.py SPEC`` and reads
back the items, the stats, the ``duplicate_found`` signals, the errback failures and the log.
The subprocess side (:func:`main`) runs the crawl with ``CrawlerProcess`` and the default
reactor settings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass
class CrawlResult:
    """What a crawl produced."""

    returncode: int
    items: list[dict[str, Any]]
    stats: dict[str, Any]
    signals: list[dict[str, Any]]
    errbacks: list[dict[str, Any]]
    log: str
    out: Path

    @property
    def order(self) -> list[str]:
        """Response urls in the order neardup saw them (needs ``e2e_spiders.OrderRecorder``)."""
        path = self.out / "order.txt"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def stat(self, key: str, default: Any = 0) -> Any:
        return self.stats.get(key, default)

    def by_url(self) -> dict[str, dict[str, Any]]:
        return {item["url"]: item for item in self.items}


def run_crawl(
    spider: str = "LinkSpider",
    settings: dict[str, Any] | None = None,
    timeout: float = 120,
    python: str | None = None,
    **spider_args: Any,
) -> CrawlResult:
    """Run ``spider`` (a class of ``tests/e2e_spiders.py``) with ``settings`` in a subprocess."""
    out = Path(tempfile.mkdtemp(prefix="neardup-e2e-"))
    spec = {"spider": spider, "spider_args": spider_args, "settings": settings or {}, "out": str(out)}
    (out / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [
            python or os.environ.get("NEARDUP_E2E_PYTHON") or sys.executable,
            str(HERE / "e2e_crawl.py"),
            str(out / "spec.json"),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=str(out),
        check=False,
    )
    log = proc.stderr + proc.stdout

    def lines(name: str) -> list[dict[str, Any]]:
        path = out / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    stats_path = out / "stats.json"
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    return CrawlResult(
        proc.returncode,
        lines("items.jsonl"),
        stats,
        lines("signals.jsonl"),
        lines("errbacks.jsonl"),
        log,
        out,
    )


def main(spec_path: str) -> int:
    """Subprocess side: run the crawl described by the spec file."""
    sys.path.insert(0, str(HERE))
    import e2e_spiders
    from itemadapter import ItemAdapter
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    from neardup_scrapy.signals import duplicate_found

    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["out"])
    settings = {
        "LOG_LEVEL": "DEBUG",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "HTTPCACHE_ENABLED": False,
        "RETRY_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 30,
        "ADDONS": {"neardup_scrapy.Addon": 100},
    }
    settings.update(spec["settings"])
    settings["E2E_OUT"] = str(out)
    process = CrawlerProcess(settings)
    spidercls = getattr(e2e_spiders, spec["spider"])
    crawler = process.create_crawler(spidercls)
    items = (out / "items.jsonl").open("w")
    sigs = (out / "signals.jsonl").open("w")

    def item_scraped(item: Any) -> None:
        items.write(json.dumps(ItemAdapter(item).asdict(), default=str) + "\n")
        items.flush()

    def on_duplicate(verdict: Any, response: Any = None, item: Any = None) -> None:
        sigs.write(
            json.dumps(
                {
                    "url": verdict.url,
                    "status": verdict.status,
                    "duplicate_of": verdict.duplicate_of,
                    "response": response is not None,
                    "item": item is not None,
                }
            )
            + "\n"
        )

    def spider_closed(reason: str) -> None:
        crawler._e2e_reason = reason  # type: ignore[attr-defined]

    def write_stats() -> None:
        # engine_stopped comes after every spider_closed handler (the neardup extension's too).
        stats = dict(crawler.stats.get_stats())
        stats["_finish_reason_"] = getattr(crawler, "_e2e_reason", None)
        (out / "stats.json").write_text(json.dumps(stats, default=str, indent=1))

    crawler.signals.connect(item_scraped, signal=signals.item_scraped)
    crawler.signals.connect(on_duplicate, signal=duplicate_found)
    crawler.signals.connect(spider_closed, signal=signals.spider_closed)
    crawler.signals.connect(write_stats, signal=signals.engine_stopped)
    failures: list[Any] = []

    def failed(failure: Any) -> None:
        failures.append(failure)
        failure.printTraceback(file=sys.stderr)

    deferred = process.crawl(crawler, **spec["spider_args"])
    deferred.addErrback(failed)
    process.start()
    items.close()
    sigs.close()
    return 1 if failures or getattr(process, "bootstrap_failed", False) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))


def make_crawler(spidercls: type, settings: dict[str, Any] | None = None) -> Any:
    """``scrapy.utils.test.get_crawler`` that also works without pytest-twisted on Scrapy 2.13.

    Scrapy 2.13's ``get_crawler`` needs an installed reactor; install the default asyncio one
    when none is (the reactor is never run by the component tests).
    """
    from scrapy.utils.test import get_crawler

    ensure_reactor()
    return get_crawler(spidercls, settings)


def ensure_reactor() -> None:
    """Install Scrapy's default (asyncio) reactor unless one is installed already."""
    from scrapy.utils.reactor import install_reactor, is_reactor_installed

    if not is_reactor_installed():
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
