"""Smoke test of an installed neardup-scrapy (a built wheel, not the checkout).

Run from outside the source tree with the interpreter the wheel was installed into::

    python .ci/wheel_smoke.py

It checks what a wheel can get wrong and the test suite, run on the checkout, cannot see: the
package is the installed one, every compiled module is there and loads (with lxml's libxml2,
whose functions the pass resolves at import), the typing files ship, and a check gives the
expected verdicts from bytes and from a parsed tree, through the API and through the CLI.
``cibuildwheel`` runs it as the test of every wheel it builds (``pyproject.toml``).
Exits non-zero with one line naming what failed.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import NoReturn

NATIVE = ("bucketmap", "chance", "extract", "markup", "page", "sketch", "tokens")
CHECKOUT = Path(__file__).resolve().parent.parent

PARAGRAPHS = [
    "The harbour commission met on Tuesday to weigh the cost of dredging the northern channel "
    "before the autumn storms, and heard from three pilots who asked for a deeper berth.",
    "Engineers estimated that 410,000 cubic metres of silt would have to be lifted, at a price "
    "that the treasurer said would take most of the reserve built up over eleven years.",
    "Fishermen at the meeting argued that the channel had served them well enough for decades "
    "and that the money would be better spent on the ageing cold store by the quay.",
    "The commission will publish the surveyors' full report next month and take a vote in "
    "December, after a public hearing in the library hall on the twelfth.",
]


def page(title: str, paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    nav = "<nav><a href='/'>Home</a> <a href='/news'>News</a> <a href='/about'>About</a></nav>"
    html = (
        f"<!doctype html><html><head><title>{title}</title></head><body>{nav}"
        f"<main><h1>{title}</h1>{body}</main><footer>(c) The Gazette</footer></body></html>"
    )
    return html.encode("utf-8")


def fail(message: str) -> NoReturn:
    print(f"wheel smoke test FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def check_installation() -> None:
    import neardup_scrapy

    where = Path(neardup_scrapy.__file__).resolve().parent
    if where == CHECKOUT / "neardup_scrapy":
        fail(f"neardup_scrapy imported from the checkout ({where}), not from the installed wheel")
    for name in NATIVE:
        try:
            module = importlib.import_module(f"neardup_scrapy.core.native.{name}")
        except ImportError as exc:
            fail(f"neardup_scrapy.core.native.{name} does not load: {exc}")
        if not str(module.__file__).endswith((".so", ".pyd")):
            fail(f"neardup_scrapy.core.native.{name} is not a compiled module ({module.__file__})")
    package = resources.files("neardup_scrapy")
    wanted = ["py.typed", *(f"core/native/{name}.pyi" for name in NATIVE)]
    missing = [path for path in wanted if not package.joinpath(path).is_file()]
    if missing:
        fail(f"files missing from the installed package: {', '.join(missing)}")
    try:  # the Redis stores' Lua scripts are package data, assembled at import
        importlib.import_module("neardup_scrapy.core.storage.redis_store")
        importlib.import_module("neardup_scrapy.core.storage.redis_cluster")
    except (ImportError, OSError) as exc:
        fail(f"the Redis stores' Lua scripts do not load: {exc}")


def check_verdicts() -> None:
    import lxml.html

    from neardup_scrapy.core import NearDupDetector

    original = page("Dredging the northern channel", PARAGRAPHS)
    edited = page(
        "Dredging the northern channel", [*PARAGRAPHS[:3], PARAGRAPHS[3].replace("twelfth", "ninth")]
    )
    other = page("A new cold store", [p[::-1] for p in PARAGRAPHS])
    expected = [
        ("https://a.example/news/1", original, "unique"),
        ("https://b.example/copy/1", original, "exact"),
        ("https://a.example/news/1-edited", edited, "near"),
        ("https://a.example/news/2", other, "unique"),
    ]
    for label, use_tree in (("bytes", False), ("tree", True)):
        detector = NearDupDetector()
        for url, body, status in expected:
            tree = lxml.html.document_fromstring(body) if use_tree else None
            verdict = detector.check(url, body, tree=tree)
            if verdict.status != status:
                fail(f"from {label}: {url} is {verdict.status!r}, expected {status!r} ({verdict.reason})")


def check_cli() -> None:
    # the console script installed beside this interpreter (a venv need not be activated)
    beside = Path(sys.executable).parent / "neardup-scrapy"
    command = str(beside) if beside.is_file() else shutil.which("neardup-scrapy")
    if command is None:
        fail("the neardup-scrapy command is not installed")
    records = [
        {"url": "https://a.example/news/1", "html": page("Dredging", PARAGRAPHS).decode()},
        {"url": "https://b.example/news/1", "html": page("Dredging", PARAGRAPHS).decode()},
    ]
    with tempfile.TemporaryDirectory() as tmp:
        pages = Path(tmp) / "pages.jsonl"
        pages.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        out = Path(tmp) / "tagged.jsonl"
        run = subprocess.run(
            [str(command), "scan", str(pages), "-o", str(out), "--jobs", "1", "-q"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if run.returncode != 0:
            fail(f"neardup-scrapy scan exited {run.returncode}: {run.stderr.strip()[-500:]}")
        statuses = [json.loads(line)["neardup"]["status"] for line in out.read_text().splitlines()]
        if statuses != ["unique", "exact"]:
            fail(f"neardup-scrapy scan tagged {statuses}, expected ['unique', 'exact']")


def main() -> None:
    check_installation()
    check_verdicts()
    check_cli()
    import neardup_scrapy

    print(f"wheel smoke test passed: {Path(neardup_scrapy.__file__).parent}")


if __name__ == "__main__":
    main()
