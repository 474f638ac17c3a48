"""Inline mode's helper thread, and the compiled pass running beside other Python threads.

The tree walk, the pass over the parser's events, the tokens and the sketches release the GIL,
so they must keep no state shared between analyzers (each extractor has its own memos and
parser context, each tokenizer its own memo): two analyzers working at once in two threads
give exactly what each gives alone. The check thread runs its jobs in the
order they were handed over and hands the results back in that order.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
from twisted.python.failure import Failure

from neardup_scrapy.check_thread import CheckThread
from neardup_scrapy.core.analysis import PageAnalyzer
from neardup_scrapy.core.native.tokens import Tokenizer
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.text import parse_html


def _page(n: int) -> str:
    """A page with class names and words of its own (so the memos keep learning) and
    non-ASCII runs (so the tokenizer's memo is used)."""
    words = " ".join(f"w{n}x{k} naïve{n % 7} Größe{k % 5}" for k in range(40))
    return (
        f"<html><head><title>Page {n}</title></head><body>"
        f"<div class='nav-{n} menu'><a href='/a{n}'>home {n}</a></div>"
        f"<div id='content-{n}' class='post-body c{n}x'><h1>Page {n}</h1>"
        f"<p class='lead t{n}'>{words}</p><p>東京 {n} 日本語のテキスト {n}</p></div>"
        f"<div class='share-{n} sidebar'>share {n}</div></body></html>"
    )


def _fields(analysis: Any) -> tuple[object, ...]:
    sketch = analysis.sketch
    assert sketch is not None
    return (analysis.excerpt, sketch.digest, sketch.signature.tobytes(), sketch.simhash, sketch.profile)


@pytest.mark.parametrize("source", ["tree", "html"])
def test_two_analyzers_in_two_threads_give_what_each_gives_alone(source: str) -> None:
    """From a tree (the tree walk) and from bytes (the pass over the parser's events, each
    analyzer with its own parser context): both run without the GIL."""
    pages = [_page(n) for n in range(400)]
    trees = [parse_html(page) for page in pages]
    bodies = [page.encode("utf-8") for page in pages]

    def one(analyze: PageAnalyzer, n: int) -> tuple[object, ...]:
        url = f"https://a.example/{n}"
        return _fields(analyze(url, tree=trees[n]) if source == "tree" else analyze(url, bodies[n]))

    alone = [one(PageAnalyzer(DetectorParams()), n) for n in range(len(pages))]
    results: dict[int, list[tuple[object, ...]]] = {}
    start = threading.Barrier(2)

    def work(which: int) -> None:
        analyze = PageAnalyzer(DetectorParams())
        start.wait()
        order = range(len(trees)) if which == 0 else reversed(range(len(trees)))
        out = {n: one(analyze, n) for n in order}
        results[which] = [out[n] for n in range(len(trees))]

    threads = [threading.Thread(target=work, args=(which,)) for which in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results[0] == alone
    assert results[1] == alone


def test_the_tokenizers_memo_of_non_ascii_runs_gives_the_tokens_normalising_gives() -> None:
    """The memo (by 128-bit fingerprint) is emptied when full: tokens before and after it was
    emptied, and those of a fresh tokenizer, are the same."""
    text = " ".join(f"Größe{n} naïve café{n % 3} ﬁn{n}" for n in range(300))
    fresh = Tokenizer(11).hashes(text)
    used = Tokenizer(11)
    first = used.hashes(text)
    for n in range(60_000):  # more distinct runs than the memo holds: it is emptied
        used.hashes(f"é{n}ß")
    assert first == fresh
    assert used.hashes(text) == fresh


def test_a_run_too_long_for_the_memo_is_tokenized_whole() -> None:
    run = "αβγδεζηθ" * 40_000  # 320k tokens in char mode, one run between spaces
    whole = Tokenizer(7, char_mode=True).hashes(run)
    chunked = b"".join(
        Tokenizer(7, char_mode=True).hashes(run[i : i + 1000]) for i in range(0, len(run), 1000)
    )
    assert len(whole) == 8 * len(run)
    assert whole == chunked


# ----------------------------------------------------------------------------------------------
# the check thread


class _Reactor:
    """Records callFromThread calls; the test runs them in its own thread, as a reactor would."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []
        self.lock = threading.Lock()

    def callFromThread(self, function: Callable[..., Any], *args: Any) -> None:
        with self.lock:
            self.calls.append(lambda: function(*args))

    def run_pending(self) -> None:
        with self.lock:
            calls, self.calls = self.calls, []
        for call in calls:
            call()


def test_jobs_run_in_order_and_their_results_come_back_in_order() -> None:
    reactor = _Reactor()
    thread = CheckThread(reactor)  # type: ignore[arg-type]
    ran: list[int] = []
    got: list[Any] = []
    for n in range(500):
        if n % 50 == 7:
            thread.submit(_fail, n).addErrback(lambda failure: got.append(("failed", str(failure.value))))
        else:
            thread.submit(_record, ran, n).addCallback(got.append)
    assert thread.drain(timeout=30)
    reactor.run_pending()  # a late wake-up finds nothing left to deliver
    assert ran == [n for n in range(500) if n % 50 != 7]
    assert got == [("failed", f"job {n}") if n % 50 == 7 else n for n in range(500)]


def test_results_are_delivered_by_the_reactors_thread_in_batches() -> None:
    reactor = _Reactor()
    thread = CheckThread(reactor)  # type: ignore[arg-type]
    release = threading.Event()
    got: list[int] = []
    thread.submit(release.wait, 30).addCallback(lambda _: got.append(-1))
    for n in range(100):
        thread.submit(_record, [], n).addCallback(got.append)
    release.set()
    finished = threading.Event()
    thread.post(finished.set)
    assert finished.wait(30)
    assert got == []  # nothing fires outside the reactor's thread
    wakeups = len(reactor.calls)
    reactor.run_pending()
    assert got == [-1, *range(100)]
    assert 1 <= wakeups < 100


def test_a_failing_posted_job_is_logged_and_the_thread_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    reactor = _Reactor()
    thread = CheckThread(reactor)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="neardup_scrapy.checking.thread"):
        thread.post(_fail, 3)
        got: list[Any] = []
        thread.submit(_record, [], 4).addCallback(got.append)
        assert thread.drain(timeout=30)
    assert got == [4]
    assert "job 3" in caplog.text


def test_the_process_shares_one_thread_per_reactor() -> None:
    reactor = _Reactor()
    first = CheckThread.shared(reactor)  # type: ignore[arg-type]
    assert CheckThread.shared(reactor) is first  # type: ignore[arg-type]
    assert CheckThread.shared(_Reactor()) is not first  # type: ignore[arg-type]


def _record(ran: list[int], n: int) -> int:
    ran.append(n)
    return n


def _fail(n: int) -> None:
    raise ValueError(f"job {n}")


def test_failure_values_keep_their_exception() -> None:
    reactor = _Reactor()
    thread = CheckThread(reactor)  # type: ignore[arg-type]
    seen: list[Failure] = []
    thread.submit(_fail, 9).addErrback(seen.append)
    assert thread.drain(timeout=30)
    assert isinstance(seen[0].value, ValueError)
