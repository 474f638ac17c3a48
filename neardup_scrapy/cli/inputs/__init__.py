"""What ``neardup-scrapy scan`` reads: JSON Lines, JSON array feeds, WARC/ARC and WACZ.

Reading is split in two so that ``scan --jobs`` can spread the costly half over processes:

* a reader (:func:`open_input`) cuts the input into :class:`Unit` objects in input order --
  cheap work done by the main process (finding line ends, walking WARC headers);
* :func:`decode` turns one unit into a :class:`Record`: JSON parsing, field checks, body
  size cap -- done wherever the page is analysed.

A record that cannot be checked has a ``reason``; ``problem`` tells a defect of the input (an
invalid JSON line, an item without a page body) from a record that is simply not a page (a
WARC request record, an image): only defects make ``scan`` exit with status 1.
"""

from __future__ import annotations

from .base import InputFormatError, Record, Unit, decode
from .detect import InputSource, open_input

__all__ = ["InputFormatError", "InputSource", "Record", "Unit", "decode", "open_input"]
