"""Property tests of the compiled sketches: determinism, exactness, MinHash error bound, SimHash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import DetectorParams, NearDupDetector, PageAnalyzer
from neardup_scrapy.core.hashing import mix64
from neardup_scrapy.core.minhash import estimate_jaccard, stored_form
from neardup_scrapy.core.native.sketch import Sketcher
from neardup_scrapy.core.native.tokens import Tokenizer
from neardup_scrapy.core.params import choose_bands, lsh_collision_probability
from neardup_scrapy.core.simhash import block_masks, hamming, hamming_many

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzäöüß", min_size=1, max_size=8)
token_lists = st.lists(words, min_size=1, max_size=400)
u64 = st.integers(min_value=0, max_value=2**64 - 1)


def _sketcher(num_perm: int = 128, seed: int = 1) -> Sketcher:
    return Sketcher(seed, num_perm, 5, num_perm // 4, 4, block_masks(3))


def _signature(sketcher: Sketcher, shingles: np.ndarray) -> np.ndarray:
    return np.frombuffer(sketcher.minhash_of(shingles.astype("<u8").tobytes()), dtype="<u4")


def _sketch_json(tokens: list[str]) -> str:
    analysis = PageAnalyzer(DetectorParams())("http://example.org/", text=" ".join(tokens))
    sk = analysis.sketch
    assert sk is not None
    return json.dumps(
        {
            "digest": sk.digest.hex(),
            "signature": sk.signature.tolist(),
            "simhash": sk.simhash,
            "keys": sk.keys.tolist(),
            "profile": sk.profile.hex(),
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
    """Hash values never change silently (a persisted index depends on them; a change must come
    with a new HASH_SCHEME)."""
    tokenizer = Tokenizer(1)
    hashes = np.frombuffer(tokenizer.hashes("Near duplicate"), dtype="<u8")
    assert hashes.tolist() == [tokenizer.word_hash("near"), tokenizer.word_hash("duplicate")]
    assert [hex(h) for h in hashes.tolist()] == PINNED["tokens"]
    sketcher = _sketcher(8)
    many = _signature(sketcher, mix64(np.arange(1, 41, dtype=np.uint64)))
    assert many.tolist() == PINNED["minhash8"]
    assert mix64(np.array([0, 1], dtype=np.uint64)).tolist() == [0, 0x5692161D100B05E5]
    analysis = PageAnalyzer(DetectorParams())(
        "http://h/", text="Pinned values of the whole sketch never change silently"
    )
    sk = analysis.sketch
    assert sk is not None
    assert sk.digest.hex() == PINNED["digest"]
    assert hex(sk.simhash) == PINNED["simhash"]
    assert sk.signature[:4].tolist() == PINNED["signature4"]
    assert hex(int(sk.band_keys[0])) == PINNED["band0"]


PINNED: dict[str, object] = {
    "tokens": ["0x77e3b6b40ec294a9", "0xe8fc228505524d5e"],
    "minhash8": [876950556, 103973869, 1070839520, 2600247577, 1244642565, 1089691776, 1185746862, 595026021],
    "digest": "c81b6791a672438b1e35f7060799a8fd",
    "simhash": "0xe2b6273733e549d1",
    "signature4": [1849294964, 1849294964, 1489407950, 2477151188],
    "band0": "0x17e32eea6877704",
}


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
    sketcher = _sketcher(seed=7)
    est = float(
        estimate_jaccard(stored_form(_signature(sketcher, a)), stored_form(_signature(sketcher, b))[None, :])[
            0
        ]
    )
    bound = 5 * np.sqrt(true_j * (1 - true_j) / 128) + 0.01
    assert abs(est - true_j) <= bound


@given(st.integers(min_value=1, max_value=60), st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_densified_signatures_of_small_sets(size: int, seed: int) -> None:
    """Small sets leave bins empty; densification fills them all, the same way for equal sets."""
    shingles = mix64(np.random.default_rng(seed).integers(0, 2**62, size=size, dtype=np.uint64))
    sketcher = _sketcher(seed=5)
    sig = _signature(sketcher, shingles).copy()
    assert (sig != np.uint32(0xFFFFFFFF)).all()
    assert len(set(sig.tolist())) <= size  # filled bins copy values of the set's own shingles
    assert _signature(sketcher, shingles[::-1]).tolist() == sig.tolist()
    assert float(estimate_jaccard(stored_form(sig), stored_form(sig)[None, :])[0]) == 1.0


def test_small_set_estimates_are_unbiased() -> None:
    """Over many random pairs of 5..100 shingles, densified estimates average the true Jaccard."""
    rng = np.random.default_rng(11)
    sketcher = _sketcher(seed=2)
    errors = []
    for _ in range(400):
        size = int(rng.integers(5, 100))
        target = rng.uniform(0.1, 1.0)
        shared = round(2 * size * target / (1 + target))
        base = mix64(np.unique(rng.integers(0, 2**62, size=3 * size, dtype=np.uint64))[: 2 * size - shared])
        a, b = base[:size], np.concatenate([base[:shared], base[size:]])
        true_j = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
        est = float(
            estimate_jaccard(
                stored_form(_signature(sketcher, a)), stored_form(_signature(sketcher, b))[None, :]
            )[0]
        )
        errors.append(est - true_j)
    assert abs(float(np.mean(errors))) < 0.01
    assert float(np.sqrt(np.mean(np.square(errors)))) < 0.07


def test_minhash_error_is_unbiased_on_average() -> None:
    rng = np.random.default_rng(3)
    sketcher = _sketcher()
    errors = []
    for _ in range(200):
        a = mix64(rng.integers(0, 2**62, size=600, dtype=np.uint64))
        b = np.concatenate([a[:450], mix64(rng.integers(0, 2**62, size=150, dtype=np.uint64))])
        true_j = 450 / 750
        errors.append(float((_signature(sketcher, a) == _signature(sketcher, b)).mean()) - true_j)
    assert abs(np.mean(errors)) < 0.01
    assert 0.02 < np.std(errors) < 0.06  # sqrt(0.6 * 0.4 / 128) = 0.043


@given(st.integers(min_value=1, max_value=5000), st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_simhash_equals_per_bit_majority(n: int, seed: int) -> None:
    """Bit j is set exactly when more than half of the shingles have bit j set."""
    shingles = np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)
    bits = np.unpackbits(shingles.astype("<u8").view(np.uint8).reshape(n, 8), axis=1, bitorder="little")
    expected = int(np.packbits(bits.sum(axis=0) * 2 > n, bitorder="little").view("<u8")[0])
    assert _sketcher().simhash_of(shingles.astype("<u8").tobytes()) == expected


def test_simhash_counts_do_not_overflow() -> None:
    """Every bit set in 300,000 shingles: the byte-value counters must not wrap."""
    ones = np.full(300_000, 2**64 - 1, dtype=np.uint64)
    assert _sketcher().simhash_of(ones.tobytes()) == 2**64 - 1


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
    sketcher = _sketcher()
    assert sketcher.simhash_of(arr.tobytes()) == sketcher.simhash_of(arr[::-1].copy().tobytes())


def test_simhash_small_edit_small_distance() -> None:
    rng = np.random.default_rng(5)
    tokens = [f"w{i}" for i in rng.integers(0, 5000, size=1200)]
    edited = list(tokens)
    edited[600:603] = ["x", "y", "z"]
    analyzer = PageAnalyzer(DetectorParams())

    def fingerprint(words: list[str]) -> int:
        sketch = analyzer("http://h/", text=" ".join(words)).sketch
        assert sketch is not None
        return sketch.simhash

    a, b = fingerprint(tokens), fingerprint(edited)
    c = fingerprint([f"v{i}" for i in range(1200)])
    assert hamming(a, b) <= 3 < hamming(a, c)


def test_shingles_combine_consecutive_token_hashes() -> None:
    """s_i = mix64(((t_i P ^ t_i+1) P ^ ...) ^ t_i+4); fewer than 5 tokens make one shingle."""
    tokens = np.random.default_rng(9).integers(0, 2**64, size=12, dtype=np.uint64)
    prime = np.uint64(0x9E3779B97F4A7C15)
    acc = tokens[:8].copy()
    for j in range(1, 5):
        acc = acc * prime ^ tokens[j : j + 8]
    got = np.frombuffer(_sketcher().shingles_of(tokens.astype("<u8").tobytes()), dtype="<u8")
    assert got.tolist() == mix64(acc).tolist()
    two = np.frombuffer(_sketcher().shingles_of(tokens[:2].astype("<u8").tobytes()), dtype="<u8")
    with np.errstate(over="ignore"):
        first = tokens[0] * prime ^ tokens[1]
    assert two.tolist() == mix64(np.array([first], dtype=np.uint64)).tolist()


def test_banding_reaches_the_edit_floor() -> None:
    """Candidates must come down to the similarity of edited copies (the edit floor)."""
    params = DetectorParams()
    bands, rows = params.lsh_bands, params.lsh_rows
    assert bands * rows <= 128
    assert lsh_collision_probability(params.threshold, bands, rows) > 0.999
    assert lsh_collision_probability(params.edit_floor + 0.1, bands, rows) > 0.97
    assert lsh_collision_probability(0.2, bands, rows) < 0.06
    b08, r08 = choose_bands(0.8, 128)
    assert lsh_collision_probability(0.75, b08, r08) > 0.97
    # datasketch's choice at 128 / 0.8 is b=9, r=13: P(0.8) ~ 0.40.
    assert lsh_collision_probability(0.8, 9, 13) < 0.45
