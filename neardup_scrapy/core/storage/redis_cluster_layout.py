"""Where a Redis Cluster index keeps its keys (:mod:`.redis_cluster`): the hash tags of its bucket
groups, spread evenly over the slots, and which hash of records holds a page."""

from __future__ import annotations

import binascii
import zlib
from dataclasses import dataclass

from .cluster_codec import RECORDS_PER_FIELD
from .redis_common import redis_bytes

#: Fields per hash of records: a dict of up to 64 entries keeps its table at 64 slots.
FIELDS_PER_KEY = 64
#: Page records per hash (``{T_k}:r:<id // RECORDS_PER_KEY>``), 4 to a field
#: (:data:`~.cluster_codec.RECORDS_PER_FIELD`): 256, so that the hashes, the largest share of an
#: index, are small and many (8,743 pages make 35 of them, spread over the primaries).
RECORDS_PER_KEY = FIELDS_PER_KEY * RECORDS_PER_FIELD
GROUPS = 256
LOG_SIZE = 1024
#: Clusters per hash of packed host tables (``{P}:ch:<root // CH_SPAN>``): at most 128 fields keep a
#: hash a listpack.
CH_SPAN = 128
SLOTS = 16384
#: Hash ``n`` of records goes to group ``n * RECORD_STRIDE mod groups``: odd (every group gets its
#: turn when ``groups`` is a power of two) and near ``groups / golden ratio`` (low discrepancy).
RECORD_STRIDE = 159
#: Most bucket groups an index may have (each then owns a range of 4 slots).
MAX_GROUPS = 4096


@dataclass(frozen=True)
class ClusterToken:
    """What a lookup saw: the commit counter before it, the fields it read, the committed ids found."""

    snapshot: int
    fields: bytes
    seen: bytes


def key_slot(tag: bytes) -> int:
    """The Redis Cluster hash slot of a hash tag's content: CRC16 (XMODEM) mod 16384."""
    return binascii.crc_hqx(tag, 0) % SLOTS


def spread_tags(prefix: str, count: int) -> list[str]:
    """``count`` hash tags of ``prefix`` on evenly spaced slots: tag ``k`` is ``<prefix>:g<k>:<j>``
    with the first ``j`` whose slot falls in the ``k``-th of ``count`` equal ranges of slots.

    A cluster whose primaries own equal ranges of slots (as ``redis-cli --cluster create`` and
    ``rebalance`` leave them) then holds an equal share of the tags: 256 tags over 6 primaries are
    42 or 43 on each, where tags hashed at random put 43 +- 6.5 (one standard deviation) on each.
    About ``SLOTS / count`` CRCs per tag (256 tags: 65,000 CRCs, a few milliseconds).
    """
    if not 1 <= count <= MAX_GROUPS:
        raise ValueError(f"groups must be 1 .. {MAX_GROUPS}, not {count}")
    out: list[str] = []
    for k in range(count):
        low, high = k * SLOTS // count, (k + 1) * SLOTS // count
        j = 0
        while not low <= key_slot(redis_bytes(f"{prefix}:g{k}:{j}")) < high:
            j += 1
        out.append(f"{prefix}:g{k}:{j}")
    return out


def field_group(field: bytes, groups: int) -> int:
    """The bucket group of a 6-byte field (its last two bytes; the shard address uses the first four)."""
    return int.from_bytes(field[4:6], "big") % groups


class ClusterLayout:
    """Where the keys of an index of ``prefix`` are: its bucket groups' hash tags (set when the index is
    opened, from the group count it was made with) and its records' hashes."""

    def __init__(self, groups: int) -> None:
        self.groups = groups
        self.group_bases: list[str] = []
        #: Shard load and bucket value limit of the groups (the index's, read when it is opened).
        self.load = 38
        self.maxval = 64

    def host_group(self, host: bytes) -> int:
        """The group on whose slot a host's counters and mirror evidence live."""
        return zlib.crc32(host) % self.groups

    def record_at(self, doc: int) -> tuple[str, bytes, int]:
        """The hash, field and slot in the field of page ``doc``'s record."""
        within = doc % RECORDS_PER_KEY
        return (
            self.record_key(doc // RECORDS_PER_KEY),
            b"%d" % (within // RECORDS_PER_FIELD),
            within % RECORDS_PER_FIELD,
        )

    def record_key(self, n: int) -> str:
        """Hash ``n`` of records: on the slot of group ``n * RECORD_STRIDE mod groups`` -- the
        golden-ratio stride leaves consecutive hashes spread over the whole slot space at every
        count (taken in turn, the first 85 hashes of records would all sit on one primary's range)."""
        return f"{self.group_bases[n * RECORD_STRIDE % self.groups]}:r:{n}"


__all__ = [
    "CH_SPAN",
    "FIELDS_PER_KEY",
    "GROUPS",
    "LOG_SIZE",
    "MAX_GROUPS",
    "RECORDS_PER_KEY",
    "SLOTS",
    "ClusterLayout",
    "ClusterToken",
    "field_group",
    "key_slot",
    "spread_tags",
]
