# Part of the tokenizer, included by tokens.pyx (one compiled module; see its docstring).
# The Python half: normalising a non-ASCII piece, and the characters that are tokens alone.

# -- the Python half: normalisation of non-ASCII pieces -----------------------------------------------
#: Scripts written without spaces between words: every character is a token.
NO_SPACE_SCRIPTS = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK unified ideographs extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
_TOKEN_RE = re.compile(f"[{NO_SPACE_SCRIPTS}]|[^\\W{NO_SPACE_SCRIPTS}]+")
_NONSPACE_RE = re.compile(r"\S")
#: Digits of a date or time written with CJK unit characters (年 year, 月 month, 日 day...).
_CJK_DATE_RE = re.compile(r"\d+(?=[年月日時分秒])")
_DIGIT_RE = re.compile(r"\d")


def normalize_piece(str piece, bint mask_digits=False, bint mask_dates=True, bint char_mode=False):
    """The tokens of one piece of text: NFKC, case folding (repeated until stable, as the two do
    not commute for a few characters), then word runs, with a character of a script written
    without spaces as one token; digits masked to ``0`` as asked (``char_mode``: every
    non-space character is a token)."""
    text = unicodedata.normalize("NFKC", piece).casefold()
    for _ in range(3):
        if unicodedata.is_normalized("NFKC", text):
            break
        text = unicodedata.normalize("NFKC", text).casefold()
    if mask_digits:
        text = _DIGIT_RE.sub("0", text)
    elif mask_dates:
        text = _CJK_DATE_RE.sub("0", text)
    if char_mode:
        return _NONSPACE_RE.findall(text)
    return _TOKEN_RE.findall(text)


#: Characters U+3000..U+9FFF that are *simple*: in a script written without spaces, unchanged by
#: NFKC and case folding, one token alone, a starter (not a combining mark), and not a unit that
#: marks the digits before it as a date (年 月 日 時 分 秒). Such a character is a token by itself
#: whatever its neighbours: NFKC composes a starter only with what follows it, and in these blocks
#: only kana compose, with a following voiced sound mark (checked where the text is read).
cdef uint32_t _SIMPLE_BASE = 0x3000
cdef uint8_t _simple[0x7000]


def _simple_table():
    """The code points of the simple characters (computed from :func:`normalize_piece`)."""
    def simple(str chars):
        return (
            unicodedata.normalize("NFKC", chars) == chars
            and chars.casefold() == chars
            and _TOKEN_RE.findall(chars) == list(chars)
            and not any(unicodedata.combining(c) for c in chars)
        )
    units = set("年月日時分秒")
    found = []
    for lo, hi in ((0x3040, 0x3100), (0x31F0, 0x3200), (0x3400, 0x4DC0), (0x4E00, 0xA000)):
        block = "".join(chr(cp) for cp in range(lo, hi))
        if hi - lo > 1024 and simple(block):
            found.extend(cp for cp in range(lo, hi) if chr(cp) not in units)
            continue
        for cp in range(lo, hi):
            c = chr(cp)
            if c not in units and simple(c):
                found.append(cp)
    return found


#: The simple characters as ranges (half-open), checked against :func:`_simple_table` by a test:
#: hiragana (without the voiced sound marks and the digraph ゟ), katakana (without the digraph ヿ),
#: katakana phonetic extensions, CJK unified ideographs and extension A, less the date units.
SIMPLE_RANGES = ((0x3041, 0x3097), (0x309D, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x3200),
                 (0x3400, 0x4DC0), (0x4E00, 0xA000))
SIMPLE_EXCLUDED = "年月日時分秒"
for _lo, _hi in SIMPLE_RANGES:
    memset(&_simple[_lo - _SIMPLE_BASE], 1, _hi - _lo)
for _c in SIMPLE_EXCLUDED:
    _simple[ord(_c) - _SIMPLE_BASE] = 0


cdef inline bint _starter_at(const unsigned char *s, size_t n) noexcept nogil:
    """Whether the UTF-8 text ``s[:n]`` is empty or starts with ASCII or a simple character
    (conservative: ``False`` for anything else, which is then read by the slow path)."""
    cdef uint32_t cp
    if n == 0 or s[0] < 0x80:
        return True
    if n < 3 or s[0] < 0xE3 or s[0] > 0xE9 or (s[1] & 0xC0) != 0x80 or (s[2] & 0xC0) != 0x80:
        return False
    cp = ((<uint32_t>s[0] & 0x0F) << 12) | ((<uint32_t>s[1] & 0x3F) << 6) | (<uint32_t>s[2] & 0x3F)
    return _simple[cp - _SIMPLE_BASE]
