"""The bucket multimap behaves like a dict of lists (48-bit keys), across buffer, runs and directories."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup_scrapy.core.multimap as mm

keys64 = st.integers(min_value=0, max_value=2**64 - 1)
# Keys that agree in their low 32 bits (the directory tag) or differ only above bit 48.
EDGE_KEYS = [0, 1, 2**48 - 1, 2**64 - 1, 0xABCD_0000_0001, 0x1234_0000_0001, 2**48 + 5, 5]


@pytest.fixture
def small_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny buffer and directory threshold so a few hundred entries exercise every layout."""
    monkeypatch.setattr(mm, "BUFFER", 16)
    monkeypatch.setattr(mm, "RATIO", 2)
    monkeypatch.setattr(mm, "DIRECTORY_MIN", 64)


@given(
    st.lists(
        st.lists(keys64 | st.sampled_from(EDGE_KEYS), max_size=20),
        max_size=120,
    )
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_multimap_matches_reference(small_levels: None, docs: list[list[int]]) -> None:
    index = mm.KeyMultimap()
    reference: dict[int, list[int]] = defaultdict(list)
    mask = 2**mm.KEY_BITS - 1  # only the low 48 bits count
    for doc_id, keys in enumerate(docs):
        index.add(np.array(keys, dtype=np.uint64), doc_id)
        for k in keys:
            reference[k & mask].append(doc_id)
    probe = sorted(set(reference) | {3, 2**31, 2**40 + 3})
    for k in probe:
        got = sorted(index.lookup(np.array([k], dtype=np.uint64)).tolist())
        assert got == sorted(reference.get(k, [])), k
        high = k | (0xFFFF << 48)
        assert sorted(index.lookup(np.array([high], dtype=np.uint64)).tolist()) == got
    together = sorted(index.lookup(np.array(probe, dtype=np.uint64)).tolist())
    assert together == sorted(i for k in probe for i in reference.get(k, []))
    assert len(index) == sum(len(v) for v in reference.values())


def test_directory_levels_store_32_bit_tags(small_levels: None) -> None:
    index = mm.KeyMultimap()
    rng = np.random.default_rng(1)
    for doc_id in range(2000):
        index.add(rng.integers(0, 2**64, size=8, dtype=np.uint64), doc_id)
    directory_levels = [lv for lv in index._levels if lv.directory is not None and len(lv)]
    assert directory_levels
    for level in directory_levels:
        assert level.keys is None and level.tags is not None and level.tags.dtype == np.uint32


@pytest.mark.parametrize(
    ("n", "most"),
    [
        ((1 << 18) + 12345, 10.0),  # a large level: tag, id and 1 to 2 bytes of directory
        (mm.DIRECTORY_MIN, 12.0 + 8 / mm.DIRECTORY_MIN),  # the smallest: no more than full keys (+ one slot)
    ],
)
def test_a_directory_level_costs_no_more_than_full_keys(n: int, most: float) -> None:
    rng = np.random.default_rng(2)
    keys = np.sort(rng.integers(0, 2**48, size=n, dtype=np.uint64))
    level = mm._Level(np.arange(n, dtype=np.int32), keys)
    assert level.directory is not None and level.tags is not None
    assert 8 < level.nbytes / n <= most
    assert np.array_equal(level.full_keys(), keys)
    # each slot's summary is bit (key % 32) of every key of its bucket, and rules most keys out
    assert level.directory is not None
    shift = np.uint64(mm.KEY_BITS) - np.uint64(np.log2(len(level.directory) - 1))
    expected = np.zeros(len(level.directory) - 1, dtype=np.uint64)
    np.bitwise_or.at(expected, (keys >> shift).astype(np.intp), np.uint64(1) << (keys & np.uint64(31)))
    assert np.array_equal(level.directory[:-1] >> np.uint64(32), expected)
    set_bits = np.unpackbits(expected.view(np.uint8)).sum() / (32 * len(expected))
    assert set_bits < 0.2 if n > (1 << 18) else set_bits < 0.1
    probe = keys[::1000]
    found = level.lookup(probe)
    assert np.array_equal(np.sort(found), np.arange(0, n, 1000))
    absent = np.setdiff1d(probe + np.uint64(1), keys)
    assert len(absent) and level.lookup(absent).tolist() == []


def test_merges_keep_every_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs merged into directory levels of different depths still find every key."""
    monkeypatch.setattr(mm, "BUFFER", 64)
    monkeypatch.setattr(mm, "RATIO", 4)
    monkeypatch.setattr(mm, "DIRECTORY_MIN", 256)
    index = mm.KeyMultimap()
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**64, size=(3000, 4), dtype=np.uint64)
    keys[1::7] = keys[::7][: len(keys[1::7])]  # some pages share all their keys with another
    for doc_id, row in enumerate(keys):
        index.add(row, doc_id)
    assert sum(lv.directory is not None for lv in index._levels) >= 2
    for doc_id in range(0, 3000, 37):
        assert doc_id in index.lookup(keys[doc_id]).tolist()


@pytest.mark.parametrize("cap", [1, 3, 64, 500])
def test_capped_lookup_returns_the_first_ids_of_each_key(monkeypatch: pytest.MonkeyPatch, cap: int) -> None:
    """A capped lookup gives, per key, the ids added first under it, across every level."""
    monkeypatch.setattr(mm, "BUFFER", 64)
    monkeypatch.setattr(mm, "RATIO", 4)
    monkeypatch.setattr(mm, "DIRECTORY_MIN", 256)
    index = mm.KeyMultimap()
    rng = np.random.default_rng(11)
    shared = rng.integers(0, 2**48, size=5, dtype=np.uint64)  # keys many pages share
    reference: dict[int, list[int]] = {}
    for doc_id in range(2000):
        own = rng.integers(0, 2**48, size=3, dtype=np.uint64)
        keys = np.concatenate([own, shared[rng.choice(5, size=2, replace=False)]])  # distinct keys
        index.add(keys, doc_id)
        for key in set(keys.tolist()):
            reference.setdefault(key, []).append(doc_id)
    assert sum(lv.directory is not None for lv in index._levels) >= 1
    for key in shared.tolist():
        expected = sorted(reference[key])[:cap]
        assert sorted(index.lookup(np.array([key], dtype=np.uint64), cap).tolist()) == expected
    query = shared[:3]
    expected_all = sorted(i for key in query.tolist() for i in sorted(reference[key])[:cap])
    assert sorted(index.lookup(query, cap).tolist()) == expected_all


def test_empty_lookup_and_empty_store() -> None:
    index = mm.KeyMultimap()
    assert index.lookup(np.empty(0, dtype=np.uint64)).tolist() == []
    assert index.lookup(np.array([1, 2], dtype=np.uint64)).tolist() == []
    index.add(np.array([1], dtype=np.uint64), 0)
    assert index.lookup(np.empty(0, dtype=np.uint64)).tolist() == []


def test_entry_buffer_keeps_insertion_order_per_key_through_slot_collisions() -> None:
    from neardup_scrapy.core.native.bucketmap import EntryBuffer, Run, lookup

    buffer = EntryBuffer(8)  # 16 slots: keys 5, 21 and 37 share slot 5
    for doc_id, keys in enumerate([[5, 21], [37], [5], [21, 5]]):
        buffer.add(np.array(keys, dtype=np.uint64), doc_id)
    assert lookup([], buffer, np.array([5], dtype=np.uint64), 10).tolist() == [0, 2, 3]
    assert lookup([], buffer, np.array([5, 21, 37, 53], dtype=np.uint64), 2).tolist() == [0, 2, 0, 3, 1]
    with pytest.raises(OverflowError):
        buffer.add(np.arange(3, dtype=np.uint64), 9)
    keys, ids = buffer.drain()
    assert keys.tolist() == [5, 21, 37, 5, 21, 5] and ids.tolist() == [0, 0, 1, 2, 3, 3]
    assert len(buffer) == 0 and lookup([], buffer, np.array([5], dtype=np.uint64), 10).tolist() == []
    # runs are searched oldest (last) first, then the buffer
    buffer.add(np.array([7], dtype=np.uint64), 30)
    newer = Run(np.array([20], dtype=np.int32), np.array([7], dtype=np.uint64))
    older = Run(np.array([10, 11], dtype=np.int32), np.array([7, 7], dtype=np.uint64))
    assert lookup([newer, older], buffer, np.array([7], dtype=np.uint64), 3).tolist() == [10, 11, 20]
    with pytest.raises(ValueError, match="a key per entry"):
        Run(np.array([1, 2], dtype=np.int32), np.array([7], dtype=np.uint64))
