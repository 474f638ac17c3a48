"""SimHash blocks shared by chance are not candidates (``neardup_scrapy.core.chance``).

The memory store drops them before fetching; the detector drops the same rows from a batch any
store fetched, so stores without the shortcut give the same verdicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmark_modules import load_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.chance import ChanceFilter
from neardup_scrapy.core.minhash import stored_form
from neardup_scrapy.core.native.chance import drop_far_rows_in_columns, far_rows
from neardup_scrapy.core.sketch import resource_of
from neardup_scrapy.core.storage.base import fetch_without_chance_hits
from neardup_scrapy.core.storage.sqlite import SQLiteStorage

BANDS, ROWS, DISTANCE = 32, 4, 3


@given(
    st.integers(0, 2**64 - 1),
    st.lists(st.integers(0, 63), max_size=8),
    st.lists(st.integers(0, 127), max_size=128),
)
@settings(max_examples=300, deadline=None)
def test_chance_exactly_when_far_and_no_band_is_shared(fp: int, flips: list[int], changed: list[int]) -> None:
    rng = np.random.default_rng(fp % 1000)
    sig = rng.integers(0, 2**32, size=BANDS * ROWS, dtype=np.uint32)
    other = sig.copy()
    for row in changed:
        other[row] ^= np.uint32(1)  # the low bit: the stored form differs too
    other_fp = fp
    for bit in flips:
        other_fp ^= 1 << bit
    chance = ChanceFilter(stored_form(sig), fp, BANDS, ROWS, DISTANCE, "https://a.example/x", True)
    flagged = chance.chance_rows(
        stored_form(other)[None, :], np.array([other_fp], dtype=np.uint64), ["https://b.example/x"]
    )
    distance = bin(fp ^ other_fp).count("1")
    band_shared = any(not any(b * ROWS <= r < (b + 1) * ROWS for r in changed) for b in range(BANDS))
    assert (flagged == [0]) == (distance > DISTANCE and not band_shared)


_ADDRESSES = [
    base + view
    for base in ("https://a.example/x", "https://a.example/xy", "https://a.example/x/y", "http://b.example/x")
    for view in ("", "?p=1", "?p=2", "#f", "?p=1#f")
] + ["https://a.example/x\u00e9", "https://a.example/x\u00e9?p=1"]


@given(st.sampled_from(_ADDRESSES), st.sampled_from(_ADDRESSES))
def test_same_address_is_the_url_or_a_base_and_a_view_of_it(url: str, other: str) -> None:
    chance = ChanceFilter(np.zeros(128, dtype=np.uint8), 0, BANDS, ROWS, DISTANCE, url, True)
    resource = resource_of(url)
    expected = other == url or (resource_of(other) == resource and resource in {url, other})
    assert chance.same_address(other) == expected


def _pair(det: NearDupDetector, flipped_bits: list[int]) -> tuple[Any, Any]:
    """Two pages with unrelated text whose SimHashes agree on the first block table's bits (the
    low 26) and differ in ``flipped_bits`` (all above them)."""
    bench = load_benchmark("bench_core")
    rng = np.random.default_rng(7)
    fp = int(rng.integers(0, 2**63))
    other_fp = fp
    for bit in flipped_bits:
        other_fp ^= 1 << bit
    sigs = [rng.integers(0, 2**32, size=det.params.num_perm, dtype=np.uint32) for _ in range(2)]
    return (
        bench._synthetic_sketch(det, sigs[0], fp, rng.bytes(16)),
        bench._synthetic_sketch(det, sigs[1], other_fp, rng.bytes(16)),
    )


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("algorithm", ["both", "simhash"])
def test_a_block_shared_by_chance_finds_no_candidate(store: str, algorithm: str, tmp_path: Path) -> None:
    storage = SQLiteStorage(path=str(tmp_path / "index.sqlite")) if store == "sqlite" else None
    det = NearDupDetector(storage=storage, algorithm=algorithm)
    first, second = _pair(det, [40, 50, 60, 62])  # 4 bits apart: past simhash_distance (3)
    det._indexer.check_sketch("https://a.example/1", "a.example", first, "", 1000)
    keys = det._indexer.lookup.keys("https://b.example/2", second)
    ids, _ = det.storage.lookup(keys)
    assert len(ids) == 1  # the block's bucket holds the first page
    if store == "memory":  # dropped by the store before fetching
        assert det._indexer.lookup.candidates(ids, "https://b.example/2", second) is None
    verdict = det._indexer.check_sketch("https://b.example/2", "b.example", second, "", 1000)
    assert verdict.status == "unique"
    assert verdict.reason == "no candidate in the index"
    det.close()


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_block_within_the_distance_stays_a_candidate(store: str, tmp_path: Path) -> None:
    storage = SQLiteStorage(path=str(tmp_path / "index.sqlite")) if store == "sqlite" else None
    det = NearDupDetector(storage=storage)
    first, second = _pair(det, [40, 50, 60])  # 3 bits apart: a candidate, verified (and rejected)
    det._indexer.check_sketch("https://a.example/1", "a.example", first, "", 1000)
    verdict = det._indexer.check_sketch("https://b.example/2", "b.example", second, "", 1000)
    assert verdict.status == "unique"
    assert verdict.reason == "1 candidate(s), none similar enough"
    det.close()


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_the_same_address_stays_a_candidate_however_far(store: str, tmp_path: Path) -> None:
    """Hits by url or resource key are candidates by address (a view of the same resource)."""
    storage = SQLiteStorage(path=str(tmp_path / "index.sqlite")) if store == "sqlite" else None
    det = NearDupDetector(storage=storage)
    first, second = _pair(det, [40, 50, 60, 62])
    det._indexer.check_sketch("https://a.example/doc", "a.example", first, "", 1000)
    hit = np.array([0], dtype=np.int64)
    for url in ("https://a.example/doc?print=1", "https://a.example/doc"):
        batch = det._indexer.lookup.candidates(hit, url, second)
        assert batch is not None and len(batch) == 1
    for url in ("https://a.example/doc2", "https://a.example/doc2?print=1"):
        assert not det._indexer.lookup.candidates(hit, url, second)
    det.close()


def test_far_rows_refuses_signatures_that_do_not_match_the_fingerprints() -> None:
    stored = np.zeros(BANDS * ROWS, dtype=np.uint8)
    one = np.zeros((1, BANDS * ROWS), dtype=np.uint8)
    with pytest.raises(ValueError, match="one signature per simhash"):
        far_rows(0, stored, np.zeros(2, dtype=np.uint64), one, BANDS, ROWS, DISTANCE)
    with pytest.raises(ValueError, match="narrower"):
        far_rows(0, stored, np.zeros(1, dtype=np.uint64), one[:, :8].copy(), BANDS, ROWS, DISTANCE)
    assert far_rows(0, stored, np.array([0b1111], dtype=np.uint64), one, 0, ROWS, DISTANCE) == [0]
    chance = ChanceFilter(stored, 0, BANDS, ROWS, DISTANCE, "https://a.example/x", True)
    none = np.zeros((0, BANDS * ROWS), dtype=np.uint8)
    assert chance.chance_rows(none, np.zeros(0, dtype=np.uint64), []) == []  # a store fetched nothing


@given(
    st.integers(0, 2**64 - 1),
    st.lists(st.integers(0, 39), max_size=12),
    st.integers(0, 3),
    st.integers(0, 2**32 - 1),
)
@settings(max_examples=100, deadline=None)
def test_far_rows_dropped_in_columns_as_found_in_one_array(
    fp: int, rows: list[int], chunk_bits: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    width = BANDS * ROWS
    stored = rng.integers(0, 256, size=width, dtype=np.uint8)
    signatures = rng.integers(0, 256, size=(40, width), dtype=np.uint8)
    signatures[::3] = stored  # some rows share every band
    signatures[1::5, :ROWS] = stored[:ROWS]  # some share only the first band
    fingerprints = np.array(
        [fp ^ int(rng.integers(0, 2**64, dtype=np.uint64)) for _ in range(40)], dtype=np.uint64
    )
    fingerprints[::4] = fp ^ 0b101  # within the distance
    size = 1 << chunk_bits
    fp_chunks = [fingerprints[i : i + size] for i in range(0, 40, size)]
    sig_chunks = [signatures[i : i + size] for i in range(0, 40, size)]

    def addresses(chunks: list[np.ndarray]) -> np.ndarray:
        return np.array([chunk.ctypes.data for chunk in chunks], dtype=np.uint64)

    columns = (addresses(fp_chunks), addresses(sig_chunks), width)
    ids = np.array(rows, dtype=np.int64)
    far = far_rows(fp, stored, fingerprints[ids], signatures[ids], BANDS, ROWS, DISTANCE)
    near = [row for i, row in enumerate(rows) if i not in far]
    no_urls: tuple[Any, bytes, bytes] = (None, b"", b"")

    def drop(ids: np.ndarray, urls: tuple[Any, bytes, bytes] = no_urls, simhashes: Any = None) -> Any:
        at = columns[0] if simhashes is None else simhashes
        return drop_far_rows_in_columns(
            ids, 40, chunk_bits, at, *columns[1:], fp, stored, BANDS, ROWS, DISTANCE, *urls
        )

    kept, maybe = drop(ids)
    assert kept.tolist() == near and maybe == [] and kept.dtype == np.int64
    # With urls: a far row is kept (and listed) when its url starts with the prefix.
    urls = [f"https://{'a' if i % 2 else 'b'}.example/{i}".encode() for i in range(40)]
    ends = np.cumsum([len(u) for u in urls]).astype(np.int64)
    end_chunks = [ends[i : i + size] for i in range(0, 40, size)]
    kept, maybe = drop(ids, (addresses(end_chunks), b"".join(urls), b"https://a."))
    shares = [row for i, row in enumerate(rows) if i in far and row % 2]
    assert maybe == shares
    assert kept.tolist() == [row for row in rows if row in near or row in shares]
    for outside in (40, -1):
        with pytest.raises(IndexError):
            drop(np.array([outside], dtype=np.int64))
    with pytest.raises(ValueError, match="chunk addresses"):  # fewer chunks than the rows need
        drop(ids, simhashes=columns[0][:1])
    with pytest.raises(ValueError, match="ids"):  # ids of the wrong width
        drop(np.array([1, 2], dtype=np.int32))


@given(st.sampled_from(_ADDRESSES), st.lists(st.sampled_from(_ADDRESSES), min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_the_memory_store_drops_the_rows_the_batch_rule_drops(url: str, others: list[str]) -> None:
    """The memory store's shortcut (urls told apart by their stored bytes before decoding) drops
    exactly the rows :meth:`ChanceFilter.chance_rows` drops from a fetched batch."""
    det = NearDupDetector()
    first, second = _pair(det, [40, 50, 60, 62])
    for other in others:
        match = det._indexer.decider.no_candidate(False)
        keys = det._indexer.lookup.keys(other, first)
        det.storage.commit(det._indexer.committer.commit_for(other, "a.example", first, match, None, 1, keys))
    ids = np.arange(len(others), dtype=np.int64)
    chance = det._indexer.lookup.chance_filter(url, second)
    assert chance is not None
    batch = det.storage.fetch(ids)
    dropped = chance.chance_rows(batch.signatures, batch.simhashes, batch.urls)
    expected = [i for i in range(len(others)) if i not in dropped]
    assert det.storage.drop_chance_hits(ids, chance).tolist() == expected
    # fetch_candidates: the store's own (drop, then fetch) and the plain one of IndexStorage
    # (fetch, then drop) give the same records
    own = det.storage.fetch_candidates(ids, chance)
    plain = fetch_without_chance_hits(det.storage, ids, chance)
    assert (own.urls if own is not None else []) == plain.urls == [batch.urls[i] for i in expected]
    det.close()
