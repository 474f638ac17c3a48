"""The core (``neardup_scrapy.core``) and the scan's input readers import no Scrapy or Twisted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PURE = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for pattern in ("neardup_scrapy/core/**/*.py", "neardup_scrapy/inputs/*.py")
    for path in ROOT.glob(pattern)
    if path.name != "__init__.py"
)


def test_pure_modules_import_no_framework() -> None:
    assert "neardup_scrapy.core.exports" in PURE and "neardup_scrapy.inputs.warc" in PURE
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
    rules = (ROOT / "neardup_scrapy" / "core" / "ruff.toml").read_text()
    assert '"scrapy".msg' in rules and '"twisted".msg' in rules
