"""Property tests of the core sketches: determinism, exactness, MinHash error bound, Hamming."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.hashing import TokenHasher, mix64, shingle_hashes, token_hashes
from neardup_scrapy.core.minhash import MinHasher, estimate_jaccard, low16
from neardup_scrapy.core.params import DetectorParams, choose_bands, lsh_collision_probability
from neardup_scrapy.core.simhash import block_masks, hamming, hamming_many, simhash64
from neardup_scrapy.core.sketch import Sketcher

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzäöüß", min_size=1, max_size=8)
token_lists = st.lists(words, min_size=1, max_size=400)
u64 = st.integers(min_value=0, max_value=2**64 - 1)


def _sketch_json(tokens: list[str]) -> str:
    sketcher = Sketcher(DetectorParams())
    sk = sketcher.sketch(sketcher.token_hashes(" ".join(tokens)), "example.org")
    return json.dumps(
        {
            "digest": sk.digest.hex(),
            "signature": sk.signature.tolist(),
            "simhash": sk.simhash,
            "keys": np.concatenate([sk.exact_key, sk.band_keys, sk.simhash_keys]).tolist(),
        }
    )


def test_sketches_identical_across_processes() -> None:
    """A fresh interpreter with another hash seed computes bit-identical sketches."""
    tokens = ["the", "same", "words", "in", "another", "process", "give", "the", "same", "sketch"] * 7
    here = Path(__file__).resolve().parent
    code = (
        f"import json,sys; sys.path.insert(0, {str(here)!r}); from test_core_properties import _sketch_json;"
        "print(_sketch_json(json.loads(sys.argv[1])))"
    )
    env_outputs = []
    for hashseed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(tokens)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": hashseed, "PATH": "/usr/bin:/bin"},
        )
        env_outputs.append(out.stdout.strip())
    assert env_outputs[0] == env_outputs[1] == _sketch_json(tokens)


def test_known_values_are_pinned() -> None:
    """Hash values never change silently (a persisted index depends on them)."""
    hashes = token_hashes(["near", "duplicate"], seed=1)
    assert hashes.tolist() == [0x5F15C8B8E25B98CB, 0x1F07559BBF11F7DB]
    # Two tokens make one shingle: every bin but one is filled by densification.
    assert MinHasher(8, 1).signature(shingle_hashes(hashes, 5)).tolist() == [3577185856] * 8
    many = MinHasher(8, 1).signature(mix64(np.arange(1, 41, dtype=np.uint64)))
    assert many.tolist() == [
        578891237,
        453444,
        2238660989,
        827697384,
        750086461,
        1303332042,
        180486817,
        692549001,
    ]
    assert mix64(np.array([0, 1], dtype=np.uint64)).tolist() == [0, 0x5692161D100B05E5]
    sketcher = Sketcher(DetectorParams())
    sk = sketcher.sketch(
        sketcher.token_hashes("Pinned values of the whole sketch never change silently"), "h"
    )
    assert sk.digest.hex() == "21bf22637acbff98f979e9339c408b42"
    assert sk.simhash == 0x94FC635716158A1
    assert sk.signature[:4].tolist() == [646690085, 646690085, 4117274232, 505179992]
    assert int(sk.band_keys[0]) == 0x1B52DF06BC8F84B


@given(st.lists(token_lists, min_size=1, max_size=5), st.integers(min_value=0, max_value=50))
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
def test_memoised_token_hashes_equal_direct_ones(pages: list[list[str]], max_entries: int) -> None:
    """The memo (also when it overflows and is cleared) never changes a hash."""
    hasher = TokenHasher(seed=3, max_entries=max_entries)
    for tokens in pages:
        assert hasher(tokens).tolist() == token_hashes(tokens, seed=3).tolist()


@given(token_lists)
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
def test_identical_text_is_exact(tokens: list[str]) -> None:
    det = NearDupDetector(min_tokens=0)
    text = " ".join(tokens)
    first = det.check("http://127.0.0.1/a", text=text)
    second = det.check("http://127.0.0.2/a", text=text)
    assert first.status == "unique"
    assert second.status == "exact"
    assert second.duplicate_of == "http://127.0.0.1/a"
    assert second.similarity == 1.0 and second.hamming == 0


@st.composite
def set_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    size = draw(st.integers(min_value=200, max_value=1500))
    jaccard = draw(st.floats(min_value=0.05, max_value=1.0))
    shared = round(2 * size * jaccard / (1 + jaccard))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = np.random.default_rng(seed)
    base = mix64(np.unique(rng.integers(0, 2**62, size=2 * size, dtype=np.uint64))[: 2 * size - shared])
    a = base[:size]
    b = np.concatenate([base[:shared], base[size:]])
    return a, b


@given(set_pairs())
@settings(max_examples=80, deadline=None)
def test_minhash_estimate_within_bound(pair: tuple[np.ndarray, np.ndarray]) -> None:
    """|J_est - J| <= 5 standard errors, sqrt(J(1-J)/k) (plus b-bit slack)."""
    a, b = pair
    true_j = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
    hasher = MinHasher(128, 7)
    est = float(estimate_jaccard(low16(hasher.signature(a)), low16(hasher.signature(b))[None, :])[0])
    bound = 5 * np.sqrt(true_j * (1 - true_j) / 128) + 0.01
    assert abs(est - true_j) <= bound


@given(st.integers(min_value=1, max_value=60), st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_densified_signatures_of_small_sets(size: int, seed: int) -> None:
    """Small sets leave bins empty; densification fills them all, the same way for equal sets."""
    shingles = mix64(np.random.default_rng(seed).integers(0, 2**62, size=size, dtype=np.uint64))
    hasher = MinHasher(128, 5)
    sig = hasher.signature(shingles)
    assert (sig != np.uint32(0xFFFFFFFF)).all()
    assert len(set(sig.tolist())) <= size  # filled bins copy values of the set's own shingles
    assert hasher.signature(shingles[::-1]).tolist() == sig.tolist()
    assert float(estimate_jaccard(low16(sig), low16(sig)[None, :])[0]) == 1.0


def test_small_set_estimates_are_unbiased() -> None:
    """Over many random pairs of 5..100 shingles, densified estimates average the true Jaccard."""
    rng = np.random.default_rng(11)
    hasher = MinHasher(128, 2)
    errors = []
    for _ in range(400):
        size = int(rng.integers(5, 100))
        target = rng.uniform(0.1, 1.0)
        shared = round(2 * size * target / (1 + target))
        base = mix64(np.unique(rng.integers(0, 2**62, size=3 * size, dtype=np.uint64))[: 2 * size - shared])
        a, b = base[:size], np.concatenate([base[:shared], base[size:]])
        true_j = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
        est = float(estimate_jaccard(low16(hasher.signature(a)), low16(hasher.signature(b))[None, :])[0])
        errors.append(est - true_j)
    assert abs(float(np.mean(errors))) < 0.01
    assert float(np.sqrt(np.mean(np.square(errors)))) < 0.07


def test_minhash_error_is_unbiased_on_average() -> None:
    rng = np.random.default_rng(3)
    hasher = MinHasher(128, 1)
    errors = []
    for _ in range(200):
        a = mix64(rng.integers(0, 2**62, size=600, dtype=np.uint64))
        b = np.concatenate([a[:450], mix64(rng.integers(0, 2**62, size=150, dtype=np.uint64))])
        true_j = 450 / 750
        errors.append(float((hasher.signature(a) == hasher.signature(b)).mean()) - true_j)
    assert abs(np.mean(errors)) < 0.01
    assert 0.02 < np.std(errors) < 0.06  # sqrt(0.6 * 0.4 / 128) = 0.043


@given(u64, u64)
def test_hamming_symmetric_and_metric(a: int, b: int) -> None:
    assert hamming(a, b) == hamming(b, a)
    assert hamming(a, a) == 0
    assert 0 <= hamming(a, b) <= 64
    assert int(hamming_many(a, np.array([b], dtype=np.uint64))[0]) == hamming(a, b)


@given(u64, st.integers(min_value=0, max_value=8), st.data())
def test_permuted_blocks_find_every_fingerprint_within_k(fp: int, k: int, data: st.DataObject) -> None:
    """Manku et al.: a fingerprint within k bits shares at least one table key."""
    flips = data.draw(st.sets(st.integers(min_value=0, max_value=63), max_size=k))
    other = fp
    for bit in flips:
        other ^= 1 << bit
    masks = block_masks(k)
    assert any((fp & m) == (other & m) for m in masks)


@given(st.lists(u64, min_size=1, max_size=300))
def test_simhash_of_identical_sets_is_equal_and_order_free(values: list[int]) -> None:
    arr = np.array(values, dtype=np.uint64)
    assert simhash64(arr) == simhash64(arr[::-1].copy())


def test_simhash_small_edit_small_distance() -> None:
    rng = np.random.default_rng(5)
    tokens = [f"w{i}" for i in rng.integers(0, 5000, size=1200)]
    edited = list(tokens)
    edited[600:603] = ["x", "y", "z"]
    a = simhash64(shingle_hashes(token_hashes(tokens, 1), 5))
    b = simhash64(shingle_hashes(token_hashes(edited, 1), 5))
    c = simhash64(shingle_hashes(token_hashes([f"v{i}" for i in range(1200)], 1), 5))
    assert hamming(a, b) <= 3 < hamming(a, c)


def test_banding_s_curve() -> None:
    bands, rows = choose_bands(0.8, 128)
    assert bands * rows <= 128
    assert lsh_collision_probability(0.8, bands, rows) > 0.99
    assert lsh_collision_probability(0.75, bands, rows) > 0.97
    assert lsh_collision_probability(0.3, bands, rows) < 0.05
    # datasketch's choice at 128 / 0.8 is b=9, r=13: P(0.8) ~ 0.40.
    assert lsh_collision_probability(0.8, 9, 13) < 0.45
