"""Duplicate-url rules learnt during a crawl: which urls of a host name one document.

:class:`UrlRuleLearner` learns each host's rules from the detector's verdicts (pure, no
framework); :class:`SkipPlanner` decides, before a download, whether a request names a
document already fetched. The Scrapy glue is :mod:`neardup_scrapy.urlrules`.
"""

from .evidence import RULES_FORMAT, parse_state
from .forms import UrlForm, decompose
from .learner import UrlRuleLearner
from .planner import Prediction, SkipPlanner
from .rules import DEFAULT_MIN_SUPPORT, Rule, RuleStats

__all__ = [
    "DEFAULT_MIN_SUPPORT",
    "RULES_FORMAT",
    "Prediction",
    "Rule",
    "RuleStats",
    "SkipPlanner",
    "UrlForm",
    "UrlRuleLearner",
    "decompose",
    "parse_state",
]
