"""Debezium change events into a primary-key table: parsing, types, duplicates, exactly-once ingest.

The modules: ``values`` (a column's Debezium encodings to Arrow), ``decoder`` (events to pre-merged
batches, source positions), ``blocks`` and ``parallel`` (the same, many lines per call in worker
processes), ``ingest`` (batches committed exactly once).

Input is Debezium's JSON, one event per line (``streamcat ingest --format debezium-json``) or
one dict per event (:func:`ingest`):

* both envelopes: ``{"schema": ..., "payload": {...}}`` (the JSON converter with schemas) and the
  bare payload ``{"before": ..., "after": ..., "source": ..., "op": ...}``;
* ops ``c`` (create), ``r`` (snapshot read) and ``u`` (update) upsert ``after``; ``d`` deletes the key
  of ``before``. An update whose ``before`` holds another key deletes that key too (a key change);
* tombstones (an empty line, ``null``, or a ``payload`` of null) are skipped;
* ``u`` and ``d`` events need the key in ``before``: PostgreSQL sends no ``before`` for updates
  unless the table has ``REPLICA IDENTITY FULL``, so such events are refused, naming the line;
* a line that is not such an event fails its batch, naming the line: nothing of that batch is
  committed (the batches before it are).

**Values** are converted to the table's column types. Supported encodings (those of the default
configuration of the PostgreSQL connector, and the alternatives named):

==================  ==========================================================================
table column        Debezium value
==================  ==========================================================================
date                int days since 1970-01-01 (``io.debezium.time.Date``; Kafka Connect's Date),
                    or an ISO date string
timestamp[_ntz]     int since the epoch: in the unit the envelope's schema names
                    (``io.debezium.time.Timestamp`` ms, ``MicroTimestamp`` us, ``NanoTimestamp`` ns,
                    Kafka Connect's Timestamp ms) or, without a schema, in the column's unit (micros:
                    what ``timestamp``/``timestamp(6)`` columns give under ``time.precision.mode``
                    ``adaptive``); or an ISO-8601 string (``io.debezium.time.ZonedTimestamp``, for
                    ``timestamptz``), converted to UTC
time                int (``io.debezium.time.Time`` ms, ``MicroTime`` us, ``NanoTime`` ns; without a
                    schema, micros)
decimal(p, s)       ``decimal.handling.mode`` ``precise`` (default): base64 of the big-endian two's
                    complement unscaled value, with the scale of the schema's ``parameters`` (without
                    a schema: the column's scale); ``io.debezium.data.VariableScaleDecimal``
                    (``{"scale", "value"}``); ``string`` mode (decimal strings: pass
                    ``decimal_handling="string"`` when there is no schema); ``double`` mode (numbers)
binary              base64 (``binary.handling.mode`` ``bytes``, the default)
other types         the JSON value as it is (numbers, booleans, strings, arrays, objects)
==================  ==========================================================================

Not supported: ``time.precision.mode`` ``connect`` for sub-millisecond types, ``binary.handling.mode``
hex, NaN/Infinity (Jackson writes them as bare words, which is not JSON), TOAST placeholders
(``__debezium_unavailable_value``: use REPLICA IDENTITY FULL). A column of the event that the table
lacks is refused (add it to the table first); a column the event lacks is null.

**Duplicates.** An at-least-once pipeline re-delivers events after a restart. Every event has a
*source position*, ordered as the source log is:

* PostgreSQL (``source.lsn``): ``(last commit LSN, LSN)`` from ``source.sequence`` (Debezium >= 1.4),
  else ``(0, LSN)`` (exact only while transactions do not interleave);
* MySQL (``source.file``/``source.pos``): ``(binlog file, pos, row)``;
* anything else: no position, and no deduplication.

Positions only grow in a log, so an event below the highest position applied is a re-delivery
and is skipped. One WAL record can give several events at one position: a primary key update
gives a ``d`` and a ``c``, so at the highest position an event is skipped only if an event of its
op was applied there; snapshot reads (op ``r``) all share the snapshot's position: they are
applied (an upsert of a snapshot image is idempotent), and the number applied there is
remembered so that a re-run skips exactly those.

**Exactly once.** Changes are committed in batches of ``batch_size`` applied events, pre-merged (a
key appears once per commit: its last change) through :class:`~catalog_api.streams.StreamWriter`,
with the writer id and a sequence number that grows by one per batch, and with the position of
the batch's last event in the commit's properties (``debezium.position``). An ingest with a writer
id that committed before resumes after that position: re-running the same file (or a file that
overlaps the last one, as a restarted connector writes) commits nothing twice, and a commit whose
answer was lost is re-sent under the same sequence, which the server answers as a duplicate.
Batch boundaries do not matter for that: a re-run may use another ``batch_size``.

**Speed.** Lines decode (msgspec) straight into structs of the table's columns: a wrapped
envelope's ``schema`` stays raw bytes (compared with the last one seen), the source block's
other fields are skipped, and a row's values come out as one tuple. A batch is pre-merged by key
as it is gathered, converted column by column to Arrow and written as one change chunk. Large inputs
are decoded by worker processes, with the same result (:mod:`catalog_api.streams.debezium.parallel`).

**Partitioned tables.** A primary-key table may be partitioned by transforms of its key columns
(docs/partitioning.md); the writer then cuts each batch into one change chunk per partition, each
recording its ``partition`` (upserts and key deletes alike: a delete row holds its key, so it lands
where the key's rows are). An unpartitioned table's batches take the one-chunk path untouched. The
spec is the one current when the ingest starts (chunks of an earlier spec stay acceptable), but a table
first partitioned while it runs refuses the next commit (400, nothing of that batch visible): re-running
with the same writer id resumes exactly once, under the new spec.
"""

from __future__ import annotations
