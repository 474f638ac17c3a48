# Part of the tokenizer, included by tokens.pyx (one compiled module; see its docstring).
# Dates and times of day: their digits masked to 0.

#: Month and weekday names of the languages most crawled (a date's words change with its digits),
#: and the units of "N hours ago".
MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "januar februar märz mai juni juli oktober dezember "
    "janvier février mars avril juin juillet août septembre octobre novembre décembre "
    "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre "
    "gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre "
    "janeiro fevereiro março maio junho julho setembro outubro novembro dezembro "
    "januari februari maart mei augustus"
)
WEEKDAYS = (
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun "
    "montag dienstag mittwoch donnerstag freitag samstag sonntag "
    "lundi mardi mercredi jeudi vendredi samedi dimanche "
    "lunes martes miércoles jueves viernes sábado domingo"
)
UNITS = "second seconds sec secs minute minutes min mins hour hours hr hrs day days week weeks month months year years"


cdef void _mask_dates(Tokenizer tk, U64Buf *out) noexcept nogil:
    """Replace the hashes of date and time digits (and of weekday names next to them) by the
    hash of ``0`` (see the module docstring)."""
    cdef TokMeta *m = tk.meta
    cdef uint64_t *h = out.data
    cdef size_t n = out.len, k
    cdef uint8_t s1, s2
    for k in range(n):
        if m[k].kind != TK_DIGITS or m[k].masked:
            continue
        # time of day: H:MM[:SS]
        if (
            m[k].ndigits <= 2 and m[k].value <= 24 and k + 1 < n and m[k + 1].kind == TK_DIGITS
            and m[k + 1].ndigits == 2 and m[k + 1].sep == 58 and m[k + 1].value <= 59
        ):
            m[k].masked = m[k + 1].masked = 1
            if k + 2 < n and m[k + 2].kind == TK_DIGITS and m[k + 2].ndigits == 2 and m[k + 2].sep == 58:
                m[k + 2].masked = 1
            continue
        if k + 2 < n and m[k + 1].kind == TK_DIGITS and m[k + 2].kind == TK_DIGITS:
            s1 = m[k + 1].sep
            s2 = m[k + 2].sep
            if s1 == s2 and (s1 == 45 or s1 == 47 or s1 == 46):
                # YYYY-MM-DD
                if (
                    m[k].ndigits == 4 and 1900 <= m[k].value <= 2099
                    and m[k + 1].ndigits <= 2 and 1 <= m[k + 1].value <= 12
                    and m[k + 2].ndigits <= 2 and 1 <= m[k + 2].value <= 31
                ):
                    m[k].masked = m[k + 1].masked = m[k + 2].masked = 1
                    continue
                # DD.MM.YYYY, MM/DD/YY and the like
                if (
                    m[k].ndigits <= 2 and m[k + 1].ndigits <= 2 and 1 <= m[k].value <= 31
                    and 1 <= m[k + 1].value <= 31 and (m[k].value <= 12 or m[k + 1].value <= 12)
                    and (
                        (m[k + 2].ndigits == 4 and 1900 <= m[k + 2].value <= 2099)
                        or m[k + 2].ndigits == 2
                    )
                ):
                    m[k].masked = m[k + 1].masked = m[k + 2].masked = 1
                    continue
        # N unit ago
        if k + 2 < n and _set_has(&tk.units, h[k + 1]) and h[k + 2] == tk.ago_hash:
            m[k].masked = 1
    # month names: the day and year next to them
    for k in range(n):
        if m[k].kind == TK_DIGITS or not _set_has(&tk.months, h[k]):
            continue
        if k >= 1 and _day(&m[k - 1]):
            m[k - 1].masked = 1
        if k + 1 < n and _day(&m[k + 1]):
            m[k + 1].masked = 1
            if k + 2 < n and _year(&m[k + 2]):
                m[k + 2].masked = 1
        elif k + 1 < n and _year(&m[k + 1]):
            m[k + 1].masked = 1
    # weekday names just before a masked date
    for k in range(n):
        if _set_has(&tk.weekdays, h[k]) and (
            (k + 1 < n and m[k + 1].masked) or (k + 2 < n and m[k + 2].masked and not m[k + 1].kind == TK_DIGITS)
        ):
            m[k].masked = 1
    for k in range(n):
        if m[k].masked:
            h[k] = tk.zero_hash


cdef void _set_add(WordSet *s, uint64_t h) noexcept:
    cdef uint32_t slot = <uint32_t>(h >> 56)
    if h == 0:
        h = 1
    while s.keys[slot] != 0 and s.keys[slot] != h:
        slot = (slot + 1) & 255
    s.keys[slot] = h


cdef inline bint _set_has(WordSet *s, uint64_t h) noexcept nogil:
    cdef uint32_t slot = <uint32_t>(h >> 56)
    if h == 0:
        h = 1
    while s.keys[slot] != 0:
        if s.keys[slot] == h:
            return True
        slot = (slot + 1) & 255
    return False


cdef inline bint _day(TokMeta *m) noexcept nogil:
    return m.kind == TK_DIGITS and m.ndigits <= 2 and 1 <= m.value <= 31


cdef inline bint _year(TokMeta *m) noexcept nogil:
    return m.kind == TK_DIGITS and m.ndigits == 4 and 1900 <= m.value <= 2099
