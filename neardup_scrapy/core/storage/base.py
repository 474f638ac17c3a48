"""The storage interface behind :class:`~neardup_scrapy.core.NearDupDetector`.

A store keeps, for every indexed page, a compact record (url, host, 128-bit digest, 64-bit
SimHash, a MinHash signature truncated to 8 bits per value, its cluster parent and the time it
was added), the LSH buckets of both indexes, and per-host counters. The detector does all the
hashing and all the decisions; a store only answers three calls per page:

1. :meth:`IndexStorage.lookup` -- the ids in the buckets of the page's keys, plus a *token*
   describing what was seen;
2. :meth:`IndexStorage.fetch` -- the records of those candidates, for verification;
3. :meth:`IndexStorage.commit` -- add the page, its bucket entries, cluster unions and counters,
   atomically, **unless** a bucket changed since the token was taken, in which case it returns
   ``None`` and the detector checks the page again. That compare-and-insert makes a shared store
   (Redis) safe: two processes that see near-duplicates at once can never both record an original.

Two more calls keep a cluster's representative the original (see :meth:`IndexStorage.promote`):
a page that copies came before (their canonical address, or a page of a mirror's origin host)
becomes its cluster's representative, and the page it replaces counts as the duplicate.

:meth:`IndexStorage.lookup_or_insert` does steps 1 and 3 in one atomic call for the common page
that has no candidate at all, so a server-backed store answers it in one round trip instead of
two; :meth:`IndexStorage.fetch_candidates` is step 2 less the hits that share only a SimHash block
with the page by chance; :meth:`IndexStorage.flush` commits a store's buffered writes. A custom
store that subclasses :class:`IndexStorage` inherits plain versions of these three.

Keys are ``uint64``: the top 8 bits name the table (0 = exact digests, 1..b = MinHash bands,
b+1.. = SimHash permuted blocks), the other 56 bits the bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from neardup_scrapy.core.minhash import Stored
from neardup_scrapy.core.mirrors import MirrorEvidence

if TYPE_CHECKING:
    from neardup_scrapy.core.chance import ChanceFilter

U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]

#: A lookup takes at most this many pages from each bucket: the first ones added to it. A
#: cluster's representative and first members are among them, and verification compares a page
#: with cluster representatives, so later members add nothing; the cap keeps a check's cost flat
#: when one bucket holds thousands of near-identical pages (calendars, faceted search, spam) or
#: pages that share a generic heading.
BUCKET_CAP = 64

#: A lookup returns at most this many candidates found through similarity buckets (MinHash
#: bands, SimHash blocks), plus every page under the page's exact-digest and url keys. The
#: principle: the number of buckets a page shares with the new one is the LSH estimate of their
#: similarity, and verification compares the new page with cluster representatives (fetched
#: by the detector whether or not they are candidates), so the candidates sharing the most
#: buckets (earliest first on ties: representatives) decide the verdict and the rest of a huge
#: family of near-identical pages adds cost, not information.
MAX_CANDIDATES = 128
#: Tables whose hits are always candidates: 0 (exact digests), 253 (the base of the page's
#: address, looked up by its views) and 255 (urls); see ``sketch.py``.
_PINNED_TABLES = (0, 253, 255)


def pinned_keys(keys: U64Array) -> npt.NDArray[np.bool_]:
    """Which of ``keys`` are exact-digest, url or resource-base keys (their hits are never
    capped: each holds the pages of one text or one address)."""
    table = (keys >> np.uint64(56)).astype(np.int64)
    return np.isin(table, _PINNED_TABLES)


def rank_candidates(
    pinned: npt.NDArray[np.integer[Any]], shared: npt.NDArray[np.integer[Any]], cap: int = MAX_CANDIDATES
) -> I64Array:
    """The candidate ids of a lookup, sorted (see :data:`MAX_CANDIDATES`).

    Args:
        pinned: ids under exact-digest and url keys (all kept).
        shared: ids under the other keys, once per bucket they share with the page.
        cap: how many of ``shared`` to keep: those sharing the most buckets, then the earliest.
    """
    ids, counts = np.unique(shared.astype(np.int64), return_counts=True)
    if len(ids) > cap:
        ids = ids[np.lexsort((ids, -counts))[:cap]]
    return np.union1d(pinned.astype(np.int64), ids)


#: Status codes as stored (uint8).
STATUS_CODES = {"unique": 0, "exact": 1, "near": 2}
STATUS_NAMES = {v: k for k, v in STATUS_CODES.items()}


class StorageError(RuntimeError):
    """A store cannot be reached or answered badly; the detector applies its error policy."""


class ParameterMismatchError(StorageError):
    """A persisted store was built with other parameters than the detector's.

    Attributes:
        differences: ``{name: (stored, requested)}`` for every differing parameter.
    """

    def __init__(self, where: str, differences: Mapping[str, tuple[Any, Any]]) -> None:
        self.differences = dict(differences)
        listed = "; ".join(
            f"{k}: stored {s!r}, requested {r!r}" for k, (s, r) in sorted(self.differences.items())
        )
        super().__init__(
            f"the neardup index at {where} was built with other parameters ({listed}); "
            "use the same settings, or another path/prefix for a new index"
        )


def compare_parameters(stored: Mapping[str, Any], requested: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Return ``{name: (stored, requested)}`` for every key whose values differ (missing = ``None``)."""
    out: dict[str, tuple[Any, Any]] = {}
    for key in sorted(set(stored) | set(requested)):
        a, b = stored.get(key), requested.get(key)
        if a != b and not (
            isinstance(a, (int, float)) and isinstance(b, (int, float)) and float(a) == float(b)
        ):
            out[key] = (a, b)
    return out


