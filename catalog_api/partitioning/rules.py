"""What a table's partitioning may be, and what its chunks' partitions may be: the rules the catalog
applies when a table is created or altered, when a commit is checked, and when partitions are listed.

Pure like the rest of the package: callers pass plain values (specs, a StructType JSON schema, key column
names, a chunk's path and partition), never the catalog's store or records.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from catalog_api.schema.fieldids import assign_field_ids, has_field_ids

from .spec import (
    ALLOWED_TYPES,
    NO_PARTITION_FIELDS,
    UNPARTITIONED,
    UNPARTITIONED_SPEC_ID,
    PartitionFieldId,
    PartitioningError,
    PartitionSpec,
    SpecId,
    Struct,
    check_values,
    columns_by_id,
    parse_partitioning,
    quote,
    type_name,
)

_EMPTY: Struct = {"type": "struct", "fields": []}
#: The specs of a table that has none yet: spec 0.
_NEW_TABLE = (UNPARTITIONED,)

# -- the table's partitioning ---------------------------------------------------------------------------------


def new_spec(
    text: str,
    schema: Struct,
    specs: Sequence[PartitionSpec] = _NEW_TABLE,
    last_field_id: PartitionFieldId = NO_PARTITION_FIELDS,
) -> tuple[PartitionSpec, Struct]:
    """The spec the text form ``text`` describes for a table that has had ``specs`` (spec 0 among them;
    the default: a new table) and whose highest partition field id is ``last_field_id``, and the schema
    it is judged against.

    The spec gets the next spec id, or the id of an identical earlier spec (spec 0 for empty text); fields
    kept from an earlier spec keep their ids. When ``text`` partitions the table and ``schema``'s columns
    have no field ids, the schema returned is a copy with ids given (partition fields name their sources
    by id): the caller stores it as the table's new schema; otherwise it is ``schema`` itself. Raises
    :class:`PartitioningError` as :func:`~catalog_api.partitioning.spec.parse_partitioning` does.
    """
    if text.strip() and not has_field_ids(schema):
        schema = assign_field_ids(copy.deepcopy(schema))
    next_id = max(s.spec_id for s in specs) + 1
    earlier = [s for s in specs if not s.unpartitioned]
    return parse_partitioning(text, schema, next_id, last_field_id, earlier), schema


def check_sources(spec: PartitionSpec, schema: Struct, key: Sequence[str] = (), *, dropping: bool = False) -> None:
    """Refuses (:class:`PartitioningError`) a table schema the table's current ``spec`` cannot read: every
    field's source column must still be a top-level column of ``schema`` (by field id), of a type the
    field's transform takes, and, in a primary-key table (``key``: its key column names), a key column, so
    that every change of a key lands in one partition.

    Give ``spec`` with its sources named as they were before the schema changed
    (:func:`~catalog_api.partitioning.spec.with_current_names` of the old schema): a refusal names the column
    as the user knows it. ``dropping``: the change drops columns, so a missing source is refused as a drop
    rather than as a removal.
    """
    columns = columns_by_id(schema)
    for f in spec.fields:
        field = f"partition field {f.name} ({f.transform} of {quote(f.source)})"
        column = columns.get(f.source_id)
        if column is None:
            raise PartitioningError(
                f"cannot {'drop' if dropping else 'remove'} column {quote(f.source)}: {field} of the current "
                "partition spec reads it; change the table's partitioning first (setPartitioning)"
            )
        name, dtype = str(column["name"]), type_name(column.get("type"))
        if dtype not in ALLOWED_TYPES[f.transform.kind]:
            raise PartitioningError(
                f"column {quote(name)} cannot become of type {dtype}: {field} of the current partition spec "
                f"reads it, and {f.transform.kind} takes {', '.join(sorted(ALLOWED_TYPES[f.transform.kind]))}"
            )
        if key and name not in key:
            raise PartitioningError(
                f"{field} reads column {quote(name)}, which is not in the primary key ({', '.join(key)}): a "
                "primary-key table is partitioned by key columns only, so that every change of a key lands in "
                "one partition"
            )


# -- chunks' partitions ---------------------------------------------------------------------------------------


def stored_partition(path: str, partition: Any) -> dict[str, Any] | None:
    """The partition of chunk ``path`` as the catalog keeps it: ``partition`` itself, or None for spec 0 (the
    one way unpartitioned chunks are kept; spec 0 may be spelled out with no values). Checks only the shape,
    exactly ``{"specId": <int >= 0>, "values": [...]}``; which spec and which values is
    :func:`check_partition`'s. Raises :class:`PartitioningError` naming the chunk."""
    if partition is None:
        return None
    spec_id = partition.get("specId") if isinstance(partition, dict) else None
    values = partition.get("values") if isinstance(partition, dict) else None
    if not isinstance(spec_id, int) or isinstance(spec_id, bool) or spec_id < 0 or not isinstance(values, list) \
            or set(partition) != {"specId", "values"}:
        raise PartitioningError(
            f"chunk {path}: partition must be {{\"specId\": <spec id>, \"values\": [...]}}, not {partition!r}"
        )
    if spec_id != UNPARTITIONED_SPEC_ID:
        return partition
    if values:
        raise PartitioningError(
            f"chunk {path}: spec 0 (unpartitioned) has no fields, but the partition has values {values!r}"
        )
    return None


