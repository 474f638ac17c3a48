"""The core (``neardup_scrapy.core``) and the command line (``neardup_scrapy.cli``, its input
readers too) import no Scrapy or Twisted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PURE = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for pattern in ("neardup_scrapy/core/**/*.py", "neardup_scrapy/cli/**/*.py")
    for path in ROOT.glob(pattern)
    if path.name not in ("__init__.py", "__main__.py")
)


def test_pure_modules_import_no_framework() -> None:
    assert "neardup_scrapy.core.exports" in PURE and "neardup_scrapy.cli.inputs.warc" in PURE
    code = (
        "import importlib, sys\n"
        f"for name in {PURE!r}: importlib.import_module(name)\n"
        "banned = ('scrapy', 'twisted', 'parsel', 'itemadapter')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in banned)\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "", result.stdout


def test_core_ruff_rule_bans_scrapy() -> None:
    for wing in ("core", "cli"):
        rules = (ROOT / "neardup_scrapy" / wing / "ruff.toml").read_text()
        assert '"scrapy".msg' in rules and '"twisted".msg' in rules, wing


def _package_imports(path: Path) -> set[str]:
    """The subpackages or modules of ``neardup_scrapy`` a file imports (first name below it)."""
    import ast

    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                target = [*base, *node.module.split(".")] if node.module else base
                if len(target) == 1:  # ``from .. import name``
                    target += [alias.name for alias in node.names[:1]]
            else:
                target = (node.module or "").split(".")
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("neardup_scrapy."))
            continue
        else:
            continue
        if target[:1] == ["neardup_scrapy"] and len(target) > 1:
            names.add(target[1])
    return names


def test_the_command_line_and_the_scrapy_components_do_not_import_each_other() -> None:
    cli = sorted((ROOT / "neardup_scrapy" / "cli").glob("**/*.py"))
    assert len(cli) > 10
    for path in cli:
        assert _package_imports(path) <= {"core", "report", "cli"}, path
    scrapy_side = [
        *(ROOT / "neardup_scrapy").glob("*.py"),
        *(ROOT / "neardup_scrapy" / "checking").glob("*.py"),
        *(ROOT / "neardup_scrapy" / "report").glob("**/*.py"),
        *(ROOT / "neardup_scrapy" / "core").glob("**/*.py"),
    ]
    assert len(scrapy_side) > 20
    for path in scrapy_side:
        assert "cli" not in _package_imports(path), path


def _core_imports(path: Path) -> set[str]:
    """The modules of ``neardup_scrapy.core`` a file imports, as dotted names (relative imports
    resolved; ``from package import name`` gives ``package.name``)."""
    import ast

    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join((*base, *(node.module.split(".") if node.module else ())))
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.startswith("neardup_scrapy.core.")}


def test_core_packages_import_one_way() -> None:
    """``core.detection`` (the detector, what uses the store) sits on ``core.storage``, which sits
    on the rest of the core; only the public face (``core/__init__.py`` and the documented
    ``core/exports.py``) re-exports from above."""
    core = ROOT / "neardup_scrapy" / "core"
    above = {
        "neardup_scrapy/core": ("neardup_scrapy.core.storage.", "neardup_scrapy.core.detection."),
        "neardup_scrapy/core/native": ("neardup_scrapy.core.storage.", "neardup_scrapy.core.detection."),
        "neardup_scrapy/core/urlrules": ("neardup_scrapy.core.storage.", "neardup_scrapy.core.detection."),
        "neardup_scrapy/core/storage": ("neardup_scrapy.core.detection.",),
    }
    facade = {core / "__init__.py", core / "exports.py"}
    checked = 0
    for folder, banned in above.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            if path in facade:
                continue
            checked += 1
            upward = sorted(name for name in _core_imports(path) if name.startswith(banned))
            assert not upward, (path, upward)
    assert checked > 30