@dataclass(frozen=True)
class DocRecord:
    """One page as the index keeps it.

    Attributes:
        url: the page's url.
        host: its host.
        digest: 16-byte xxh3-128 of the normalised main text.
        simhash: 64-bit SimHash of the shingles.
        signature: MinHash values in stored form, low 8 bits each (b-bit MinHash, b=8).
        parent: id of the cluster parent (the representative for a duplicate; ``-1`` for a new
            cluster, meaning "itself").
        status: ``"unique"``, ``"exact"`` or ``"near"``.
        similarity: estimated Jaccard with the representative (``nan`` for unique).
        hamming: SimHash distance to the representative (``-1`` for unique).
        added: time (seconds since the epoch) the page was indexed.
        profile: the verification profile (edit sketch, heading and title words).
        excerpt: a short excerpt of its main text (kept only by stores that keep excerpts).
    """

    url: str
    host: str
    digest: bytes
    simhash: int
    signature: Stored
    parent: int
    status: str
    similarity: float
    hamming: int
    added: float
    profile: bytes = b""
    excerpt: str = ""


@dataclass
class DocBatch:
    """Records of several pages, as arrays (row ``i`` is ``ids[i]``).

    ``roots`` are the cluster roots (union-find ``find``), not the stored parents; ``statuses``
    the stored statuses (``unique``, ``exact``, ``near``).
    """

    ids: I64Array
    signatures: Stored  # shape (n, num_perm)
    simhashes: U64Array
    digests: list[bytes]
    roots: I64Array
    added: npt.NDArray[np.float64]
    urls: list[str]
    hosts: list[str]
    profiles: list[bytes] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, keep: list[int]) -> DocBatch:
        """The batch of rows ``keep`` only, in that order."""
        at = np.array(keep, dtype=np.int64)
        return DocBatch(
            ids=self.ids[at],
            signatures=self.signatures[at],
            simhashes=self.simhashes[at],
            digests=[self.digests[i] for i in keep],
            roots=self.roots[at],
            added=self.added[at],
            urls=[self.urls[i] for i in keep],
            hosts=[self.hosts[i] for i in keep],
            profiles=[self.profiles[i] for i in keep] if self.profiles else [],
            statuses=[self.statuses[i] for i in keep] if self.statuses else [],
        )


