from collections.abc import Iterable
from typing import Any

class PageSketch:
    status: str
    work: int
    text: bytes
    tokens: int
    digest: bytes
    signature: bytes
    simhash: int
    keys: bytes
    profile: bytes
    canonical: str
    heading: bytes
    title: bytes
    prose_chars: int
    main_chars: int
    read_whole: bool

class NativeAnalyzer:
    def __init__(
        self,
        seed: int,
        num_perm: int,
        shingle_size: int,
        bands: int,
        rows: int,
        simhash_masks: Iterable[int],
        mask_digits: bool = False,
        mask_dates: bool = True,
        char_mode: bool = False,
        max_chars: int = 500_000,
    ) -> None: ...
    @property
    def key_count(self) -> int: ...
    def analyze_tree(
        self, element: Any, host_salt: int | None = None, timeout: float = 0.0, max_work: int = 0
    ) -> PageSketch: ...
    def analyze_html(
        self, html: bytes, host_salt: int | None = None, timeout: float = 0.0, max_work: int = 0
    ) -> PageSketch | None: ...
    def analyze_text(self, text: str, host_salt: int | None = None) -> PageSketch: ...
