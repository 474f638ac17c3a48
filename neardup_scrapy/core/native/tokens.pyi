NO_SPACE_SCRIPTS: str
MONTHS: str
WEEKDAYS: str
UNITS: str

def normalize_piece(
    piece: str, mask_digits: bool = False, mask_dates: bool = True, char_mode: bool = False
) -> list[str]: ...

class Tokenizer:
    def __init__(
        self, seed: int, mask_digits: bool = False, mask_dates: bool = True, char_mode: bool = False
    ) -> None: ...
    def hashes(self, text: str | bytes) -> bytes: ...
    def word_hash(self, token: str) -> int: ...

SIMPLE_RANGES: tuple[tuple[int, int], ...]
SIMPLE_EXCLUDED: str

def _simple_table() -> list[int]: ...

FOLD_RANGES: tuple[tuple[int, int], ...]

def fold_classes() -> dict[int, tuple[int, str, bool]]: ...