@dataclass(frozen=True)
class Commit:
    """Everything one page changes in a store, applied atomically.

    Attributes:
        record: the page; ``None`` for a skipped page (only counters change).
        keys: bucket keys to add the page to (empty for exact duplicates: they add no entries).
        token: what :meth:`IndexStorage.lookup` returned for these keys; the commit fails if a
            bucket has changed since.
        unions: ``(root, new_root)`` pairs: cluster ``root`` joins cluster ``new_root``.
        host: host counter to increment.
        status: ``unique``, ``exact``, ``near``, ``skipped`` or ``revisit`` (a url checked
            before, fetched again: ``record`` is ``None`` and only the host's ``revisits``
            counter changes).
        canonical_host: the host the page's canonical link names, when it is another host.
        nbytes: size of the page's body, for the bytes-saved figure.
        named_key: for a duplicate, the canonical key of its own address
            (:func:`~neardup_scrapy.core.sketch.canonical_key`): when a page of the cluster it
            joins is indexed under that key (it names this page's address canonical), the store
            makes this page the representative in the same atomic step (as :meth:`IndexStorage.promote`)
            and says so in :attr:`CommitResult.promoted`.

    A duplicate joins the cluster of ``record.parent``; the store updates the cluster's host
    counts and the mirror evidence (:class:`~neardup_scrapy.core.mirrors.MirrorLedger`).
    """

    record: DocRecord | None
    keys: U64Array
    token: object
    unions: Sequence[tuple[int, int]] = ()
    host: str = ""
    status: str = "unique"
    canonical_host: str | None = None
    nbytes: int = 0
    named_key: int | None = None


@dataclass(frozen=True)
class CommitResult:
    """Outcome of a commit.

    Attributes:
        doc_id: id given to the page (``-1`` for a skipped page).
        host_pages: pages of the host counted so far (skipped excluded).
        promoted: the page was made its cluster's representative (see :attr:`Commit.named_key`).
    """

    doc_id: int
    host_pages: int
    promoted: bool = False


@dataclass
class HostCounts:
    """Per-host counters.

    ``pages`` counts the host's indexed pages (``unique + exact + near``); ``skipped`` and
    ``revisits`` are counted beside it. ``duplicate_bytes`` are the bytes of the pages whose
    document was in the index when they were checked (what a crawl could have saved), whichever
    page later represents the document.
    """

    pages: int = 0
    unique: int = 0
    exact: int = 0
    near: int = 0
    skipped: int = 0
    bytes: int = 0
    duplicate_bytes: int = 0
    revisits: int = 0


#: Type of a bound ``lookup_or_insert`` method (see :class:`IndexStorage`).
LookupOrInsert = Callable[[U64Array, Commit], tuple[I64Array, object, "CommitResult | None"]]


