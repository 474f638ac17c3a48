"""Detector parameters: one frozen dataclass, validated once, recorded in persisted stores."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

ALGORITHMS = ("both", "minhash", "simhash")
SCOPES = ("global", "host")
SHINGLE_KINDS = ("word", "char")

#: DetectorParams field -> the Scrapy setting that sets it (``neardup-scrapy scan -s`` reads the
#: same names).
PARAM_SETTINGS = {
    "threshold": "NEARDUP_THRESHOLD",
    "algorithm": "NEARDUP_ALGORITHM",
    "num_perm": "NEARDUP_NUM_PERM",
    "shingle_size": "NEARDUP_SHINGLE_SIZE",
    "shingle_kind": "NEARDUP_SHINGLE_KIND",
    "simhash_distance": "NEARDUP_SIMHASH_DISTANCE",
    "min_tokens": "NEARDUP_MIN_TOKENS",
    "scope": "NEARDUP_SCOPE",
    "max_text_chars": "NEARDUP_MAX_TEXT_CHARS",
    "mask_digits": "NEARDUP_MASK_DIGITS",
    "mask_dates": "NEARDUP_MASK_DATES",
    "seed": "NEARDUP_SEED",
    "bands": "NEARDUP_LSH_BANDS",
    "rows": "NEARDUP_LSH_ROWS",
    "mirror_min_pages": "NEARDUP_MIRROR_MIN_PAGES",
    "mirror_share": "NEARDUP_MIRROR_SHARE",
    "ttl": "NEARDUP_TTL",
    "timeout": "NEARDUP_TIMEOUT",
    "max_work": "NEARDUP_MAX_WORK",
}

#: Bumped whenever hashing, shingling or key layout changes, so an old store refuses to open.
HASH_SCHEME = (
    "native-v1:mr64/seed;tokens-nfkc-nospace-chars-dates;names-qualified-joined;minhash-oph-densified-b8;"
    "simhash-bytelanes;keys-u64/v4"
)
#: Bumped whenever the stored record changes (v2: page profiles, url keys, mirror evidence; v3:
#: profiles keep short pages' tokens and mark numbers in names).
FORMAT_VERSION = 3
#: Work units a page's pass may count by default (``max_work``; see :class:`DetectorParams`).
#: Every step of the pass is linear in the page, so a page's work grows with its size: the pages
#: of the labelled sets cost 1.4 units per byte of HTML (median; at most 4, at most 1.5 million
#: units a page), the costliest flood of tiny nested headings 20. So this default checks any
#: page up to 1 MB however it is made, a real page up to several MB, and stops a check at about
#: 0.2 to 0.3 s of CPU on the machine that measured it (``benchmarks/bench_budget.py``).
DEFAULT_MAX_WORK = 25_000_000


class ParameterError(ValueError):
    """A detector parameter has an invalid value; the message names it and what it accepts."""


def lsh_collision_probability(similarity: float, bands: int, rows: int) -> float:
    """Probability that a pair with Jaccard ``s`` shares at least one MinHash band.

    With ``b`` bands of ``r`` rows, ``P(s) = 1 - (1 - s**r)**b`` (the LSH S-curve).
    """
    return 1.0 - (1.0 - similarity**rows) ** bands


def choose_bands(threshold: float, num_perm: int, min_recall: float = 0.97) -> tuple[int, int]:
    """Choose ``(bands, rows)`` with ``bands * rows <= num_perm`` for a Jaccard ``threshold``.

    Candidates are always verified on the full signature, so a false candidate costs only a
    comparison while a missed one is lost for good. We therefore take, among all splits, the
    one with the fewest expected false candidates (the area under the S-curve below
    ``threshold - 0.2``) whose collision probability at ``threshold - 0.05`` is at least
    ``min_recall``. Pairs whose *estimate* lands just above the threshold while their true
    Jaccard is a little below it are thereby still found. datasketch's choice at 128
    permutations and 0.8 (b=9, r=13) gives ``P(0.8) ~ 0.40``; ours gives ``P(0.8) > 0.999``.

    Args:
        threshold: Jaccard similarity at and above which two pages are near-duplicates.
        num_perm: number of MinHash values per signature.
        min_recall: wanted collision probability just below the threshold.

    Returns:
        ``(bands, rows)``.
    """
    target = max(threshold - 0.05, 0.05)
    low = max(threshold - 0.2, 0.0)
    best: tuple[float, int, int] | None = None
    fallback: tuple[float, int, int] | None = None
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if bands < 1:
            break
        recall = lsh_collision_probability(target, bands, rows)
        # Expected false candidates: mean collision probability over s in [0, low].
        steps = 50
        false_area = (
            sum(lsh_collision_probability(low * (i + 0.5) / steps, bands, rows) for i in range(steps)) / steps
        )
        if recall >= min_recall and (best is None or false_area < best[0]):
            best = (false_area, bands, rows)
        if fallback is None or recall > fallback[0]:
            fallback = (recall, bands, rows)
    chosen = best or fallback
    assert chosen is not None
    return chosen[1], chosen[2]


@dataclass(frozen=True)
class DetectorParams:
    """Everything that decides a verdict. Frozen, validated on creation.

    Attributes:
        threshold: Jaccard similarity (estimated by MinHash) for a near-duplicate.
        algorithm: ``"both"`` (candidates from both indexes), ``"minhash"`` or ``"simhash"``.
        num_perm: MinHash signature length.
        shingle_size: words (or characters, with ``shingle_kind="char"``) per shingle.
        shingle_kind: ``"word"`` or ``"char"`` (for languages written without spaces).
        simhash_distance: SimHash block tables find candidates within this many bits (0..8).
        min_tokens: pages with fewer tokens are matched only exactly (or as another view of their own
            address: verification rule 6).
        scope: ``"global"`` compares all pages; ``"host"`` only pages of one host.
        max_text_chars: main text is cut at this many characters.
        mask_digits: replace every digit by ``0`` (off: numbers are content; see ``mask_dates``).
        mask_dates: replace the digits of calendar dates and times of day by ``0`` (they change
            between two fetches of one page).
        seed: seed of every hash; part of the persisted parameters.
        bands, rows: MinHash LSH banding; 0 means chosen from the edit floor (see
            :func:`choose_bands` and :attr:`edit_floor`).
        mirror_min_pages: pages of a host that must share clusters with another host before the
            pair can be named a mirror and its origin.
        mirror_share: share of a host's pages that must duplicate other hosts' pages for the
            host to be a mirror.
        ttl: seconds after which an indexed page is forgotten (``None``: never).
        max_work: work units the per-page pass may count (0: no limit); a page past them is
            skipped (``too much work``). Counted, not timed, so the same page gets the same
            verdict on any machine under any load: a byte of visible text costs 1 unit, a
            visible element 32, a token 4, each visit of an element by a decision after the walk
            1 (about the CPU time of one byte of text, a few nanoseconds; see
            :data:`DEFAULT_MAX_WORK`).
        timeout: CPU seconds of the checking thread the page's parse and pass may take, a safety
            net behind ``max_work`` for the work that is not counted (decoding, parsing markup
            that yields no visible element); a page past it is skipped (``timeout``). CPU time,
            not wall-clock time: it does not run while other processes hold the cores.
    """

    threshold: float = 0.8
    algorithm: str = "both"
    num_perm: int = 128
    shingle_size: int = 5
    shingle_kind: str = "word"
    simhash_distance: int = 3
    min_tokens: int = 10
    scope: str = "global"
    max_text_chars: int = 500_000
    mask_digits: bool = False
    mask_dates: bool = True
    seed: int = 1
    bands: int = 0
    rows: int = 0
    mirror_min_pages: int = 5
    mirror_share: float = 0.5
    ttl: float | None = None
    timeout: float = 1.0
    max_work: int = DEFAULT_MAX_WORK
    _derived: tuple[int, int] = field(default=(0, 0), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check(0.0 < self.threshold <= 1.0, "threshold", "a number in (0, 1]")
        self._check(self.algorithm in ALGORITHMS, "algorithm", f"one of {', '.join(ALGORITHMS)}")
        self._check(
            isinstance(self.num_perm, int) and 16 <= self.num_perm <= 1024, "num_perm", "an integer 16..1024"
        )
        self._check(
            isinstance(self.shingle_size, int) and 1 <= self.shingle_size <= 32,
            "shingle_size",
            "an integer 1..32",
        )
        self._check(self.shingle_kind in SHINGLE_KINDS, "shingle_kind", "'word' or 'char'")
        self._check(
            isinstance(self.simhash_distance, int) and 0 <= self.simhash_distance <= 8,
            "simhash_distance",
            "an integer 0..8",
        )
        self._check(
            isinstance(self.min_tokens, int) and self.min_tokens >= 0, "min_tokens", "an integer >= 0"
        )
        self._check(self.scope in SCOPES, "scope", "'global' or 'host'")
        self._check(
            isinstance(self.max_text_chars, int) and self.max_text_chars >= 100,
            "max_text_chars",
            "an integer >= 100",
        )
        self._check(isinstance(self.seed, int) and 0 <= self.seed < 2**32, "seed", "an integer 0..2**32-1")
        self._check(
            isinstance(self.mirror_min_pages, int) and self.mirror_min_pages >= 1,
            "mirror_min_pages",
            "an integer >= 1",
        )
        self._check(0.0 < self.mirror_share <= 1.0, "mirror_share", "a number in (0, 1]")
        self._check(self.ttl is None or self.ttl > 0, "ttl", "a positive number of seconds or None")
        self._check(
            isinstance(self.timeout, (int, float)) and 0 < self.timeout <= 600,
            "timeout",
            "a number of seconds in (0, 600]",
        )
        self._check(
            isinstance(self.max_work, int) and not isinstance(self.max_work, bool) and self.max_work >= 0,
            "max_work",
            "an integer >= 0 (0: no limit)",
        )
        if self.bands or self.rows:
            self._check(
                self.bands >= 1 and self.rows >= 1 and self.bands * self.rows <= self.num_perm,
                "bands",
                "bands >= 1, rows >= 1 and bands * rows <= num_perm",
            )
            derived = (self.bands, self.rows)
        else:
            derived = choose_bands(self.edit_floor + 0.15, self.num_perm)
        object.__setattr__(self, "_derived", derived)

    @staticmethod
    def _check(ok: bool, name: str, accepts: str) -> None:
        if not ok:
            raise ParameterError(f"invalid detector parameter {name!r}: expected {accepts}")

    @property
    def strict_threshold(self) -> float:
        """Similarity at which two pages are near-duplicates whatever their headings or edits:
        ``T + 3 (1 - T) / 4`` (0.95 at ``T = 0.8``)."""
        return self.threshold + 0.75 * (1.0 - self.threshold)

    @property
    def edit_floor(self) -> float:
        """Lowest similarity at which an edited copy (a few inserted or deleted passages) is a
        near-duplicate: ``max(0.3, T - 0.3)`` (0.5 at ``T = 0.8``)."""
        return max(0.3, self.threshold - 0.3)

    @property
    def release_floor(self) -> float:
        """Lowest similarity at which two releases of one document pass as an edited copy:
        ``T`` less one standard error of the MinHash estimate there, ``T - sqrt(T (1 - T) / k)``
        (0.765 at ``T = 0.8``, ``k = 128``). Releases differ by edits by nature; whether they
        are one document is how much they changed (``J >= T``), as far as the estimate can tell."""
        return self.threshold - math.sqrt(self.threshold * (1.0 - self.threshold) / self.num_perm)

    @property
    def lsh_bands(self) -> int:
        """Number of MinHash LSH bands in use."""
        return self._derived[0]

    @property
    def lsh_rows(self) -> int:
        """Rows (MinHash values) per band in use."""
        return self._derived[1]

    def as_dict(self) -> dict[str, Any]:
        """All parameters, JSON-serialisable, with the derived banding."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        data["bands"], data["rows"] = self._derived
        return data

    def index_signature(self) -> dict[str, Any]:
        """Parameters a persisted index depends on; a store refuses to open when they differ."""
        data = self.as_dict()
        for volatile in (
            "mirror_min_pages",
            "mirror_share",
            "ttl",
            "max_text_chars",
            "algorithm",
            "timeout",
            "max_work",
        ):
            data.pop(volatile)
        data["hash_scheme"] = HASH_SCHEME
        data["format_version"] = FORMAT_VERSION
        return data


