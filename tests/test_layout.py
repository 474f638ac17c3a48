"""The tests mirror the package: a folder of tests per package they test, and two layers of their own."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
#: Test folders that are layers, not packages: the Scrapy components with ``get_crawler``, real crawls.
LAYERS = {"components", "e2e"}
#: Tests of the project as a whole (its documentation, its benchmark scripts, this layout).
PROJECT_TESTS = {"test_documented_names.py", "test_benchmark_scripts.py", "test_layout.py"}


def test_every_test_folder_names_a_package_or_a_layer() -> None:
    for folder in sorted(p.parent for p in TESTS.rglob("test_*.py")):
        part = folder.relative_to(TESTS)
        if part == Path(".") or part.parts[0] in LAYERS:
            continue
        package = ROOT / "neardup_scrapy" / part
        assert (package / "__init__.py").is_file(), f"tests/{part} mirrors no package of neardup_scrapy"


def test_only_project_wide_tests_sit_at_the_top() -> None:
    top = {p.name for p in TESTS.glob("test_*.py")}
    misplaced = sorted(top - PROJECT_TESTS)
    assert not misplaced, f"place these in the folder of the package they test: {misplaced}"


def test_every_test_folder_is_a_package() -> None:
    """Test modules take each other's helpers by dotted name (``tests.cli.test_cli_helpers``)."""
    for folder in {p.parent for p in TESTS.rglob("test_*.py")}:
        assert (folder / "__init__.py").is_file(), folder
