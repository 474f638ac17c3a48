"""``python -m neardup_scrapy.cli``: the ``neardup-scrapy`` command."""

import sys

from .main import main

sys.exit(main())
