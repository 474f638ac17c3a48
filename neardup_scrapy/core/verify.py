"""When two pages are near-duplicates: the rule applied to every candidate the index returns.

Candidates come from shared MinHash bands or SimHash blocks; none is trusted until it passes,
with ``J`` the Jaccard similarity of the pages' 5-word shingles -- computed exactly between two
short pages (their profiles keep their tokens), else estimated by MinHash -- and ``T`` the
threshold (0.8 by default). What makes two pages one document, whatever the site: the same
thing named, and enough of the same text to show it.

0. **What the page is** (:meth:`PairRule.identity`): pages whose names differ (heading with
   heading, title with title; :func:`~.native.sketch.names_relation`), or which one site names
   differently in their addresses (:func:`addresses_differ`), are different documents, unless
   their texts are the same beyond doubt (:meth:`PairRule.beyond_doubt`); names that differ in
   a number alone (another release, part or chapter) never give way. Identical texts too.
1. **Near-identical**: ``J >= T + 3 (1 - T) / 4`` (0.95).
2. **Another release of the same document**: the urls differ only in numbers, a version number
   among them (``/v2.66/`` and ``/v2.74/``, ``/gtk2/2.24/`` and ``/gtk3/3.24/``), and
   ``J >= T``; checked before rule 0, since a release names itself with its version.
3. **Different headings, different documents**: rule 0, for every rule below.
4. **Resemblance**: ``J >= T``.
5. **An edited copy** (:meth:`PairRule.edited`): ``J >= max(0.3, T - 0.3)`` (0.5) and the texts
   differ in at most three places, each mostly inserted or deleted text (a dateline, a counter,
   a notice, a paragraph added or removed), as aligned by the pages' edit sketches; or in at
   most two places of any kind (a paragraph rewritten) that hold at most 40% of either text and
   do not swap a word or two for a word or two (a substituted name). A page too short to identify
   a document (``IDENTITY_TOKENS``) at another address is an edited copy only when it is held
   whole in the other, and never a revised one. Two releases of one document pass only as
   inserted or deleted passages and only at ``J >= T - sqrt(T (1 - T) / k)`` (0.765: ``T``
   within one standard error of the estimate), or ``J >= T`` when ``J`` is exact.
6. **Another view of the same address**: the urls differ only in their query or fragment (a
   print view, a session or tracking parameter, a sort order) and the shorter text is
   contained in the longer: ``C = |A & B| / min(|A|, |B|) >= T``, with the shingle sets'
   intersection estimated from ``J`` and their sizes, ``|A & B| = J (|A| + |B|) / (1 + J)``.
   A query selects a view of one resource; a view that holds part of it (a print view of the
   article body alone, a page with a notice added) is the resource, not another document.
   Texts too short for shingles to measure this (a page of a few words: a generated page
   whose title is all its text) are measured by their edit sketches instead: the share of the
   shorter text's tokens that the alignment finds, in order, in the longer one.

Pages with fewer than ``min_tokens`` tokens are matched only exactly, or as another view of
their own address (rule 6, measured by alignment). With
``algorithm="simhash"`` rule 4 reads "Hamming distance ``<= simhash_distance``" instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .native.sketch import (
    NAMES_AGREE,
    NAMES_DIFFER_IN_NUMBERS,
    edit_regions,
    exact_similarity,
    names_relation,
    profile_tokens,
)
from .params import DetectorParams
from .sketch import resource_of

#: Edited copies differ in at most this many places.
MAX_EDIT_REGIONS = 3
#: Revised copies (a passage rewritten rather than added or removed) in at most this many.
MAX_REVISED_REGIONS = 2
#: ... holding at most this share of either text: most of a revised copy is unchanged, in order
#: (text rewritten throughout aligns as one place that holds all of it).
MAX_REVISED_SHARE = 0.4
#: A version number: digits joined by dots (``2.24``, ``3.19.3``), or digits after a ``v`` (``v2``).
_VERSION_RE = re.compile(r"(?<![\w.])[vV]?\d+(?:\.\d+)+|(?<![^\W\d_])[vV]\d+\b")
_DIGITS_RE = re.compile(r"\d+")
#: Texts shorter than this many tokens do not identify a document by themselves: what two such
#: pages of one site share is mostly template, and their names tell them apart (a generated page
#: of a few dozen words is its heading and a sentence or two).
IDENTITY_TOKENS = 50
#: Standard errors by which a similarity estimate must clear a bound to be beyond doubt.
_CONFIDENCE_Z = 2.0
_INDEX_RE = re.compile(r"(?:index|default)(?:\.\w+)?", re.IGNORECASE)
_EXTENSION_RE = re.compile(r"\.(?:s?html?|xhtml|php\d?|aspx?|jsp|cgi)$", re.IGNORECASE)
_WORD_RE = re.compile(r"[^\W_]+")


def release_key(url: str) -> tuple[str, str] | None:
    """``(host, path with its numbers blanked)`` when the path holds a version number (see
    ``_VERSION_RE``), else ``None``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    path = parts.path
    if not _VERSION_RE.search(path):
        return None
    return (parts.netloc.lower(), _DIGITS_RE.sub("#", path))


