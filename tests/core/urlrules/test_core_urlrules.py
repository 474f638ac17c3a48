"""Duplicate-url rules (``neardup_scrapy.core.urlrules``): what is learnt, what never is, and the
planner's promise that a wrong rule costs a download, never a page."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_scrapy.core.storage.memory import MemoryStorage
from neardup_scrapy.core.urlrules import Rule, SkipPlanner, UrlRuleLearner, decompose
from neardup_scrapy.core.urlrules.forms import path_difference

HOST = "http://a.test"


def _sid(rng: random.Random) -> str:
    return f"{rng.getrandbits(64):016x}"


def _feed(learner: UrlRuleLearner, observations: list[tuple[str, str]]) -> None:
    for url, doc in observations:
        learner.observe(url, doc)


def _session_views(rng: random.Random, docs: int = 12, views: int = 2) -> list[tuple[str, str]]:
    return [(f"{HOST}/article/{d}?sid={_sid(rng)}", f"doc{d}") for _ in range(views) for d in range(docs)]


def test_forms_take_path_parameters_and_sort_queries() -> None:
    form = decompose("HTTP://A.test:80/x;JSESSIONID=abc/y?b=2&a=1#frag")
    assert form is not None
    assert form.host == "a.test" and form.path == "/x/y"
    assert form.params == ((";jsessionid", "abc"), ("a", "1"), ("b", "2"))
    assert decompose("mailto:someone@example.com") is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("/A/b", "/a/b", (("case", ""),)),
        ("/a/b/", "/a/b", (("slash", ""),)),
        ("/print/a/b", "/a/b", (("prefix", "print"),)),
        ("/a/index.html", "/a/", (("suffix", "index.html"),)),
        ("/a/index.html", "/a", (("suffix", "index.html"), ("slash", ""))),
        ("/a/b", "/c/d", None),
    ],
)
def test_path_differences(a: str, b: str, expected: object) -> None:
    assert path_difference(a, b) == expected
    assert path_difference(b, a) == expected


def test_session_parameter_is_learnt_from_enough_documents() -> None:
    rng = random.Random(1)
    learner = UrlRuleLearner(min_support=6)
    _feed(learner, _session_views(rng, docs=5))
    assert not learner.valid_rules("a.test"), "5 documents are fewer than the support needed"
    _feed(learner, _session_views(rng, docs=8)[5:8] + _session_views(rng, docs=8)[13:16])
    assert Rule("value", "", "sid") in learner.valid_rules("a.test")
    _host, key, used = learner.canonical(f"{HOST}/article/3?sid=fresh") or ("", "", ())
    assert key == learner.canonical(f"{HOST}/article/3?sid=other")[1]  # type: ignore[index]
    assert used


@pytest.mark.parametrize("trap", ["page", "lang", "rev"])
def test_content_selecting_parameters_never_become_rules(trap: str) -> None:
    """A parameter that selects content is refuted by the first pair of its values seen, whatever
    its values look like (a revision id as random as a session id)."""
    rng = random.Random(2)
    learner = UrlRuleLearner(min_support=3)
    observations = _session_views(rng, docs=10, views=3)
    for d in range(10):
        for k in range(3):
            value = {"page": str(k + 1), "lang": ("en", "fr", "de")[k], "rev": _sid(rng)}[trap]
            observations.append((f"{HOST}/list/{d}?{trap}={value}&sid={_sid(rng)}", f"{trap}{d}-{k}"))
    for order in range(3):
        shuffled = list(observations)
        random.Random(order).shuffle(shuffled)
        fresh = UrlRuleLearner(min_support=3)
        _feed(fresh, shuffled)
        valid = fresh.valid_rules("a.test")
        assert not any(rule.name == trap for rule in valid), (order, valid)
        assert any(rule.name == "sid" for rule in valid)
    del learner


def test_default_value_gives_a_no_op_rule_not_a_rule_for_every_value() -> None:
    rng = random.Random(3)
    learner = UrlRuleLearner(min_support=4)
    for d in range(8):
        learner.observe(f"{HOST}/p/{d}", f"doc{d}")
        learner.observe(f"{HOST}/p/{d}?lang=en", f"doc{d}")
    valid = learner.valid_rules("a.test")
    assert Rule("no-op", "", "lang", "en") in valid
    assert Rule("param", "", "lang") not in valid
    assert learner.canonical(f"{HOST}/p/1?lang=fr")[1] != learner.canonical(f"{HOST}/p/1")[1]  # type: ignore[index]
    del rng


@given(st.permutations(list(range(24))))
@settings(max_examples=20, deadline=None)
def test_rules_do_not_depend_on_the_order_of_observations(order: list[int]) -> None:
    rng = random.Random(4)
    observations = _session_views(rng, docs=12, views=2)
    learner = UrlRuleLearner(min_support=4)
    _feed(learner, [observations[i] for i in order])
    assert {r for r in learner.valid_rules("a.test") if r.scope == ""} == {
        Rule("value", "", "sid"),
    }


def test_path_rules_and_aliases() -> None:
    learner = UrlRuleLearner(min_support=3)
    for d in range(5):
        learner.observe(f"{HOST}/docs/{d}/", f"doc{d}")
        learner.observe(f"{HOST}/docs/{d}/index.html", f"doc{d}")
        learner.observe(f"{HOST}/print/docs/{d}/", f"doc{d}")
        learner.observe(f"http://b.test/docs/{d}/", f"doc{d}")
    valid = learner.valid_rules("a.test")
    assert Rule("suffix", name="index.html") in valid
    assert Rule("prefix", name="print") in valid
    assert Rule("alias", name="b.test") in valid
    key = learner.canonical(f"{HOST}/docs/1/")[1]  # type: ignore[index]
    assert learner.canonical("http://b.test/print/docs/1/index.html")[1] == key  # type: ignore[index]


def test_a_counter_example_withdraws_a_rule_and_the_planner_hands_requests_back() -> None:
    learner = UrlRuleLearner(min_support=3)
    planner: SkipPlanner[str] = SkipPlanner(learner)
    for d in range(4):
        for view in ("x", "y"):
            url = f"{HOST}/p/{d}?s={view}{d}"
            learner.observe(url, f"doc{d}")
            planner.fetched(url, {"cluster": f"doc{d}"})
    learner.observe(f"{HOST}/p/9?s=q", "doc9")
    planner.fetched(f"{HOST}/p/9?s=q", {})
    assert Rule("value", "", "s") in learner.valid_rules("a.test")
    prediction = planner.predict(f"{HOST}/p/9?s=other")
    assert prediction is not None and prediction.duplicate_of == f"{HOST}/p/9?s=q"
    assert prediction.tag == {}
    assert planner.keep(prediction, "request-1")
    assert planner.withdrawn() == []
    # the same address under another value is another document: the rule goes, the request returns
    learner.observe(f"{HOST}/p/9?s=z", "other-doc")
    assert Rule("value", "", "s") not in learner.valid_rules("a.test")
    assert planner.withdrawn() == ["request-1"]
    assert planner.predict(f"{HOST}/p/9?s=again") is None


def test_requests_kept_for_a_page_that_never_came_return_when_idle() -> None:
    learner = UrlRuleLearner(min_support=2)
    planner: SkipPlanner[str] = SkipPlanner(learner)
    for d in range(3):
        for view in "abc":
            learner.observe(f"{HOST}/p/{d}?s={view}", f"doc{d}")
    planner.fetching(f"{HOST}/p/7?s=first")
    prediction = planner.predict(f"{HOST}/p/7?s=second")
    assert prediction is not None and prediction.tag is None  # names a page being downloaded
    assert planner.keep(prediction, "second")
    assert planner.failed(f"{HOST}/p/7?s=first") == ["second"]
    planner.fetching(f"{HOST}/p/8?s=first")
    prediction = planner.predict(f"{HOST}/p/8?s=second")
    assert prediction is not None and planner.keep(prediction, "kept")
    assert planner.idle() == ["kept"]  # the download never reported back


def test_keep_limit_means_download() -> None:
    learner = UrlRuleLearner(min_support=2)
    planner: SkipPlanner[str] = SkipPlanner(learner, keep=0)
    for d in range(3):
        for view in "abc":
            url = f"{HOST}/p/{d}?s={view}"
            learner.observe(url, f"doc{d}")
            planner.fetched(url, {})
    prediction = planner.predict(f"{HOST}/p/1?s=c")
    assert prediction is not None and not planner.keep(prediction, "r")


def test_exploration_shrinks_and_is_deterministic() -> None:
    def explored(seed: int) -> list[bool]:
        learner = UrlRuleLearner(min_support=2)
        planner: SkipPlanner[str] = SkipPlanner(learner, seed=seed)
        for d in range(3):
            for view in "abc":
                url = f"{HOST}/p/{d}?s={view}"
                learner.observe(url, f"doc{d}")
                planner.fetched(url, {})
        out = []
        for k in range(2000):
            prediction = planner.predict(f"{HOST}/p/1?s=v{k}")
            assert prediction is not None
            out.append(prediction.explore)
        return out

    first = explored(1)
    assert first == explored(1)
    assert sum(first[:100]) > sum(first[1000:1100])
    assert sum(first) < 20  # about ln(2000)


def test_state_round_trips_through_a_store_and_a_recrawl_starts_with_the_rules() -> None:
    rng = random.Random(5)
    learner = UrlRuleLearner(min_support=4)
    _feed(learner, _session_views(rng, docs=8))
    store = MemoryStorage()
    store.save_url_rules("w1", json.dumps(learner.state()).encode())
    fresh = UrlRuleLearner(min_support=4)
    fresh.load([json.loads(blob) for blob in store.url_rules().values()])
    assert Rule("value", "", "sid") in fresh.valid_rules("a.test")
    summary = fresh.summary()
    row = next(r for r in summary["hosts"][0]["rules"] if r["rule"] == Rule("value", "", "sid").to_dict())
    assert row["valid"] and row["support"] >= 4 and row["counter_examples"] == 0
    again = UrlRuleLearner(min_support=4)
    again.load([json.loads(json.dumps(summary))])  # the report's section loads too
    assert Rule("value", "", "sid") in again.valid_rules("a.test")
    with pytest.raises(ValueError):
        again.load([{"format": "something else"}])


def test_saved_evidence_keeps_what_validity_needs() -> None:
    """A rule over any value of a parameter needs the absent value among its witnesses' values:
    the saved state keeps it however many values were seen (a recrawl must find the rule valid)."""
    rng = random.Random(6)
    learner = UrlRuleLearner(min_support=12)
    for d in range(10):  # many values first, then the absent one
        learner.observe(f"{HOST}/p/{d}?clid={_sid(rng)}", f"doc{d}")
        learner.observe(f"{HOST}/p/{d}?clid={_sid(rng)}", f"doc{d}")
    for d in range(10, 12):
        learner.observe(f"{HOST}/p/{d}?clid={_sid(rng)}", f"doc{d}")
        learner.observe(f"{HOST}/p/{d}", f"doc{d}")
    assert Rule("param", "", "clid") in learner.valid_rules("a.test")
    fresh = UrlRuleLearner(min_support=12)
    fresh.load([json.loads(json.dumps(learner.state()))])
    assert fresh.valid_rules("a.test") == learner.valid_rules("a.test")


def test_the_report_lists_the_rules_saved_with_the_index() -> None:
    from neardup_scrapy.core import NearDupDetector
    from neardup_scrapy.report.html import render_html
    from neardup_scrapy.report.schema import validate_report
    from neardup_scrapy.report.text import format_summary

    rng = random.Random(7)
    learner = UrlRuleLearner(min_support=4)
    _feed(learner, _session_views(rng, docs=8))
    learner.note_saved([("a.test", Rule("value", "", "sid"))] * 3)
    detector = NearDupDetector()
    assert detector.exchange_url_rules("w1", json.dumps(learner.state()).encode()) == []
    assert detector.exchange_url_rules("w2", None) == [json.dumps(learner.state()).encode()]
    report = detector.report()
    validate_report(report)
    section = report["url_rules"]
    assert section["valid"] >= 1 and section["saved"] == 3
    html = render_html(report)
    assert "Duplicate-url rules" in html and "the value of parameter sid does not change the page" in html
    assert any(line.startswith("  url rules:") for line in format_summary(report))
    empty = NearDupDetector().report()["url_rules"]
    assert empty["hosts"] == [] and "No duplicate-url rule" in render_html({**report, "url_rules": empty})


def test_redirects_and_canonical_links_are_witnesses_never_counter_examples() -> None:
    learner = UrlRuleLearner(min_support=3)
    for d in range(3):
        learner.observe_same(f"{HOST}/Doc/{d}", f"{HOST}/doc/{d}")  # a redirect to the lower-case form
    assert Rule("case") in learner.valid_rules("a.test")
    learner.observe_same(f"{HOST}/", f"{HOST}/about")  # a bogus canonical: nothing to learn, nothing refuted
    assert Rule("case") in learner.valid_rules("a.test")


_REPLAY = """
import json, random, sys
from neardup_scrapy.core.urlrules import SkipPlanner, UrlRuleLearner
rng = random.Random(3)
learner = UrlRuleLearner(min_support=3)
planner = SkipPlanner(learner, seed=7)
out = []
for k in range(8):  # aliased hosts; then a rule of both makes pages of each name one document
    hosts = (f"http://a{k}.test", f"http://b{k}.test")
    for d in range(3):
        for host in hosts:
            learner.observe(f"{host}/p/{d}", f"k{k}p{d}")
    out.append(planner.withdrawn())
    for host in hosts:
        planner.fetched(f"{host}/q?s={host[7]}", "q")
        learner.observe(f"{host}/q?s={host[7]}", f"k{k}q")
    for n, host in enumerate(reversed(hosts)):  # each host learns the rule on its own pages
        for d in range(3 * n, 3 * n + 3):
            for view in "xy":
                learner.observe(f"{host}/r/{d}?s={view}{d}", f"k{k}r{d}")
    out.append(planner.withdrawn())
    found = [planner.predict(f"{host}/q?s=z") for host in hosts]
    out.append([p and [p.duplicate_of, p.rules, p.key] for p in found])
slow, other = UrlRuleLearner(min_support=50), UrlRuleLearner(min_support=50)
for d in range(60):  # more values than a rule keeps, own and loaded
    for each in (slow, other):
        for url in (f"http://c.test/p/{d}?sid={rng.getrandbits(64):016x}" for _ in range(2)):
            each.observe(url, f"c{d}")
    slow.observe(f"http://c.test/p/{d}", f"c{d}")
slow.load([json.loads(json.dumps(other.state()))])
for each in (learner, slow):
    out += [each.hosts(), each.state(), each.summary()]
    out += [(h, sorted(each.valid_rules(h))) for h in sorted(each.hosts())]
json.dump(out, sys.stdout, sort_keys=True, default=repr)
"""


def test_learning_and_skipping_do_not_depend_on_the_hash_seed() -> None:
    """The same observations give the same rules, saved evidence and predictions in processes
    with different string hashes (set orders): no decision may follow a set's order."""

    def replay(seed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _REPLAY], env=env, capture_output=True, text=True, check=True, timeout=120
        )
        return done.stdout

    first = replay("1")
    assert "Rule(kind='alias'" in first and "Rule(kind='value'" in first
    assert first == replay("2")