def describe_banding(params: DetectorParams) -> str:
    """One line for logs: the banding and its S-curve at a few similarities."""
    b, r = params.lsh_bands, params.lsh_rows
    points = ", ".join(
        f"P({s:.2f})={lsh_collision_probability(s, b, r):.3f}"
        for s in (0.5, params.threshold - 0.1, params.threshold)
    )
    return f"MinHash LSH b={b} r={r}: {points}"


def params_of_signature(stored: Mapping[str, Any], base: DetectorParams) -> DetectorParams:
    """``base`` with every parameter an index recorded (:meth:`DetectorParams.index_signature`)
    taken from ``stored``: the parameters to read an index with when its settings are not known
    (an export). Parameters the index does not record (``algorithm``, mirrors, ``ttl``...) stay
    those of ``base``.

    Raises:
        ParameterError: the index was written by another hashing scheme or record format (it
            cannot be read by this version), or records an invalid value.
    """
    for name, ours in (("hash_scheme", HASH_SCHEME), ("format_version", FORMAT_VERSION)):
        if name in stored and stored[name] != ours:
            raise ParameterError(
                f"the index was written with {name} {stored[name]!r}; this version reads {ours!r} only"
            )
    names = {f.name for f in fields(DetectorParams) if f.init}
    changes = {k: v for k, v in stored.items() if k in names and v is not None}
    return replace(base, **changes)