def other_release(url_a: str, url_b: str) -> bool:
    """Whether two urls name one document at two releases: their paths differ only in numbers of
    their directories, and a version number among them differs (``/gtk2/2.24/`` and
    ``/gtk3/3.24/``, ``/v2.66/`` and ``/v2.74/``, ``gcc-11.3.0`` and ``gcc-12.2.0``; not
    ``/page/2`` and ``/page/3``, nor ``release-1.9.2.html`` and ``release-1.8.2.html``: a version
    in the page's own name is what the page is about). A query added to one path is a view of
    the same release (rule 6)."""
    try:
        path_a, path_b = urlsplit(url_a).path, urlsplit(url_b).path
    except ValueError:
        return False
    if path_a == path_b or path_a.rstrip("/").rsplit("/", 1)[-1] != path_b.rstrip("/").rsplit("/", 1)[-1]:
        return False  # a version in the page's own name (release notes of 1.9.2) names what it is about
    key = release_key(url_a)
    if key is None or key != release_key(url_b):
        return False
    return _VERSION_RE.findall(path_a) != _VERSION_RE.findall(path_b)


def address_path(url: str) -> tuple[str, list[str]] | None:
    """``(host, path segments)`` of a url as a site names its pages: lower-cased, without path
    parameters (``;jsessionid=...``), empty segments or a final index file (``index.html``: its
    directory names it). ``None`` for an unreadable url."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    segments = [segment.split(";", 1)[0].lower() for segment in parts.path.split("/")]
    segments = [segment for segment in segments if segment]
    while segments and _INDEX_RE.fullmatch(segments[-1]):
        segments.pop()
    return parts.netloc.lower(), segments


def _name_words(segment: str) -> frozenset[str]:
    """The words of a path segment, without its file extension and without numbers: a number in
    an address is a key (an article id, a page number), and a site may keep one document under
    two keys, while the words of a path are the name it chose."""
    return frozenset(word for word in _WORD_RE.findall(_EXTENSION_RE.sub("", segment)) if not word.isdigit())


def _subsequence(short: list[str], long: list[str]) -> bool:
    """Whether the segments ``short`` appear in ``long`` in order."""
    remaining = iter(long)
    return all(segment in remaining for segment in short)


def addresses_differ(url_a: str, url_b: str) -> bool:
    """Whether one site names two pages differently in their addresses.

    Same host; neither path holds the other's segments in order (a view of a document adds
    segments around its path: ``/amp/...``, ``.../amp``, ``/print/...``, ``/_cache/<key>/...``);
    and neither last segment's words hold the other's, numbers aside (``method.Dialog.response``
    and ``vfunc.Dialog.response`` differ; ``story`` and ``story.amp``, ``/news/story`` and
    ``/sport/story``, ``/article/123`` and ``/article/124`` do not).
    """
    a, b = address_path(url_a), address_path(url_b)
    if a is None or b is None or a[0] != b[0]:
        return False
    path_a, path_b = a[1], b[1]
    if _subsequence(path_a, path_b) or _subsequence(path_b, path_a):
        return False
    words_a = _name_words(path_a[-1]) if path_a else frozenset()
    words_b = _name_words(path_b[-1]) if path_b else frozenset()
    return not (words_a <= words_b or words_b <= words_a)


@dataclass(frozen=True)
class EditPlaces:
    """Where two texts differ, as aligned by their edit sketches (see :func:`edit_places`).

    Attributes:
        count: the places (maximal runs of one text missing from the other).
        inserts_only: every place is an insertion or a deletion.
        changed: the larger of the two texts' shares held by the places.
        shorter_kept: the shorter text is held whole, in order, in the longer (its side of every
            place is empty: only text was added to it).
        swapped_words: a place puts a word or two in place of a word or two (two short pages
            aligned token by token): a substituted name, not a rewritten passage.
    """

    count: int
    inserts_only: bool
    changed: float
    shorter_kept: bool
    swapped_words: bool


def edit_places(profile_a: bytes, profile_b: bytes) -> EditPlaces | None:
    """Where two texts differ, as aligned by their edit sketches; ``None`` when the texts are too
    different in length to be aligned.

    A place is an insertion or deletion when what it holds on the smaller side is no more than
    the context around the edit point -- about two chunks, whose boundaries the inserted text
    moved -- next to the text added on the larger side: ``min(a, b) <= |a - b| + 2 chunks``
    with at least 2 tokens added, or when the two sides differ by at least half of the larger
    one.
    """
    aligned = edit_regions(profile_a, profile_b)
    if aligned is None:
        return None
    level, regions = aligned
    context = 2 << level  # two average chunks
    inserts_only = True
    for a, b in regions:
        grown = abs(a - b)
        if grown * 2 < max(a, b) and not (grown >= 2 and min(a, b) <= grown + context):
            inserts_only = False
    totals = (profile_tokens(profile_a), profile_tokens(profile_b))
    changed = max(
        (sum(region[side] for region in regions) / totals[side] for side in (0, 1) if totals[side]),
        default=0.0,
    )
    shorter = 0 if totals[0] <= totals[1] else 1
    return EditPlaces(
        count=len(regions),
        inserts_only=inserts_only,
        changed=changed,
        shorter_kept=not any(region[shorter] for region in regions),
        swapped_words=level == 0 and any(1 <= a <= 2 and 1 <= b <= 2 for a, b in regions),
    )


def held_in_order(profile_a: bytes, profile_b: bytes) -> float:
    """Share of the shorter text's tokens that the edit-sketch alignment matches, in order, in
    the longer text (containment measured without shingles: usable for texts of a few words);
    0 when the texts cannot be aligned."""
    aligned = edit_regions(profile_a, profile_b)
    if aligned is None:
        return 0.0
    totals = (profile_tokens(profile_a), profile_tokens(profile_b))
    side = 0 if totals[0] <= totals[1] else 1
    if not totals[side]:
        return 0.0
    return max(0.0, 1.0 - sum(region[side] for region in aligned[1]) / totals[side])


#: Names of the rules a pair can pass by (README, "How it works", step 5): the ``rule`` of a
#: verdict's explanation.
RULE_EXACT = "exact"  # identical main text (the representative's)
RULE_MEMBER_COPY = "member-copy"  # identical main text to a member of the cluster
RULE_NEAR_IDENTICAL = "near-identical"  # rule 1
RULE_RELEASE = "release"  # rule 2
RULE_RESEMBLANCE = "resemblance"  # rule 4
RULE_EDITED = "edited"  # rule 5, inserted or deleted passages
RULE_REVISED = "revised"  # rule 5, rewritten passages
RULE_VIEW = "view"  # rule 6
RULES = (
    RULE_EXACT,
    RULE_MEMBER_COPY,
    RULE_NEAR_IDENTICAL,
    RULE_RELEASE,
    RULE_RESEMBLANCE,
    RULE_EDITED,
    RULE_REVISED,
    RULE_VIEW,
)


@dataclass(frozen=True)
class Passed:
    """Why a pair is one document: the rule it passed (one of ``RULES``) and a short sentence."""

    rule: str
    text: str

    def __str__(self) -> str:
        return self.text


def measured_similarity(estimate: float, profile_a: bytes, profile_b: bytes, shingle_size: int) -> float:
    """The similarity verdicts use: exact for two short pages (their profiles keep their tokens),
    else the MinHash estimate."""
    if profile_a and profile_b:
        exact = exact_similarity(profile_a, profile_b, shingle_size)
        if exact >= 0.0:
            return exact
    return estimate


class PairRule:
    """The near-duplicate rule (module docstring) for one set of :class:`DetectorParams`."""

    def __init__(self, params: DetectorParams) -> None:
        self.params = params
        self.threshold = params.threshold
        self.strict = params.strict_threshold
        self.edit_floor = params.edit_floor
        self.release_floor = params.release_floor

    def identity(self, similarity: float, *, profiles: tuple[bytes, bytes], urls: tuple[str, str]) -> bool:
        """Whether two pages may be one document as far as their names go (rule 0).

        Pages whose names differ (:func:`~.native.sketch.names_relation`), or which one site
        names differently in their addresses (:func:`addresses_differ`), are different
        documents, unless their texts are the same beyond doubt: each long enough to identify a
        document (``IDENTITY_TOKENS``) and ``J >= strict`` exactly (short pages) or by an
        estimate that clears it by two standard errors (the same item published under two
        names). Names that differ in a number alone (another release, part or chapter) are never
        overruled by the text: the number is what the page is.
        """
        profile_a, profile_b = profiles
        relation = names_relation(profile_a, profile_b) if profile_a and profile_b else NAMES_AGREE
        if relation == NAMES_AGREE and not addresses_differ(*urls):
            return True
        if relation == NAMES_DIFFER_IN_NUMBERS:
            return False
        return self.beyond_doubt(similarity, profile_a, profile_b)

    def beyond_doubt(self, similarity: float, profile_a: bytes, profile_b: bytes) -> bool:
        """Whether two texts are the same beyond doubt (see :meth:`identity`)."""
        if not (profile_a and profile_b):
            return False
        if min(profile_tokens(profile_a), profile_tokens(profile_b)) < IDENTITY_TOKENS:
            return False
        if exact_similarity(profile_a, profile_b, self.params.shingle_size) >= 0.0:
            return similarity >= self.strict  # measured exactly (short pages)
        error = math.sqrt(max(similarity * (1.0 - similarity), 0.0) / self.params.num_perm)
        return similarity - _CONFIDENCE_Z * error >= self.strict

    def judge(
        self,
        similarity: float,
        hamming: int,
        *,
        profiles: tuple[bytes, bytes],
        urls: tuple[str, str],
    ) -> Passed | None:
        """Why page A is a near-duplicate of page B (a short reason), or ``None`` when it is not.

        ``profiles`` and ``urls`` are those of A and B; ``similarity`` their estimated Jaccard,
        ``hamming`` their SimHash distance.
        """
        profile_a, profile_b = profiles
        url_a, url_b = urls
        simhash_mode = self.params.algorithm == "simhash"
        close = hamming <= self.params.simhash_distance if simhash_mode else similarity >= self.threshold
        if close and other_release(url_a, url_b):
            return Passed(RULE_RELEASE, f"J~{similarity:.2f}: the same document at another release")
        if not self.identity(similarity, profiles=profiles, urls=urls):
            return None
        if not simhash_mode and similarity >= self.strict:
            return Passed(RULE_NEAR_IDENTICAL, f"J~{similarity:.2f}: near-identical text")
        if close:
            if simhash_mode:
                return Passed(RULE_RESEMBLANCE, f"H={hamming}: same heading, close fingerprints")
            return Passed(RULE_RESEMBLANCE, f"J~{similarity:.2f}: same heading, similar text")
        if not simhash_mode and profile_a and profile_b:
            why = self.edited(
                similarity,
                profile_a,
                profile_b,
                releases=other_release(url_a, url_b),
                same_address=resource_of(url_a) == resource_of(url_b),
            )
            if why is not None:
                return why
        if simhash_mode:
            return None
        return self.view(similarity, profiles=profiles, urls=urls)

    def edited(
        self, similarity: float, profile_a: bytes, profile_b: bytes, *, releases: bool, same_address: bool
    ) -> Passed | None:
        """Rule 5: why page A is an edited or revised copy of page B, or ``None``.

        The floor is ``edit_floor``; for two releases of one document, ``T`` less the estimate's
        standard error (``release_floor``), or ``T`` itself when the similarity was measured
        exactly (short pages: no error to allow for). A page shorter than ``IDENTITY_TOKENS`` at
        another address is an edited copy only when it is held whole in the other (text added to
        it, none of its few words changed: they are its identity), and never a revised one (two
        views of one address are one document whatever their edits: the address says so); a
        revised copy rewrites passages, it does not swap a word or two (a substituted name).
        """
        exact = exact_similarity(profile_a, profile_b, self.params.shingle_size) >= 0.0
        floor = (self.threshold if exact else self.release_floor) if releases else self.edit_floor
        if similarity < floor:
            return None
        places = edit_places(profile_a, profile_b)
        if places is None:
            return None
        tiny = (
            not same_address and min(profile_tokens(profile_a), profile_tokens(profile_b)) < IDENTITY_TOKENS
        )
        if places.inserts_only and places.count <= MAX_EDIT_REGIONS and (places.shorter_kept or not tiny):
            return Passed(
                RULE_EDITED,
                f"J~{similarity:.2f}: an edited copy ({places.count} inserted or deleted passage(s))",
            )
        revised = (
            places.count <= MAX_REVISED_REGIONS
            and places.changed <= MAX_REVISED_SHARE
            and not (tiny or places.swapped_words or releases)
        )
        if revised:
            return Passed(
                RULE_REVISED, f"J~{similarity:.2f}: a revised copy ({places.count} rewritten passage(s))"
            )
        return None

    def view(
        self, similarity: float, *, profiles: tuple[bytes, bytes], urls: tuple[str, str]
    ) -> Passed | None:
        """Why page A is another view of B's address (rule 3, then rule 6), or ``None``: the rule
        a page too short for shingles is held to, and the last one :meth:`judge` tries."""
        profile_a, profile_b = profiles
        url_a, url_b = urls
        if url_a == url_b or resource_of(url_a) != resource_of(url_b) or not (profile_a and profile_b):
            return None
        if names_relation(profile_a, profile_b) != NAMES_AGREE:
            return None
        held = self.containment(similarity, profile_tokens(profile_a), profile_tokens(profile_b))
        if held < self.threshold:  # too short for shingles, or a view holding less of them
            held = max(held, held_in_order(profile_a, profile_b))
        if held >= self.threshold:
            return Passed(
                RULE_VIEW,
                f"J~{similarity:.2f}: another view of the same address ({held:.0%} of the shorter text)",
            )
        return None

    def containment(self, similarity: float, tokens_a: int, tokens_b: int) -> float:
        """Share of the smaller shingle set inside the larger, estimated from ``J`` and the
        sets' sizes (one shingle per token after the first ``shingle_size - 1``); 0 when a
        text is too short to have shingles of its own."""
        size_a = tokens_a - self.params.shingle_size + 1
        size_b = tokens_b - self.params.shingle_size + 1
        if min(size_a, size_b) < self.params.min_tokens:
            return 0.0
        shared = similarity * (size_a + size_b) / (1.0 + similarity)
        return min(1.0, shared / min(size_a, size_b))
