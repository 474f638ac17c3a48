"""The compiled per-page pass (Cython over lxml's C API and the libxml2 inside lxml).

* :mod:`.extract`: main-content extraction in one walk over a parsed tree or over the events
  of libxml2's HTML parser as it reads a document;
* :mod:`.tokens`: word tokens and their seeded hashes, with date and time masking;
* :mod:`.sketch`: shingles, MinHash, SimHash, digest, bucket keys, the page profile and its
  comparisons;
* :mod:`.page`: the three chained over reused buffers, one call per page;
* :mod:`.bucketmap`: the index's bucket lookups; :mod:`.chance`: the test of its hits that
  share a SimHash block by chance.
"""
