"""Render a ``neardup-report/1`` report as one self-contained HTML page.

The page needs nothing but itself: CSS and the SVG charts are inline, there are no fonts,
images or scripts from elsewhere, and a Content-Security-Policy forbids any request. A small
inline script sorts the tables when a header is clicked; everything else works without it.

Every string of the report (urls, hosts, page texts) is untrusted and escaped. Urls and hosts
are isolated left to right (``<bdi dir="ltr">``) and their invisible characters -- controls,
bidi overrides, isolates and marks, zero-width characters (see
:mod:`~neardup_scrapy.report.escapes`) -- are shown as escapes (``\\u202e``, marked and
named on hover), so a link to ``…\\u202etxt.exe`` cannot read ``…exe.txt``; in a link's target
they are percent-encoded. The renderer caps every list again (see the ``MAX_*`` constants
here, in :mod:`.html_cells` and in :mod:`.html_diff`), so even an oversized report gives a page
of bounded size; the near-pair diff (:mod:`.html_diff`) works on excerpts of at most
``MAX_TEXT_CHARS``; the charts are drawn by :mod:`.html_charts`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from . import _fmt
from .html_cells import (
    _e,
    _isolated,
    _list,
    _map,
    _more,
    _num_cell,
    _share_cell,
    _str,
    _url,
)
from .html_charts import _composition_svg, _histogram_svg, _top_hosts_svg
from .html_diff import diff_html
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
#: Parameters listed.
MAX_PARAMS = 60


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
