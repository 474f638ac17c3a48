"""The word diff of a near pair in the HTML report (see :mod:`.html`)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from . import _fmt
from .html_cells import _e

#: Characters of main text the detector keeps per example page; a text this long was cut.
EXCERPT_CHARS = 2000
#: Characters of each example text that are compared and shown.
MAX_TEXT_CHARS = 4000
#: Equal passages longer than this many words are shortened in the diff view.
DIFF_CONTEXT_WORDS = 24


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
