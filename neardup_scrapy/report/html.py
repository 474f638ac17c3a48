"""Render a ``neardup-report/1`` report as one self-contained HTML page.

The page needs nothing but itself: CSS and the SVG charts are inline, there are no fonts,
images or scripts from elsewhere, and a Content-Security-Policy forbids any request. A small
inline script sorts the tables when a header is clicked; everything else works without it.

Every string of the report (urls, hosts, page texts) is untrusted and escaped. Urls and hosts
are isolated left to right (``<bdi dir="ltr">``) and their invisible characters -- controls,
bidi overrides, isolates and marks, zero-width characters (see
:mod:`~neardup_scrapy.report.escapes`) -- are shown as escapes (``\\u202e``, marked and
named on hover), so a link to ``…\\u202etxt.exe`` cannot read ``…exe.txt``; in a link's target
they are percent-encoded. The renderer
caps every list again (see the ``MAX_*`` constants), so even an oversized report gives a page
of bounded size; the near-pair diff works on excerpts of at most ``MAX_TEXT_CHARS``.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import html
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import _fmt
from .escapes import escape_char, is_invisible, shown
from .schema import STATUSES

#: Rows of the host table shown.
MAX_HOSTS = 2000
#: Mirror pairs shown.
MAX_MIRRORS = 500
#: Clusters shown.
MAX_CLUSTERS = 200
#: Members shown per cluster.
MAX_MEMBERS = 50
#: Clusters shown expanded.
OPEN_CLUSTERS = 3
#: Near-pair examples shown.
MAX_EXAMPLES = 50
#: Characters of main text the detector keeps per example page; a text this long was cut.
EXCERPT_CHARS = 2000
#: Characters of each example text that are compared and shown.
MAX_TEXT_CHARS = 4000
#: Equal passages longer than this many words are shortened in the diff view.
DIFF_CONTEXT_WORDS = 24
#: Characters of a url shown (the link keeps up to MAX_HREF characters).
MAX_URL_CHARS = 160
MAX_HREF = 2048
#: Hosts in the "most duplicates" chart.
TOP_HOSTS = 10
#: Parameters listed.
MAX_PARAMS = 60

_COLORS = {"unique": "#4c78a8", "exact": "#d62728", "near": "#f28e2b", "skipped": "#9d9d9d"}
_LABELS = {"unique": "unique", "exact": "exact duplicates", "near": "near duplicates", "skipped": "skipped"}
_SAFE_HREF = re.compile(r"^https?://[^\s\"'<>`]+$", re.IGNORECASE)

_CSS = """
:root{--fg:#1d2330;--muted:#5f6b7a;--bg:#f6f7f9;--card:#fff;--line:#dde1e7;--accent:#4c78a8;
--ins:#d9f2dc;--ins-fg:#14532d;--del:#fbdada;--del-fg:#7f1d1d;--bar:#e8ebf0}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ee;--muted:#9aa5b4;--bg:#14171c;--card:#1d2128;
--line:#323844;--accent:#7aa6d6;--ins:#173b22;--ins-fg:#b7f0c4;--del:#4a1d1d;--del-fg:#ffc9c9;--bar:#2b313b}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header,main,footer{max-width:1200px;margin:0 auto;padding:0 20px}
header{padding-top:22px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 10px}
.sub{color:var(--muted);margin:0}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px 18px;margin:16px 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));gap:10px;margin-bottom:14px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 10px}
.card .v{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .n{color:var(--muted);font-size:12px}
.card.warn{border-color:#d62728}
.dot{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.legend{display:flex;flex-wrap:wrap;gap:14px;color:var(--muted);font-size:13px;margin-top:6px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
@media (max-width:900px){.grid2{grid-template-columns:1fr}}
svg text{fill:var(--muted);font:11px system-ui,sans-serif}
svg .val{fill:var(--fg)}
svg .axis{stroke:var(--line)}
svg .grid{stroke:var(--line);stroke-dasharray:2 3}
.chart{width:100%;max-width:640px;height:auto;display:block}
.bar-chart{width:100%;height:30px;display:block}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.03em;white-space:nowrap}
td.num,th.num{text-align:right}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th:hover{color:var(--fg)}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
tbody tr:hover{background:rgba(127,127,127,.07)}
.scroll{max-height:640px;overflow:auto}
.scroll thead th{position:sticky;top:0;background:var(--card)}
.url{overflow-wrap:anywhere;word-break:break-word}
.esc{font-family:ui-monospace,monospace;font-size:90%;color:var(--del-fg);background:var(--del);border-radius:3px;
padding:0 2px}
a{color:var(--accent);text-decoration:none}
a:hover{text-decoration:underline}
td.share{position:relative;padding-left:112px;min-width:170px;white-space:nowrap}
td.share::before{content:"";position:absolute;right:calc(8px + 4.1em);top:50%;width:90px;height:9px;
margin-top:-4px;border-radius:5px;background:linear-gradient(90deg,#d62728 var(--s),var(--bar) var(--s))}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;color:#fff}
.b-unique{background:#4c78a8}.b-exact{background:#d62728}.b-near{background:#c96a12}.b-skipped{background:#777}
details{border:1px solid var(--line);border-radius:6px;margin:8px 0;padding:6px 10px}
details>summary{cursor:pointer;font-weight:600}
details>summary .sub{font-weight:400}
.note{color:var(--muted);font-size:13px;margin:6px 0 0}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:12px;margin-top:8px}
@media (max-width:900px){.pair{grid-template-columns:1fr}}
.pair h3{font-size:13px;margin:0 0 4px;color:var(--muted);font-weight:600}
.text{border:1px solid var(--line);border-radius:6px;padding:8px 10px;max-height:320px;overflow:auto;
white-space:pre-wrap;overflow-wrap:anywhere;font-size:13px}
ins{background:var(--ins);color:var(--ins-fg);text-decoration:none;border-radius:2px}
del{background:var(--del);color:var(--del-fg);text-decoration:line-through;border-radius:2px}
.gap{color:var(--muted);font-style:italic}
.example{border-top:1px solid var(--line);padding-top:12px;margin-top:12px}
.example:first-of-type{border-top:0;margin-top:0;padding-top:0}
dl.params{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0 0;font-size:13px}
dl.params dt{color:var(--muted)}dl.params dd{margin:0;overflow-wrap:anywhere}
footer{color:var(--muted);font-size:12px;padding-bottom:24px}
"""

_SCRIPT = (
    "(function(){var T=document.querySelectorAll('table.sortable');"
    "Array.prototype.forEach.call(T,function(t){var hs=t.tHead.rows[0].cells;"
    "Array.prototype.forEach.call(hs,function(th,i){th.tabIndex=0;"
    "function key(r){var c=r.cells[i];var v=c.getAttribute('data-v');return v===null?c.textContent:v;}"
    "function go(){var num=th.classList.contains('num'),cur=th.getAttribute('aria-sort'),"
    "asc=cur?cur==='descending':!num;"
    "Array.prototype.forEach.call(hs,function(h){h.removeAttribute('aria-sort');});"
    "th.setAttribute('aria-sort',asc?'ascending':'descending');"
    "var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);"
    "rows.sort(function(x,y){var p=key(x),q=key(y),c=num?(parseFloat(p)||0)-(parseFloat(q)||0):"
    "p.localeCompare(q);return asc?c:-c;});"
    "var f=document.createDocumentFragment();rows.forEach(function(r){f.appendChild(r);});b.appendChild(f);}"
    "th.addEventListener('click',go);"
    "th.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();go();}});"
    "});});})();"
)
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
_CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; img-src data:"


def _e(value: Any) -> str:
    """Escape any value for HTML text and attribute context."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _visible(text: str) -> str:
    """``text`` escaped for HTML, its invisible characters shown as marked escapes."""
    if text.isprintable():
        return _e(text)
    out = []
    for char in text:
        if is_invisible(char):
            name = unicodedata.name(char, "")
            title = f"U+{ord(char):04X} {name}".rstrip()
            out.append(f'<span class="esc" title="{_e(title)}">{_e(escape_char(char))}</span>')
        else:
            out.append(_e(char))
    return "".join(out)


def _isolated(text: str, limit: int) -> str:
    """A url or host as text: shortened, isolated left to right, invisible characters shown."""
    return f'<bdi dir="ltr">{_visible(_fmt.clip(text, limit))}</bdi>'


def _href(url: str) -> str:
    """A link target with its invisible characters percent-encoded (the same address)."""
    if url.isprintable():
        return url
    return "".join(
        "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) if is_invisible(c) else c
        for c in url
    )


def _url(value: Any, limit: int = MAX_URL_CHARS) -> str:
    """A url as a link (http/https only) or plain text; always escaped, isolated and shortened.

    Links send no referrer (the page's referrer policy) and open in the same tab.
    """
    url = _str(value)
    text = _isolated(url, limit)
    title = f' title="{_e(shown(_fmt.clip(url, MAX_HREF)))}"' if len(url) > limit else ""
    if len(url) <= MAX_HREF and _SAFE_HREF.match(url):
        return f'<a class="url" href="{_e(_href(url))}"{title}>{text}</a>'
    return f'<span class="url"{title}>{text}</span>'


def _share_cell(value: Any) -> str:
    number = _fmt.as_float(value)
    width = 0.0 if number is None else min(max(number, 0.0), 1.0) * 100.0
    data = "" if number is None else f"{number:.4f}"
    # One element per cell: the bar is the cell's ::before, filled up to --s.
    return f'<td class="num share" data-v="{data}" style="--s:{width:.1f}%">{_fmt.share(value)}</td>'


def _num_cell(value: Any) -> str:
    return f'<td class="num" data-v="{_fmt.as_int(value)}">{_fmt.count(value)}</td>'


def _more(shown: int, total: int, what: str) -> str:
    if total <= shown:
        return ""
    return f'<p class="note">{_fmt.count(total - shown)} more {what} not listed.</p>'


# -- charts ------------------------------------------------------------------------------------


def _nice_step(maximum: int, ticks: int = 4) -> int:
    """A round tick step so that about ``ticks`` steps cover ``maximum``."""
    raw = max(maximum / ticks, 1.0)
    magnitude = 10 ** (len(str(int(raw))) - 1)
    for factor in (1, 2, 5, 10):
        if factor * magnitude >= raw:
            return int(factor * magnitude)
    return int(10 * magnitude)  # pragma: no cover - the loop always returns


def _composition_svg(totals: Mapping[str, Any]) -> str:
    """A stacked horizontal bar of unique / exact / near / skipped pages."""
    parts = [(status, _fmt.as_int(totals.get(status))) for status in STATUSES]
    whole = sum(n for _, n in parts)
    width, height = 640, 34
    out = [
        f'<svg class="bar-chart" id="composition" viewBox="0 0 {width} {height}" preserveAspectRatio="none" '
        f'role="img" aria-label="Pages by verdict">'
    ]
    if not whole:
        out.append(f'<rect x="0" y="4" width="{width}" height="22" rx="4" fill="var(--bar)"/>')
    x = 0.0
    for status, n in parts:
        if not n:
            continue
        w = width * n / whole
        out.append(
            f'<rect x="{x:.2f}" y="4" width="{max(w, 1.0):.2f}" height="22" fill="{_COLORS[status]}">'
            f"<title>{_e(_LABELS[status])}: {_fmt.count(n)} ({_fmt.percent(n, whole)})</title></rect>"
        )
        x += w
    out.append("</svg>")
    legend = "".join(
        f'<span><i class="dot" style="background:{_COLORS[s]}"></i>{_e(_LABELS[s])} '
        f"{_fmt.count(n)} ({_fmt.percent(n, whole)})</span>"
        for s, n in parts
    )
    return "".join(out) + f'<div class="legend">{legend}</div>'


def _histogram_svg(cluster_sizes: Any) -> str:
    """Bars of the number of clusters per cluster size, with axes and labels."""
    bins = _fmt.size_bins(cluster_sizes)
    if not bins:
        return '<p class="note">No clusters of two or more pages.</p>'
    width, height = 480, 260
    left, right, top, bottom = 50, 8, 18, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(n for _, n in bins) or 1
    step = _nice_step(peak)
    y_max = step * -(-peak // step)
    slot = plot_w / len(bins)
    bar_w = max(min(slot * 0.7, 60.0), 2.0)
    out = [
        f'<svg class="chart" id="histogram" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Number of clusters by cluster size">'
    ]
    for tick in range(0, y_max + 1, step):
        y = top + plot_h - plot_h * tick / y_max
        out.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt.count(tick)}</text>')
    out.append(
        f'<line class="axis" x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}"/>'
    )
    for i, (label, n) in enumerate(bins):
        cx = left + slot * (i + 0.5)
        h = plot_h * n / y_max
        if n and h < 1.5:
            h = 1.5
        y = top + plot_h - h
        out.append(
            f'<rect x="{cx - bar_w / 2:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" rx="2" '
            f'fill="{_COLORS["unique"]}"><title>size {_e(label)}: {_fmt.count(n)} clusters</title></rect>'
        )
        if n:
            out.append(
                f'<text class="val" x="{cx:.1f}" y="{y - 4:.1f}" text-anchor="middle">{_fmt.count(n)}</text>'
            )
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 15}" text-anchor="middle">{_e(label)}</text>')
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">'
        "cluster size (pages per cluster)</text>"
    )
    out.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">clusters</text>'
    )
    out.append("</svg>")
    return "".join(out)


def _top_hosts_svg(hosts: list[Any], rows: int = TOP_HOSTS) -> str:
    """Horizontal stacked bars (exact + near) of the listed hosts with most duplicates."""
    ranked = sorted(
        (_map(h) for h in hosts),
        key=lambda h: -(_fmt.as_int(h.get("exact")) + _fmt.as_int(h.get("near"))),
    )
    ranked = [h for h in ranked[:rows] if _fmt.as_int(h.get("exact")) + _fmt.as_int(h.get("near"))]
    if not ranked:
        return '<p class="note">No duplicates.</p>'
    width, row_h, label_w, value_w = 480, 22, 180, 50
    height = row_h * len(ranked) + 8
    plot_w = width - label_w - value_w
    peak = max(_fmt.as_int(h.get("exact")) + _fmt.as_int(h.get("near")) for h in ranked) or 1
    out = [
        f'<svg class="chart" id="top-hosts" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Hosts with most duplicate pages">'
    ]
    for i, h in enumerate(ranked):
        y = 4 + i * row_h
        exact, near = _fmt.as_int(h.get("exact")), _fmt.as_int(h.get("near"))
        name = shown(_str(h.get("host")))
        out.append(
            f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end" direction="ltr" unicode-bidi="isolate">'
            f"{_e(_fmt.clip(name, 25))}<title>{_e(_fmt.clip(name, 200))}</title></text>"
        )
        x = float(label_w)
        for status, n in (("exact", exact), ("near", near)):
            if not n:
                continue
            w = max(plot_w * n / peak, 1.0)
            out.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" '
                f'fill="{_COLORS[status]}"><title>{_e(_fmt.clip(name, 200))}: '
                f"{_fmt.count(n)} {status}</title></rect>"
            )
            x += w
        out.append(f'<text class="val" x="{x + 5:.1f}" y="{y + 14}">{_fmt.count(exact + near)}</text>')
    out.append("</svg>")
    legend = "".join(
        f'<span><i class="dot" style="background:{_COLORS[s]}"></i>{_e(_LABELS[s])}</span>'
        for s in ("exact", "near")
    )
    return "".join(out) + f'<div class="legend">{legend}</div>'


# -- sections ----------------------------------------------------------------------------------


def _totals_section(report: Mapping[str, Any]) -> str:
    totals = _map(report.get("totals"))
    pages = _fmt.as_int(totals.get("pages"))
    revisits = _fmt.as_int(totals.get("revisits"))
    checked = pages - _fmt.as_int(totals.get("skipped")) - revisits
    dups = _fmt.as_int(totals.get("exact")) + _fmt.as_int(totals.get("near"))
    total_bytes = _fmt.as_int(totals.get("bytes"))
    saved = _fmt.as_int(totals.get("bytes_saved"))
    cards = [
        ("pages", _fmt.count(pages), f"{_fmt.count(report.get('hosts_total'))} hosts", False),
        (
            "unique",
            _fmt.count(totals.get("unique")),
            _fmt.percent(_fmt.as_int(totals.get("unique")), pages),
            False,
        ),
        (
            "exact duplicates",
            _fmt.count(totals.get("exact")),
            _fmt.percent(_fmt.as_int(totals.get("exact")), pages),
            False,
        ),
        (
            "near duplicates",
            _fmt.count(totals.get("near")),
            _fmt.percent(_fmt.as_int(totals.get("near")), pages),
            False,
        ),
        ("skipped", _fmt.count(totals.get("skipped")), "not checked", False),
        ("revisits", _fmt.count(revisits), "urls fetched again", False),
        ("dropped", _fmt.count(totals.get("dropped")), "by the crawl", False),
        ("clusters", _fmt.count(totals.get("clusters")), "of 2+ pages", False),
        ("mirror hosts", _fmt.count(totals.get("mirror_hosts")), "", False),
        ("bytes checked", _fmt.nbytes(total_bytes), "", False),
        ("bytes saved", _fmt.nbytes(saved), f"{_fmt.percent(saved, total_bytes)} of checked", False),
    ]
    errors = _fmt.as_int(totals.get("storage_errors"))
    if errors:
        cards.append(("storage errors", _fmt.count(errors), "pages passed unchecked", True))
    body = "".join(
        f'<div class="card{" warn" if warn else ""}"><div class="k">{_e(k)}</div>'
        f'<div class="v">{_e(v)}</div><div class="n">{_e(n) or "&nbsp;"}</div></div>'
        for k, v, n, warn in cards
    )
    lead = (
        f"{_fmt.count(dups)} of {_fmt.count(checked)} checked pages "
        f"({_fmt.percent(dups, checked)}) duplicate an earlier page."
    )
    return (
        f'<section id="totals"><h2>Totals</h2><div class="cards">{body}</div>'
        f'<p class="sub">{_e(lead)}</p>{_composition_svg(totals)}</section>'
    )


def _histogram_section(report: Mapping[str, Any]) -> str:
    clusters = _fmt.as_int(_map(report.get("totals")).get("clusters"))
    return (
        f'<section id="sizes"><h2>Cluster sizes</h2><p class="sub">{_fmt.count(clusters)} clusters of two '
        f"or more pages, by number of pages.</p>{_histogram_svg(report.get('cluster_sizes'))}</section>"
    )


def _top_hosts_section(report: Mapping[str, Any]) -> str:
    return (
        '<section id="top-hosts-section"><h2>Hosts with most duplicates</h2><p class="sub">Duplicate pages '
        f"per host (exact and near), among the listed hosts.</p>{_top_hosts_svg(_list(report.get('hosts')))}"
        "</section>"
    )


def _mirrors_section(report: Mapping[str, Any]) -> str:
    mirrors = _list(report.get("mirrors"))
    if not mirrors:
        body = '<p class="note">No host was found to mirror another host.</p>'
    else:
        rows = []
        for item in mirrors[:MAX_MIRRORS]:
            m = _map(item)
            rows.append(
                f'<tr><td class="url">{_isolated(_str(m.get("host")), 200)}</td>'
                f'<td class="url">{_isolated(_str(m.get("mirror_of")), 200)}</td>'
                f"{_num_cell(m.get('pages'))}{_num_cell(m.get('duplicate_pages'))}"
                f"{_share_cell(m.get('duplicate_share'))}</tr>"
            )
        body = (
            '<div class="scroll"><table class="sortable" id="mirror-table"><thead><tr><th>host</th>'
            '<th>mirror of</th><th class="num">pages</th><th class="num" aria-sort="descending">'
            'duplicate pages</th><th class="num">share</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>{_more(len(rows), len(mirrors), 'mirror hosts')}"
        )
    return (
        '<section id="mirrors"><h2>Mirror hosts</h2><p class="sub">Hosts whose pages mostly duplicate '
        f"the pages of one other host.</p>{body}</section>"
    )


def _url_rules_section(report: Mapping[str, Any]) -> str:
    """Each host's duplicate-url rules: the rule, its support, counter-examples, requests saved."""
    section = _map(report.get("url_rules"))
    hosts = _list(section.get("hosts"))
    if not section:
        return ""
    rows = []
    for item in hosts[:MAX_MIRRORS]:
        h = _map(item)
        for rule_item in _list(h.get("rules"))[:20]:
            r = _map(rule_item)
            examples = _list(r.get("examples")) or _list(r.get("counter_example_urls"))
            example = " = ".join(_url(u, 120) for u in _list(examples[0])) if examples else ""
            rows.append(
                f'<tr><td class="url">{_e(_fmt.clip(_str(h.get("host")), 200))}</td>'
                f"<td>{_e(_str(r.get('text')))}</td><td>{'valid' if r.get('valid') else 'candidate'}</td>"
                f"{_num_cell(r.get('support'))}{_num_cell(r.get('counter_examples'))}"
                f'{_num_cell(r.get("saved"))}<td class="url">{example}</td></tr>'
            )
    if not rows:
        body = '<p class="note">No duplicate-url rule was learnt.</p>'
    else:
        body = (
            '<div class="scroll"><table class="sortable" id="url-rules-table"><thead><tr><th>host</th>'
            '<th>rule</th><th>state</th><th class="num">support</th><th class="num">counter-examples</th>'
            '<th class="num" aria-sort="descending">requests saved</th><th>example</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>"
            f"{_more(len(hosts[:MAX_MIRRORS]), _fmt.as_int(section.get('hosts_total')), 'hosts')}"
        )
    return (
        '<section id="url-rules"><h2>Duplicate-url rules</h2><p class="sub">Urls of a host that name one '
        f"page, learnt from the crawl: {_fmt.count(section.get('valid'))} valid rules, "
        f"{_fmt.count(section.get('saved'))} requests not downloaded.</p>{body}</section>"
    )


def _hosts_section(report: Mapping[str, Any]) -> str:
    hosts = _list(report.get("hosts"))
    total = max(_fmt.as_int(report.get("hosts_total")), len(hosts))
    rows = []
    for item in hosts[:MAX_HOSTS]:
        h = _map(item)
        mirror = h.get("mirror_of")
        rows.append(
            f'<tr><td class="url">{_isolated(_str(h.get("host")), 200)}</td>'
            f"{_num_cell(h.get('pages'))}{_num_cell(h.get('unique'))}{_num_cell(h.get('exact'))}"
            f"{_num_cell(h.get('near'))}{_num_cell(h.get('skipped'))}{_share_cell(h.get('duplicate_share'))}"
            f'<td class="url">{_isolated(_str(mirror), 200) if mirror else ""}</td></tr>'
        )
    if not rows:
        body = '<p class="note">No hosts.</p>'
    else:
        body = (
            '<div class="scroll"><table class="sortable" id="host-table"><thead><tr><th>host</th>'
            '<th class="num" aria-sort="descending">pages</th><th class="num">unique</th>'
            '<th class="num">exact</th><th class="num">near</th><th class="num">skipped</th>'
            '<th class="num">duplicate share</th><th>mirror of</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>{_more(len(rows), total, 'hosts')}"
        )
    return (
        f'<section id="hosts"><h2>Hosts</h2><p class="sub">{_fmt.count(total)} hosts, most pages first; '
        f"click a column header to sort.</p>{body}</section>"
    )


def _clusters_section(report: Mapping[str, Any]) -> str:
    clusters = _list(report.get("clusters"))
    total = _fmt.as_int(_map(report.get("totals")).get("clusters"))
    parts = []
    for index, item in enumerate(clusters[:MAX_CLUSTERS]):
        c = _map(item)
        members = _list(c.get("members"))
        size = _fmt.as_int(c.get("size"))
        hosts = [_str(h) for h in _list(c.get("hosts"))]
        rows = []
        for number, member_item in enumerate(members[:MAX_MEMBERS], start=1):
            m = _map(member_item)
            status = _str(m.get("status"))
            badge = f"b-{status}" if status in STATUSES else "b-skipped"
            hamming = m.get("hamming")
            rows.append(
                f'<tr><td class="num">{number}</td><td>{_url(m.get("url"))}</td>'
                f'<td><span class="badge {badge}">{_e(status)}</span></td>'
                f'<td class="num">{_fmt.similarity(m.get("similarity"))}</td>'
                f'<td class="num">{"-" if hamming is None else _e(_fmt.as_int(hamming))}</td></tr>'
            )
        shown_hosts = ", ".join(_isolated(h, 80) for h in hosts[:5]) + (
            f" and {len(hosts) - 5} more" if len(hosts) > 5 else ""
        )
        parts.append(
            f"<details{' open' if index < OPEN_CLUSTERS else ''}><summary>{_fmt.count(size)} pages "
            f'<span class="sub">&middot; {len(hosts)} host{"s" if len(hosts) != 1 else ""} &middot; '
            f"{_isolated(_str(c.get('representative')), 100)}</span></summary>"
            f'<p class="note">Hosts: {shown_hosts}</p><table><thead><tr><th class="num">#</th>'
            '<th>url</th><th>status</th><th class="num">similarity</th><th class="num">Hamming</th>'
            "</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            f"{_more(len(rows), max(size, len(members)), 'members')}</details>"
        )
    if not parts:
        body = '<p class="note">No clusters of two or more pages.</p>'
    else:
        body = "".join(parts) + _more(len(parts), max(total, len(clusters)), "clusters")
    return (
        '<section id="clusters"><h2>Largest clusters</h2><p class="sub">The first page of a cluster is its '
        "representative; similarity is the estimated Jaccard similarity of the main text with it, "
        f"Hamming the SimHash distance.</p>{body}</section>"
    )


def _words(text: str) -> list[str]:
    return text.split()


def _equal_run(words: Sequence[str], first: bool, last: bool) -> str:
    """An unchanged passage, shortened in the middle when it is long."""
    keep = DIFF_CONTEXT_WORDS
    if len(words) <= 2 * keep + 8:
        return _e(" ".join(words))
    if first and last:  # the whole text: show its start
        head, tail = list(words[: 2 * keep]), []
    else:
        head = [] if first else list(words[:keep])
        tail = [] if last else list(words[-keep:])
    hidden = len(words) - len(head) - len(tail)
    gap = f'<span class="gap">[&hellip; {_fmt.count(hidden)} identical words &hellip;]</span>'
    return " ".join(p for p in (_e(" ".join(head)), gap, _e(" ".join(tail))) if p)


def _cut_words(text: str) -> tuple[list[str], bool]:
    """The words of an excerpt, and whether it was cut (its last word may be partial then)."""
    cut = len(text) >= min(EXCERPT_CHARS, MAX_TEXT_CHARS)
    words = text[:MAX_TEXT_CHARS].split()
    if cut and len(words) > 1:
        words.pop()
    return words, cut


def diff_html(a: str, b: str) -> tuple[str, str, bool]:
    """Word-level diff of two texts as two escaped HTML fragments.

    Words only in ``a`` are wrapped in ``<del>``, words only in ``b`` in ``<ins>``; long
    unchanged passages are shortened. Both texts are cut to ``MAX_TEXT_CHARS`` first, so the
    cost is bounded whatever the input. Excerpts end at a fixed length, so when one was cut
    the differences after the last common passage are artefacts of the cut and are left out.

    Args:
        a: the first text (the representative).
        b: the second text (the duplicate).

    Returns:
        ``(html_a, html_b, differs)``; ``differs`` is False when the shown texts are equal.
    """
    (wa, cut_a), (wb, cut_b) = _cut_words(a), _cut_words(b)
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    opcodes = matcher.get_opcodes()
    cut = cut_a or cut_b
    if cut and any(op[0] == "equal" for op in opcodes):
        while opcodes and opcodes[-1][0] != "equal":
            opcodes.pop()
    out_a: list[str] = []
    out_b: list[str] = []
    differs = False
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        first, last = index == 0, index == len(opcodes) - 1
        if tag == "equal":
            whole = len(opcodes) == 1
            run = _equal_run(wa[i1:i2], first, whole or (last and not cut))
            out_a.append(run)
            out_b.append(run)
            continue
        differs = True
        if i2 > i1:
            out_a.append(f"<del>{_e(' '.join(wa[i1:i2]))}</del>")
        if j2 > j1:
            out_b.append(f"<ins>{_e(' '.join(wb[j1:j2]))}</ins>")
    if cut:
        end = '<span class="gap">[&hellip; excerpt ends &hellip;]</span>'
        out_a.append(end)
        out_b.append(end)
    return " ".join(out_a), " ".join(out_b), differs


def _examples_section(report: Mapping[str, Any]) -> str:
    examples = _list(report.get("examples"))
    parts = []
    for item in examples[:MAX_EXAMPLES]:
        ex = _map(item)
        a, b = _map(ex.get("a")), _map(ex.get("b"))
        html_a, html_b, differs = diff_html(_str(a.get("text")), _str(b.get("text")))
        hamming = ex.get("hamming")
        facts = f"similarity {_fmt.similarity(ex.get('similarity'))}"
        if hamming is not None:
            facts += f" &middot; Hamming {_e(_fmt.as_int(hamming))}"
        if not differs:
            facts += " &middot; the excerpts are the same: the pages differ further on"
        status = _str(ex.get("status"))
        badge = f"b-{status}" if status in STATUSES else "b-skipped"
        parts.append(
            f'<div class="example"><p class="sub"><span class="badge {badge}">{_e(status)}</span> {facts}</p>'
            '<div class="pair"><div><h3>A &middot; representative &middot; '
            f'{_url(a.get("url"), 120)}</h3><div class="text">{html_a}</div></div>'
            "<div><h3>B &middot; duplicate &middot; "
            f'{_url(b.get("url"), 120)}</h3><div class="text">{html_b}</div></div></div></div>'
        )
    if not parts:
        body = '<p class="note">No near-duplicate examples were recorded.</p>'
    else:
        body = "".join(parts) + _more(len(parts), len(examples), "examples")
    return (
        '<section id="examples"><h2>Near-duplicate pairs</h2><p class="sub">Main-content text of both '
        "pages (excerpts); <del>struck</del> words appear only in A, <ins>highlighted</ins> words only "
        f"in B.</p>{body}</section>"
    )


def _params_block(params: Mapping[str, Any]) -> str:
    items = list(params.items())[:MAX_PARAMS]
    rows = "".join(
        f"<dt>{_e(_fmt.clip(_str(k), 60))}</dt>"
        f"<dd>{_e(_fmt.clip(repr(v) if isinstance(v, str) else _str(v), 200))}</dd>"
        for k, v in items
    )
    return f'<details><summary>Parameters</summary><dl class="params">{rows}</dl></details>'


def _header(report: Mapping[str, Any]) -> str:
    params = _map(report.get("params"))
    tool = _map(report.get("tool"))
    key_params: Iterable[tuple[str, Any]] = (
        (name, params[name])
        for name in ("threshold", "algorithm", "num_perm", "shingle_size", "min_tokens", "scope")
        if name in params
    )
    summary = ", ".join(f"{name} {_str(value)}" for name, value in key_params)
    return (
        "<header><h1>Near-duplicate report</h1>"
        f'<p class="sub">Generated {_e(_str(report.get("generated_at")))} by '
        f"{_e(_str(tool.get('name')) or 'neardup-scrapy')} {_e(_str(tool.get('version')))}"
        f"{' &middot; ' + _e(summary) if summary else ''}</p></header>"
    )


def render_html(report: Mapping[str, Any]) -> str:
    """Render a report as one self-contained HTML page (no network access needed or made).

    The report should be valid (see :func:`neardup_scrapy.report.schema.validate_report`);
    missing or odd fields are shown as empty rather than failing.

    Args:
        report: a ``neardup-report/1`` report.

    Returns:
        The HTML document.
    """
    totals = _map(report.get("totals"))
    title = f"neardup report: {_fmt.count(totals.get('pages'))} pages"
    main = "".join(
        (
            _totals_section(report),
            '<div class="grid2">',
            _histogram_section(report),
            _top_hosts_section(report),
            "</div>",
            _mirrors_section(report),
            _url_rules_section(report),
            _hosts_section(report),
            _clusters_section(report),
            _examples_section(report),
        )
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>{_header(report)}\n"
        f"<main>{main}</main>\n<footer>{_params_block(_map(report.get('params')))}"
        f"<p>Format {_e(_str(report.get('format')))}. This page is self-contained and loads nothing "
        f"from the network.</p></footer>\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )
