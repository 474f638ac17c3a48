"""Every script of ``benchmarks/`` still imports: the names it takes from the package exist.

A benchmark runs by hand, so a rename in the package can leave one importing names removed long
ago (``bench_extract.py`` did, until #33). Loading each script runs its imports and definitions,
not its measurement (that stays behind ``if __name__ == "__main__"``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_modules import BENCHMARKS, load_benchmark

SCRIPTS = sorted(path.stem for path in BENCHMARKS.glob("bench_*.py"))


def test_there_are_benchmarks() -> None:
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_benchmark_imports(name: str) -> None:
    module = load_benchmark(name)
    assert callable(getattr(module, "main", None)), f"{name} has no main()"
    text = Path(BENCHMARKS / f"{name}.py").read_text(encoding="utf-8")
    assert 'if __name__ == "__main__":' in text, f"{name} would run its measurement when imported"
