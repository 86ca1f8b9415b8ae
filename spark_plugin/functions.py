"""Registry-aware Spark column functions: framed binary payloads to structs and back.

Open-source Spark's ``from_avro`` takes one fixed schema and ignores registry framing; Kafka
users strip the 5-byte prefix and look schemas up by hand. These functions do it for them::

    from spark_plugin.functions import from_registry, to_registry

    orders = kafka_df.select(from_registry("value", "http://registry:9092", "orders-value").alias("order"))
    out = orders.select(to_registry("order", "http://registry:9092", "orders-value").alias("value"))

- :func:`from_registry` decodes a binary column of Confluent-framed (0x00, schema id) or
  Pravega-framed (0x01, encoding id) Avro, Protobuf or JSON payloads, in any mix, into a
  struct under a reader schema: the subject's (group's) latest by default. Each writer
  schema is resolved once per executor process and read under the reader schema by the
  format's resolution rules (Avro: defaults for missing fields, promotions), exactly as
  :class:`registry.serde.Deserializer` does.
- :func:`to_registry` encodes a struct column into framed payloads of a registered schema
  (Confluent framing by default, or Pravega framing with an optional codec).
- :func:`decode_registry` does what :func:`from_registry` does to one column of a DataFrame,
  through ``mapInArrow`` over whole rows, which spares Spark buffering and joining each row.

They run over Arrow batches, never one Python call per row; the decoding functions read a few
batches and decode them together (:data:`MERGED_ROWS`), answering each batch. The struct's Spark
type is the reader schema converted by :func:`catalog_api.schema.to_struct`, the converter
the catalog uses for tables. A Confluent subject is the registry group of the same name (in
``namespace``). Only client-side modules are imported: the registry client, the serializers,
the schema converter, pyarrow and numpy. Reference: ``docs/spark-functions.md``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from registry.client import RegistryClient
from registry.model import NO_CODEC, SchemaInfo
from registry.serde.errors import SerdeError
from spark_plugin.decoding import FAILFAST, MODES, PERMISSIVE, BatchDecoder

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = ["FAILFAST", "PERMISSIVE", "decode_registry", "from_registry", "reader_type", "to_registry"]

_FRAMINGS = ("confluent", "pravega")

_Item = TypeVar("_Item")


def _latest(client: RegistryClient, group: str, type_name: str | None) -> SchemaInfo:
    latest = client.latest_schemas(group, type_name)
    if not latest:
        raise SerdeError(f"group {group!r} has no schema" + (f" of type {type_name}" if type_name else ""))
    if len(latest) > 1:
        types = ", ".join(sorted(s.schema.type for s in latest))
        raise SerdeError(f"group {group!r} holds several types ({types}): name one with type_name")
    return latest[0].schema


def _python_workers() -> None:
    """Make UDF workers run the interpreter the session names in ``spark.pyspark.python``.

    spark-submit turns that setting into PYSPARK_PYTHON; a session built in a plain Python
    process does not, and PySpark then gives UDFs ``python3`` from PATH (which may lack
    pyarrow and this project) while Python data sources follow the setting.
    """
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return
    # The context's own conf, one Py4J call: getConf() copies every setting, one call each
    # (tens of milliseconds, paid by every query that builds one of these columns).
    configured = sc._conf.get("spark.pyspark.python")
    if configured and sc.pythonExec != configured:
        sc.pythonExec = configured


def _spark_type(schema: SchemaInfo) -> StructType:
    from pyspark.sql.types import StructType

    from catalog_api.schema import to_struct

    return StructType.fromJson(to_struct(schema.format.name, schema.data, schema.type))


def reader_type(uri: str, subject_or_group: str, reader_schema: SchemaInfo | None = None, *,
                namespace: str = "", type_name: str | None = None) -> StructType:
    """The Spark type :func:`from_registry` returns for these arguments."""
    schema = reader_schema or _latest(RegistryClient(uri, namespace), subject_or_group, type_name)
    return _spark_type(schema)


# -- decoding ----------------------------------------------------------------------------------------


def from_registry(col: Column | str, uri: str, subject_or_group: str, reader_schema: SchemaInfo | None = None, *,
                  namespace: str = "", type_name: str | None = None, mode: str = FAILFAST) -> Column:
    """Decode a binary column of framed payloads into a struct under a reader schema.

    ``col`` holds Confluent-framed (magic byte 0x00, then a global schema id, for Protobuf the
    message indexes) or Pravega-framed (0x01, then an encoding id of ``subject_or_group``)
    payloads; rows may mix framings, schema versions and (Pravega) codecs. ``reader_schema``
    defaults to the latest schema of the subject or group (``type_name`` picks one type in a
    group that holds several); every writer schema must be readable by it, as the registry's
    compatibility checker decides, or the query fails naming what breaks. Null payloads give
    null. ``mode``: ``FAILFAST`` (a bad payload, such as an unknown id or truncated bytes,
    fails the query with the reason) or ``PERMISSIVE`` (it reads as null).
    """
    from pyspark.sql.pandas.functions import arrow_udf

    batch = _batch_decoder(uri, subject_or_group, reader_schema, namespace, type_name, mode)

    # An iterator UDF (its type hints make it one): it may read a few batches before answering
    # them, and decode them together (see _merged).
    def decode(batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        for group in _merged(batches, len):
            decoded = batch(group[0] if len(group) == 1 else pa.chunked_array(group))
            yield from _split(decoded, [len(payloads) for payloads in group])

    # pyspark's stubs know only the form with functionType, which pyspark itself now warns against.
    return arrow_udf(decode, batch.struct)(col)  # type: ignore[call-overload]


#: Rows decoded together. Spark hands a UDF whose input comes from a columnar scan one batch per
#: scan batch (4096 rows for Parquet, whatever ``maxRecordsPerBatch`` says), and every whole-batch
#: numpy operation has a fixed cost of about a microsecond: decoding 32768 rows at once costs
#: about a third less per row than 4096 at a time. The rows waiting meanwhile are a few megabytes.
MERGED_ROWS = 32768


def _merged(batches: Iterator[_Item], rows: Callable[[_Item], int]) -> Iterator[list[_Item]]:
    """``batches`` in consecutive groups of at least :data:`MERGED_ROWS` rows (the last may hold fewer)."""
    group: list[_Item] = []
    count = 0
    for item in batches:
        group.append(item)
        count += rows(item)
        if count >= MERGED_ROWS:
            yield group
            group, count = [], 0
    if group:
        yield group


def _split(array: pa.Array, sizes: list[int]) -> Iterator[pa.Array]:
    """``array`` cut into consecutive slices of ``sizes`` (zero-copy): one answer per batch received.

    Spark's columnar path for Arrow-backed input pairs each answer with the batch it answers,
    so the answers keep the batches' boundaries.
    """
    start = 0
    for size in sizes:
        yield array.slice(start, size)
        start += size


def _batch_decoder(uri: str, subject_or_group: str, reader_schema: SchemaInfo | None, namespace: str,
                   type_name: str | None, mode: str) -> BatchDecoder:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    _python_workers()
    reader = reader_schema or _latest(RegistryClient(uri, namespace), subject_or_group, type_name)
    return BatchDecoder(uri, namespace, subject_or_group, reader, _spark_type(reader), mode)


def decode_registry(frame: DataFrame, column: str, uri: str, subject_or_group: str,
                    reader_schema: SchemaInfo | None = None, *, namespace: str = "", type_name: str | None = None,
                    mode: str = FAILFAST) -> DataFrame:
    """``frame`` with its binary ``column`` replaced by the decoded struct, as :func:`from_registry` decodes it.

    The same decoding through ``mapInArrow`` over whole rows instead of an Arrow UDF over one
    column: Spark then neither buffers each input row to join it to the UDF's result nor
    projects the join, which makes it faster when few other columns ride along (every column
    of ``frame`` passes through Python). The other columns keep their values and types.
    """
    from pyspark.sql.types import StructField, StructType

    batch = _batch_decoder(uri, subject_or_group, reader_schema, namespace, type_name, mode)
    names = frame.columns
    if column not in names:
        raise ValueError(f"no column {column!r} in {names}")
    index = names.index(column)
    fields = list(frame.schema.fields)
    fields[index] = StructField(column, batch.struct, True)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for group in _merged(batches, lambda rows: rows.num_rows):
            columns = [rows.column(index) for rows in group]
            decoded = batch(columns[0] if len(group) == 1 else pa.chunked_array(columns))
            for rows, values in zip(group, _split(decoded, [rows.num_rows for rows in group]), strict=True):
                arrays = list(rows.columns)
                arrays[index] = values
                yield pa.RecordBatch.from_arrays(arrays, names=names)

    return frame.mapInArrow(decode, StructType(fields))


# -- encoding -------------------------------------------------------------------------------------------


def _prefix(client: RegistryClient, group: str, schema: SchemaInfo, framing: str, codec: str,
            register: bool) -> bytes:
    """The bytes every payload starts with, learned from the registry once, on the driver."""
    from registry.formats import get_format
    from registry.serde import DEFAULT_CODECS
    from registry.serde.confluent import encode_prefix, message_indexes
    from registry.serde.wire import encode_header

    version = client.add_schema(group, schema) if register else client.find_version(group, schema)
    if framing == "confluent":
        parsed = get_format(schema.format.name).parse(schema.data, schema.type)
        indexes = message_indexes(parsed) if parsed.format == "Protobuf" else None
        return encode_prefix(version.id, indexes)
    if codec:
        client.add_codec_type(group, DEFAULT_CODECS.resolve(codec).codec_type)
    return encode_header(client.encoding_id(group, version, DEFAULT_CODECS.resolve(codec).name))


#: Per executor process: the record encoder of each (schema, prefix, codec, validate).
_encoders: dict[tuple[str, ...], Callable[[Any], bytes]] = {}
_encoders_lock = threading.Lock()


def _write(schema: SchemaInfo, prefix: bytes, codec: str, validate: bool) -> Callable[[Any], bytes]:
    """A function from a record to its framed payload (built once per executor process)."""
    key = (schema.format.name, schema.type, schema.data.hex(), prefix.hex(), codec, str(validate))
    found = _encoders.get(key)
    if found is not None:
        return found
    from registry.formats import get_format
    from registry.serde import DEFAULT_CODECS
    from registry.serde.codecs import NoCodec
    from registry.serde.record_formats import record_format

    parsed = get_format(schema.format.name).parse(schema.data, schema.type)
    compressor = DEFAULT_CODECS.resolve(codec)
    if isinstance(compressor, NoCodec):
        write = record_format(parsed.format).encoder(parsed, validate=validate, prefix=prefix)
    else:
        body = record_format(parsed.format).encoder(parsed, validate=validate, prefix=b"")
        compress = compressor.encode

        def write(record: Any) -> bytes:
            return prefix + compress(body(record))

    with _encoders_lock:
        return _encoders.setdefault(key, write)


def _encoder(schema: SchemaInfo, struct: StructType, prefix: bytes, codec: str,
             validate: bool) -> Callable[[pa.Array], pa.Array]:
    """The batch function: a struct array of ``struct`` in, a binary array of framed payloads out."""
    from spark_plugin.records import records_writer

    to_records = records_writer(struct, schema.format.name)

    def encode(rows: pa.Array) -> pa.Array:
        write = _write(schema, prefix, codec, validate)
        return pa.array([None if r is None else write(r) for r in to_records(rows)], type=pa.binary())

    return encode


def to_registry(col: Column | str, uri: str, subject_or_group: str, schema: SchemaInfo | None = None, *,
                namespace: str = "", type_name: str | None = None, framing: str = "confluent",
                codec: str = NO_CODEC, register: bool = True, validate: bool = False) -> Column:
    """Encode a struct column into framed payloads of a registered schema; null rows give null.

    ``schema`` defaults to the latest schema of the subject or group; a given one is registered
    in it first (through the Pravega API; ``register=False`` only looks it up). The struct's
    fields are matched to the schema's by name (:func:`reader_type` gives the exact type).
    ``framing``: ``confluent`` (0x00, the global schema id, for Protobuf the message indexes;
    readable by confluent-kafka's deserializers) or ``pravega`` (0x01, the encoding id of the
    schema and ``codec``). With ``validate``, records are checked against the schema first.
    """
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.sql.types import BinaryType

    if framing not in _FRAMINGS:
        raise ValueError(f"framing must be one of {', '.join(_FRAMINGS)}, not {framing!r}")
    if codec and framing == "confluent":
        raise ValueError("Confluent framing has no codec: use framing='pravega' to compress payloads")
    _python_workers()
    client = RegistryClient(uri, namespace)
    writer = schema or _latest(client, subject_or_group, type_name)
    prefix = _prefix(client, subject_or_group, writer, framing, codec, register and schema is not None)
    encode = _encoder(writer, _spark_type(writer), prefix, codec, validate)
    return arrow_udf(encode, BinaryType())(col)  # type: ignore[call-overload]
