# Part of the tokenizer, included by tokens.pyx (one compiled module; see its docstring).
# Characters folded in C: the table built once per process from Python's Unicode data.

# -- characters folded in C ----------------------------------------------------------------------
#: Blocks whose characters the C path may read (any other non-ASCII character sends its run to
#: the Python path): the alphabets, punctuation and symbols up to the dingbats, CJK punctuation,
#: Hangul syllables and the full-width forms.
FOLD_RANGES = ((0x80, 0x2800), (0x3000, 0x3040), (0xAC00, 0xD7A4), (0xFF00, 0xFFF0))

cdef enum:
    FOLD_OTHER = 0   # read by the Python path
    FOLD_SEP = 1     # folds to separators only: ends a token
    FOLD_SAME = 2    # a word character that folding leaves alone
    FOLD_MAPPED = 3  # folds to other characters, word characters among them (kept in the pool)
    FOLD_DIGITS = 4  # flag: the folded text holds a digit (masked by the Python path when asked)

#: ``_fold[cp]``: the class in bits 0-1; for FOLD_MAPPED, bit 2 is set when the folded text
#: holds a digit, bits 3-8 are its UTF-8 length and the bits above its offset in ``_fold_pool``
#: (separators stored as a space). Filled once per process (on the first :class:`Tokenizer`),
#: from this Python's own Unicode tables.
cdef uint32_t _fold[0x10000]
cdef unsigned char _fold_pool[1 << 15]
cdef bint _fold_ready = False


def fold_classes():
    """``{code point: (class, folded text, holds a digit)}`` for the characters the C path reads;
    in the folded text, each separator is a space.

    The C path folds a run character by character, which is exact when folding a character
    alone gives what it gives inside any text. NFKC changes a character by its neighbours only
    through combining marks (reordered among themselves, composed with the starter before them)
    and through the second characters of canonical compositions (a Hangul vowel or final jamo,
    a few vowel signs), which compose with what comes before them. So a character qualifies
    when it and the first character it folds to are starters that compose with nothing before
    them (what follows inside its folded text was composed when it was folded alone, and the
    next character of the run starts with a starter too), and when it folds to word characters
    and separators only, none of a script written without spaces (each of whose characters is
    a token). Anything else stays on the Python path.
    """
    word = re.compile(f"[^\\W{NO_SPACE_SCRIPTS}]")
    separator = re.compile(f"[^\\w{NO_SPACE_SCRIPTS}]")  # a character of those scripts is a token
    digit = re.compile(r"\d")
    seconds = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul V and T jamo
    for cp in range(0x80, 0x10000):
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(int(parts[1], 16))

    def composes(ch):
        return unicodedata.combining(ch) != 0 or ord(ch) in seconds

    found = {}
    for lo, hi in FOLD_RANGES:
        for cp in range(lo, hi):
            ch = chr(cp)
            folded = _fold_alone(ch)
            if composes(ch) or composes(folded[0]):
                continue
            marked = "".join(f if word.match(f) else " " if separator.match(f) else "\0" for f in folded)
            if "\0" in marked:
                continue
            digits = bool(digit.search(folded))
            kind = FOLD_SEP if not marked.strip() else FOLD_SAME if folded == ch and not digits else FOLD_MAPPED
            found[cp] = (kind, marked, digits)
    return found


def _fold_alone(str ch):
    """``ch`` after NFKC and case folding, as :func:`normalize_piece` folds it."""
    text = unicodedata.normalize("NFKC", ch).casefold()
    for _ in range(3):
        if unicodedata.is_normalized("NFKC", text):
            break
        text = unicodedata.normalize("NFKC", text).casefold()
    return text


def _build_fold_table():
    """Fill ``_fold`` and ``_fold_pool`` (once per process).

    No lock (none to inherit locked across a fork): the table is a function of this Python's
    Unicode data, so two threads building it at once write the same values, and
    ``_fold_ready`` is set after every entry is written.
    """
    global _fold_ready
    cdef Py_ssize_t used, size
    cdef bytes encoded
    entries = {}
    pool = bytearray()
    for cp, (kind, folded, digits) in fold_classes().items():
        if kind != FOLD_MAPPED:
            entries[cp] = kind
            continue
        encoded = folded.encode("utf-8")
        size = len(encoded)
        if size > 63 or len(pool) + size > sizeof(_fold_pool):
            continue  # left to the Python path
        entries[cp] = FOLD_MAPPED | (FOLD_DIGITS if digits else 0) | (size << 3) | (len(pool) << 9)
        pool += encoded
    for used in range(len(pool)):
        _fold_pool[used] = pool[used]
    for cp, entry in entries.items():
        _fold[cp] = entry
    _fold_ready = True
