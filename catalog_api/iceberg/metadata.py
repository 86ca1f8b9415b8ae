"""Iceberg's table metadata (format v2, JSON) of a Streamcat table: schemas, partition specs, the
expressible snapshots and the properties that say which commit is shown."""

from __future__ import annotations

import json
import uuid
from typing import Any

from catalog_api.aggregates import HIDDEN_FIELD_IDS, state_columns
from catalog_api.iceberg.model import BEHIND_PROPERTY, COMMIT_PROPERTY, TableHistory
from catalog_api.iceberg.schemas import highest_id, iceberg_spec, name_mapping
from catalog_api.model import Table
from catalog_api.partitioning.spec import NO_PARTITION_FIELDS

#: Where Iceberg readers find the names of columns in files written without field ids.
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


def table_uuid(table: Table) -> str:
    """A uuid of the table that a table of the same name created later does not share."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"streamcat:{table.scope}/{table.name}@{table.stream.created_at}"))


def table_metadata(
    table: Table,
    schemas: list[dict[str, Any]],
    history: TableHistory,
    manifest_lists: dict[int, str],
    location: str,
    refs_only: bool = False,
) -> dict[str, Any]:
    """The metadata of ``table``: ``schemas`` are its Iceberg schemas, oldest first (the last is current),
    ``manifest_lists`` each snapshot's manifest list URI; ``refs_only``: only the snapshot ``main`` names."""
    current = schemas[-1]
    if table.primary_key:
        by_name = {f["name"]: f["id"] for f in current["fields"]}
        current = {**current, "identifier-field-ids": [by_name[k] for k in table.primary_key if k in by_name]}
        schemas = [*schemas[:-1], current]
    shown = history.current
    properties = dict(table.properties)
    properties[COMMIT_PROPERTY] = str(shown.cut if shown is not None else 0)
    properties[BEHIND_PROPERTY] = str(history.behind)
    # a file written without field ids holds the hidden state columns by name: mapped to the ids the files that
    # have ids give them, which no schema has, so that readers pass over them
    hidden = [{"field-id": HIDDEN_FIELD_IDS + i, "names": [name]}
              for i, (name, _) in enumerate(state_columns(table.properties))]
    properties[NAME_MAPPING_PROPERTY] = json.dumps(name_mapping(schemas) + hidden)
    if table.comment:
        properties.setdefault("comment", table.comment)
    snapshots = history.snapshots if not refs_only or shown is None else (shown,)
    schema_ids = {s["schema-id"] for s in schemas}
    specs = [iceberg_spec(s) for s in table.partition_specs]
    metadata: dict[str, Any] = {
        "format-version": 2,
        "table-uuid": table_uuid(table),
        "location": location,
        "last-sequence-number": shown.cut if shown is not None else 0,
        "last-updated-ms": max(history.last_updated_ms, table.stream.created_at),
        "last-column-id": max(highest_id(s) for s in schemas),
        "current-schema-id": current["schema-id"],
        "schemas": schemas,
        "default-spec-id": table.partition_spec.spec_id,
        "partition-specs": specs,
        "last-partition-id": max([NO_PARTITION_FIELDS, *(f["field-id"] for s in specs for f in s["fields"])]),
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": properties,
        "current-snapshot-id": shown.cut if shown is not None else -1,
        "refs": {"main": {"snapshot-id": shown.cut, "type": "branch"}} if shown is not None else {},
        "snapshots": [
            {
                "snapshot-id": s.cut,
                **({"parent-snapshot-id": s.parent} if s.parent is not None else {}),
                "sequence-number": s.cut,
                "timestamp-ms": s.timestamp_ms,
                "manifest-list": manifest_lists[s.cut],
                "summary": s.summary,
                "schema-id": s.schema_id if s.schema_id in schema_ids else current["schema-id"],
            }
            for s in snapshots
        ],
        "snapshot-log": [{"snapshot-id": s.cut, "timestamp-ms": s.timestamp_ms} for s in snapshots],
        "metadata-log": [],
    }
    return metadata