def check_split(what: str, path: str, declared: bool, current: PartitionSpec) -> None:
    """Refuses chunk ``path`` of a writer that splits its rows by partition (the columnar chunks of an append
    or an overwrite) when it ``declared`` no partition although ``what`` (``"table s.t"``, for the message) is
    partitioned by its ``current`` spec. A partition of an earlier spec passes, spec 0 spelled out
    (``{"specId": 0, "values": []}``) included: a writer that loaded the table before the spec changed,
    whose chunk is then kept as an unpartitioned one. A chunk that names no spec at all comes from a writer
    that does not know partitions. Which chunks a writer splits is the caller's to say."""
    if not declared and not current.unpartitioned:
        raise PartitioningError(
            f"chunk {path} has no partition, but {what} is partitioned by {current.text()} (spec "
            f"{current.spec_id}): split the rows by partition and give each columnar chunk its "
            '{"specId", "values"}'
        )


def check_partition(
    what: str, path: str, partition: Mapping[str, Any] | None, specs: Mapping[SpecId, PartitionSpec],
    schema: Struct | None,
) -> None:
    """Refuses chunk ``path``'s ``partition`` (as :func:`stored_partition` keeps it; None passes) unless it
    names one of the specs of ``what`` (``specs``, by id; a plain stream has only spec 0) and its values pass
    :func:`~catalog_api.partitioning.spec.check_values` against ``schema``, the table's current schema (None
    when no chunk of the commit has values to check). The refusal names the chunk."""
    if partition is None:
        return
    spec = specs.get(partition["specId"])
    if spec is None:
        known = ", ".join(str(i) for i in sorted(specs))
        raise PartitioningError(
            f"chunk {path}: partition spec {partition['specId']} is not a spec of {what} (its specs: {known})"
        )
    try:
        check_values(spec, partition["values"], schema or _EMPTY)
    except PartitioningError as e:
        raise PartitioningError(f"chunk {path}: {e.message}") from None


# -- listing partitions ---------------------------------------------------------------------------------------


class PartitionedChunk(Protocol):
    """What listing partitions reads of a chunk (:class:`catalog_api.model.Chunk` has it)."""

    @property
    def partition(self) -> dict[str, Any] | None:
        """``{"specId", "values"}``, or None when written unpartitioned."""


C = TypeVar("C", bound=PartitionedChunk)


def by_partition(chunks: Iterable[C], spec: PartitionSpec) -> list[tuple[tuple[Any, ...], list[C]]]:
    """``chunks`` that were written under ``spec`` (an unpartitioned chunk under spec 0), grouped by their
    partition values (each group in the chunks' order), the groups sorted by values with nulls first,
    position by position. Chunks of other specs are in none of ``spec``'s partitions: they are left out.
    Which chunks to count (position deletes hold no rows of their own) is the caller's to say."""
    found: dict[tuple[Any, ...], list[C]] = {}
    for c in chunks:
        spec_id = c.partition["specId"] if c.partition else UNPARTITIONED_SPEC_ID
        if spec_id != spec.spec_id:
            continue
        values = tuple(c.partition["values"]) if c.partition else ()
        found.setdefault(values, []).append(c)
    return sorted(found.items(), key=lambda item: _nulls_first(item[0]))


def _nulls_first(values: Sequence[Any]) -> tuple[tuple[int, Any], ...]:
    """A sort key of partition values: nulls before every value, position by position."""
    return tuple((0, 0) if v is None else (1, v) for v in values)
