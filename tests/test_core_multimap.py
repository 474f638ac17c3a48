"""The compact bucket multimap behaves like a dict of lists, across buffer, runs and directories."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup_scrapy.core.multimap as mm

keys32 = st.integers(min_value=0, max_value=2**32 - 1)


@pytest.fixture
def small_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny buffer and directory threshold so a few hundred entries exercise every layout."""
    monkeypatch.setattr(mm, "BUFFER", 16)
    monkeypatch.setattr(mm, "RATIO", 2)
    monkeypatch.setattr(mm, "DIRECTORY_MIN", 64)


@given(
    st.lists(
        st.lists(keys32 | st.sampled_from([0, 1, 2**32 - 1, 0xABCD0000, 0xABCD0001]), max_size=20),
        max_size=120,
    )
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_multimap_matches_reference(small_levels: None, docs: list[list[int]]) -> None:
    index = mm.KeyMultimap()
    reference: dict[int, list[int]] = defaultdict(list)
    for doc_id, keys in enumerate(docs):
        index.add(np.array(keys, dtype=np.uint32), doc_id)
        for k in keys:
            reference[k].append(doc_id)
    probe = sorted(set(reference) | {3, 2**31})
    for k in probe:
        got = sorted(index.lookup(np.array([k], dtype=np.uint32)).tolist())
        assert got == sorted(reference.get(k, [])), k
    together = sorted(index.lookup(np.array(probe, dtype=np.uint32)).tolist())
    assert together == sorted(i for k in probe for i in reference.get(k, []))
    assert len(index) == sum(len(v) for v in reference.values())


def test_directory_levels_store_six_bytes_per_entry(small_levels: None) -> None:
    index = mm.KeyMultimap()
    rng = np.random.default_rng(1)
    for doc_id in range(2000):
        index.add(rng.integers(0, 2**32, size=8, dtype=np.uint32), doc_id)
    directory_levels = [lv for lv in index._levels if lv.offsets is not None and len(lv)]
    assert directory_levels
    for level in directory_levels:
        assert level.keys is None and level.low is not None and level.low.dtype == np.uint16


def test_empty_lookup_and_empty_store() -> None:
    index = mm.KeyMultimap()
    assert index.lookup(np.empty(0, dtype=np.uint32)).tolist() == []
    assert index.lookup(np.array([1, 2], dtype=np.uint32)).tolist() == []
    index.add(np.array([1], dtype=np.uint32), 0)
    assert index.lookup(np.empty(0, dtype=np.uint32)).tolist() == []