@runtime_checkable
class IndexStorage(Protocol):
    """What the detector needs from a store. See the module docstring for the protocol.

    ``lookup_or_insert``, ``fetch_candidates`` and ``flush`` have plain versions here (a lookup,
    a fetch filtered after the fact, nothing), which a custom store inherits by subclassing
    this class; the built-in stores implement their own.
    """

    def open(self, signature: Mapping[str, Any]) -> None:
        """Create the store, or open it and check its recorded parameters.

        Raises:
            ParameterMismatchError: the store was built with other parameters.
            StorageError: the store cannot be reached.
        """

    def close(self) -> None:
        """Flush and release resources. Idempotent."""

    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Ids of the pages in the buckets of ``keys`` (sorted, unique; at most
        :data:`BUCKET_CAP` per bucket, the first added), and a token for commit."""

    def fetch(self, ids: I64Array) -> DocBatch:
        """Records of the pages ``ids``, with their cluster roots."""

    def fetch_candidates(self, ids: I64Array, chance: ChanceFilter) -> DocBatch | None:
        """Records of the lookup's hits ``ids`` less the pages that share only a SimHash block
        with the page by chance (:mod:`~neardup_scrapy.core.chance`); ``None`` when a store
        that drops them before fetching drops them all."""
        return fetch_without_chance_hits(self, ids, chance)

    def lookup_or_insert(
        self, keys: U64Array, provisional: Commit
    ) -> tuple[I64Array, object, CommitResult | None]:
        """Look up the buckets of ``keys``; if they hold no page at all, apply ``provisional``.

        ``provisional`` is the page's commit as a ``"unique"`` page with ``parent=-1``. If no
        bucket holds a page (pages a store has already forgotten through expiry excepted),
        apply it atomically in the same step (ignoring its token) and return
        ``(empty ids, token, result)``, ``result`` being that commit's :class:`CommitResult`.
        Otherwise change nothing and return ``(ids, token, None)`` exactly as :meth:`lookup`
        would; the detector then fetches, decides and commits as usual. Implementations keep a
        commit's guarantees: atomic with the lookup, idempotent under the store's own retries.
        This plain version only looks up (the detector then commits as usual).
        """
        ids, token = self.lookup(keys)
        return ids, token, None

    def flush(self) -> None:
        """Commit buffered writes now (a store that writes through has nothing to do)."""

    def commit(self, commit: Commit) -> CommitResult | None:
        """Apply ``commit`` atomically; ``None`` if a bucket changed since its token was taken."""

    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` the representative (root) of its cluster, atomically.

        The page it replaces takes the page's status, similarity and Hamming distance (the pair
        is the same pair both ways) and the page becomes ``unique``; the two hosts' counters move
        accordingly (the totals do not change) and the cluster keeps its mirror evidence under
        its new root. Pages that pointed at the old root now reach the new one through it.

        Returns:
            ``False`` when the page already was its cluster's root (nothing changed).
        """

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """For every cluster whose representative is on a host ``m`` of ``origins`` and that
        holds a page of ``origins[m]``, :meth:`promote` the earliest such page.

        Returns:
            The number of clusters whose representative changed.
        """

    def __len__(self) -> int:
        """Number of indexed pages."""

    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host."""

    def mirror_evidence(self, min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The mirror evidence of the whole index (see :mod:`neardup_scrapy.core.mirrors`):
        every host's counters, and the ``shared`` and ``canonical`` rows that decisions at
        ``min_pages`` and at any share of at least ``share`` read
        (:func:`~neardup_scrapy.core.mirrors.read_evidence`; 0 and 0: every row)."""

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Clusters of two or more pages (with ``singletons``, of one page too).

        Every cluster is read from one snapshot of the index's pages: the ids that exist, which
        need not be ``0 .. len - 1`` (a shared store's ids have gaps; expired pages are left out),
        so with ``singletons`` every indexed page is listed exactly once (the full exports).

        Returns:
            ``(size_histogram, largest)``: ``{size: number of clusters}`` over all clusters of two
            or more pages, and the ``max_clusters`` largest as ``{"id", "size", "representative",
            "hosts", "members"}`` where ``members`` (at most ``max_members``, representative
            first) are ``{"url", "status", "similarity", "hamming"}``; with ``singletons``, the
            clusters of one page follow the larger ones, in id order.
        """

    def memory_bytes(self) -> int:
        """Bytes the store holds for its pages (approximate; for benchmarks and the report)."""

    def save_url_rules(self, writer: str, state: bytes) -> None:
        """Keep ``state`` -- one crawler process's evidence about duplicate-url rules
        (:mod:`neardup_scrapy.core.urlrules`, JSON) -- under ``writer``, replacing what that
        writer kept before; kept with the index, so processes sharing it share their rules."""

    def url_rules(self) -> dict[str, bytes]:
        """Every writer's state saved by :meth:`save_url_rules`."""


def fetch_without_chance_hits(store: IndexStorage, ids: I64Array, chance: ChanceFilter) -> DocBatch:
    """:meth:`IndexStorage.fetch_candidates` for a store that cannot judge pages before fetching
    them: fetch ``ids``, then drop the chance hits from the batch."""
    batch = store.fetch(ids)
    dropped = set(chance.chance_rows(batch.signatures, batch.simhashes, batch.urls))
    return batch.rows([i for i in range(len(batch)) if i not in dropped]) if dropped else batch
