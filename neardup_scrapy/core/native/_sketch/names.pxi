# Part of the sketcher, included by sketch.pyx (one compiled module; see its docstring).
# Names: whether two pages' headings and titles name the same thing.

cdef bint _same_words(const uint16_t *a, int na, const uint16_t *b, int nb, uint16_t ignore) noexcept:
    """Two word sets name the same thing: one holds the other (a title decorated with a site
    name), or they share 80% of their words. Words with bit ``ignore`` set are left out (an empty
    set then names nothing, and agrees)."""
    cdef int i = 0, j = 0, common = 0, ka = 0, kb = 0
    for i in range(na):
        ka += not (a[i] & ignore)
    for j in range(nb):
        kb += not (b[j] & ignore)
    if ka == 0 or kb == 0:
        return True
    i = j = 0
    while i < na and j < nb:
        if a[i] & ignore:
            i += 1
        elif b[j] & ignore:
            j += 1
        elif a[i] == b[j]:
            common += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1
    return common == ka or common == kb or common * 5 >= 4 * (ka + kb - common)


cdef int _names(const Profile *pa, const Profile *pb, uint16_t ignore) noexcept:
    """1 when the two pages' names (headings, titles) agree, 0 when they name different things,
    -1 when no comparison can be made (see :func:`names_relation`)."""
    cdef bint made = False, like = True
    if pa.nh and pb.nh:
        made = True
        like = _same_words(pa.heading, pa.nh, pb.heading, pb.nh, ignore)
    if pa.nt and pb.nt:
        made = True
        like = like and _same_words(pa.title, pa.nt, pb.title, pb.nt, ignore)
    if made and like:
        return 1
    if pa.nh and pb.nt:
        made = True
        if _same_words(pa.heading, pa.nh, pb.title, pb.nt, ignore):
            return 1
    if pa.nt and pb.nh:
        made = True
        if _same_words(pa.title, pa.nt, pb.heading, pb.nh, ignore):
            return 1
    return 0 if made else -1


#: :func:`names_relation` results.
NAMES_AGREE = 0
NAMES_DIFFER = 1
NAMES_DIFFER_IN_NUMBERS = 2


def names_relation(bytes a, bytes b):
    """How two pages' names relate: ``NAMES_AGREE``, ``NAMES_DIFFER`` or ``NAMES_DIFFER_IN_NUMBERS``.

    A page's names are its heading (first ``<h1>``, else a title-classed element) and its
    ``<title>``; a qualified name (``scipy.sparse.csr_matrix.mean``) or a dotted number is one
    word. Like is compared with like: heading with heading, title with title, each made where
    both pages have one; the names agree when every such comparison finds the same words
    (``_same_words``). Where one does not (a copy in another template, whose heading is the
    original's ``<title>``), a page's heading compared with the other's title may still find
    them. They differ when comparisons were made and none of these agrees; they differ *in
    numbers* when leaving out the numbers (version, part or chapter numbers) makes the
    like-for-like comparisons agree: another release, part or chapter of a document.
    """
    cdef Profile pa, pb
    _parse(a, &pa)
    _parse(b, &pb)
    if _names(&pa, &pb, 0) != 0:
        return NAMES_AGREE
    if _names(&pa, &pb, 0x8000) == 1:
        return NAMES_DIFFER_IN_NUMBERS
    return NAMES_DIFFER


def heads_agree(bytes a, bytes b):
    """Whether two pages' names allow them to be one document (:func:`names_relation` is
    ``NAMES_AGREE``)."""
    return names_relation(a, b) == NAMES_AGREE
