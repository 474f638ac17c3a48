"""How the Redis Cluster store packs its bucket entries and page records into Redis values.

**Bucket entries** (``lua/cluster_shards.lua``): a group's buckets are spread over *shards* by
linear hashing, each shard one string of fixed-width entries: the bucket's field, then a ``u32``
doc id. Beside a listpack's field and value this leaves out their length bytes and, where the
group says what it was, the field's last byte: 9 bytes per (bucket, page) where a listpack took
14 for a bucket's first page and 4 for each more.

**Page records** (``lua/cluster_records.lua``): a hash of records holds
:data:`RECORDS_PER_FIELD` records in each field: four ``u32`` lengths (little-endian, 0 for a
record not there), then the records in slot order; page ``id`` is slot ``id mod 4`` of field
``(id // 4) mod 64``. A field costs Redis some 48 bytes (its entry, its name, its slot in the
table) and the allocator rounds each value up to a size class (spaced 64 bytes around a record's
400, 256 around four records' 1,600): per record about 88 bytes with one record a field, 47 with
four, less the 4 bytes of its length.
"""

from __future__ import annotations

import struct

__all__ = ["INLINE_BYTES", "RECORDS_PER_FIELD", "SHARD_LOAD", "record_in", "records_in", "shard_field"]

#: Distinct bucket fields per shard, on average, above which linear hashing splits a shard (a shard
#: of 128 fields is some 1.3 KB: one allocation, rewritten whole by each write to it). 256 saved 13
#: bytes a page on the shared sets, but left the primaries too few keys beside the serialisation
#: slot's packed host tables: at 100,000 pages on 6 primaries, its primary held 25% more keys.
SHARD_LOAD = 128
#: Bytes of ids (4 each) a bucket keeps in its shard; a bucket that outgrows them moves its ids to a
#: string of its own (``<group>:o:<field>``), as a listpack value past ``hash-max-listpack-value``.
INLINE_BYTES = 64
#: Page records in one field of a hash of records.
RECORDS_PER_FIELD = 4

_LENGTHS = struct.Struct("<4I")


def shard_field(field: bytes, groups: int) -> bytes:
    """The part of a 6-byte bucket field that its group's shards store.

    A field's group is ``u16(field[4:6]) mod groups``; when ``groups`` is a power of two from 256
    up, the group fixes the last byte, which is then left out (5 bytes). Otherwise all 6 are kept.
    """
    return field[:5] if groups % 256 == 0 and 65536 % groups == 0 else field


def records_in(value: bytes | None) -> list[bytes]:
    """The :data:`RECORDS_PER_FIELD` records of a field's value, by slot (``b""``: none there).

    Raises:
        ValueError: the value is shorter than its lengths say.
    """
    if not value:
        return [b""] * RECORDS_PER_FIELD
    if len(value) < _LENGTHS.size:
        raise ValueError(f"a field of records of {len(value)} bytes, shorter than its lengths")
    lengths = _LENGTHS.unpack_from(value)
    at = _LENGTHS.size
    if at + sum(lengths) != len(value):
        raise ValueError(f"a field of records of {len(value)} bytes, its lengths say {at + sum(lengths)}")
    out = []
    for n in lengths:
        out.append(value[at : at + n])
        at += n
    return out


def record_in(value: bytes | None, slot: int) -> bytes:
    """Record ``slot`` of a field's value (``b""``: none there)."""
    return records_in(value)[slot]
