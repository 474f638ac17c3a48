"""How the Redis Cluster store keeps bucket entries on its groups' slots (``lua/cluster_shards.lua``).

A group's buckets are spread over *shards* by linear hashing, each shard one string of fixed-width
entries: the bucket's field, then a ``u32`` doc id. Beside a listpack's field and value this leaves
out their length bytes and, where the group says what it was, the field's last byte: 9 bytes per
(bucket, page) where a listpack took 14 for a bucket's first page and 4 for each more.
"""

from __future__ import annotations

__all__ = ["INLINE_BYTES", "SHARD_LOAD", "shard_field"]

#: Distinct bucket fields per shard, on average, above which linear hashing splits a shard (a shard
#: of 128 fields is some 1.3 KB: one allocation, rewritten whole by each write to it). 256 saved 13
#: bytes a page on the shared sets, but left the primaries too few keys beside the serialisation
#: slot's packed host tables: at 100,000 pages on 6 primaries, its primary held 25% more keys.
SHARD_LOAD = 128
#: Bytes of ids (4 each) a bucket keeps in its shard; a bucket that outgrows them moves its ids to a
#: string of its own (``<group>:o:<field>``), as a listpack value past ``hash-max-listpack-value``.
INLINE_BYTES = 64


def shard_field(field: bytes, groups: int) -> bytes:
    """The part of a 6-byte bucket field that its group's shards store.

    A field's group is ``u16(field[4:6]) mod groups``; when ``groups`` is a power of two from 256
    up, the group fixes the last byte, which is then left out (5 bytes). Otherwise all 6 are kept.
    """
    return field[:5] if groups % 256 == 0 and 65536 % groups == 0 else field
