"""Hypothesis strategies for random pyspark StructTypes, restricted to what one schema format carries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
    VarcharType,
    VariantType,
    YearMonthIntervalType,
)

decimals = st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s)))
chars = st.integers(1, 40).map(CharType)
varchars = st.integers(1, 40).map(VarcharType)
times = st.integers(0, 6).map(TimeType)
day_time = st.sampled_from([(a, b) for a in range(4) for b in range(a, 4)]).map(lambda t: DayTimeIntervalType(*t))
year_month = st.sampled_from([(0, 0), (0, 1), (1, 1)]).map(lambda t: YearMonthIntervalType(*t))
collated = st.sampled_from(["UTF8_LCASE", "UNICODE", "UNICODE_CI"]).map(StringType)
plain = st.sampled_from(
    [
        BooleanType(), ByteType(), ShortType(), IntegerType(), LongType(), FloatType(), DoubleType(), StringType(),
        BinaryType(), DateType(), TimestampType(), TimestampNTZType(), NullType(),
    ]
)
every_atomic = st.one_of(
    plain, st.just(VariantType()), decimals, chars, varchars, times, day_time, year_month, collated
)

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
identifiers = st.builds(lambda first, rest: first + rest, st.sampled_from(_LETTERS),
                        st.text(_LETTERS + "0123456789", max_size=7))
# Spark strings are Unicode text: no lone surrogates, which cannot be encoded.
any_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
comments = st.text(st.characters(codec="utf-8"), max_size=20)
_json_leaves = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5)
json_values = _json_leaves | st.lists(_json_leaves, max_size=3) | st.dictionaries(st.text(max_size=5), _json_leaves,
                                                                                   max_size=3)


def protoc_json_name(name: str) -> str:
    """protoc's default JSON name of a field (which must be unique within a message)."""
    out, upper = [], False
    for c in name:
        if c == "_":
            upper = True
        else:
            out.append(c.upper() if upper else c)
            upper = False
    return "".join(out)


def protoc_map_entry_name(name: str) -> str:
    """protoc's name for the entry type of a map field (declared beside the fields of its message)."""
    camel = "".join(part[:1].upper() + part[1:] for part in name.split("_"))
    return camel + "Entry"


@dataclass(frozen=True)
class Carries:
    """What one format carries: the atomic types, the map key types and the column names."""

    atomic: st.SearchStrategy[DataType]
    keys: st.SearchStrategy[DataType]
    names: st.SearchStrategy[str]
    #: Each function maps a name to something sibling fields must not share.
    distinct: tuple[Callable[[str], object], ...] = (str,)


AVRO = Carries(
    atomic=st.one_of(plain, decimals, chars, varchars, times, day_time, year_month, collated),
    keys=st.one_of(st.just(StringType()), chars, varchars, collated),
    # Names that meet Avro's own: primitive type names and the names of generated records.
    names=identifiers | st.sampled_from(["null", "int", "int_", "string", "element", "value", "Row"]),
)
PROTOBUF = Carries(
    atomic=every_atomic,
    keys=st.one_of(
        st.sampled_from([BooleanType(), ByteType(), ShortType(), IntegerType(), LongType(), StringType(), DateType(),
                         TimestampType(), TimestampNTZType()]),
        decimals, chars, varchars, times, day_time, year_month, collated,
    ),
    # protoc also names map entry types after their fields, and they must be valid, distinct names.
    names=(
        identifiers.filter(lambda n: not n.endswith("Entry") and not n.lstrip("_")[:1].isdigit())
        # Names that meet protobuf's own: keywords, options, generated and well-known messages.
        | st.sampled_from(["value", "key", "Row", "RowWrapper", "spark_type", "spark_wrapper", "message", "Value"])
    ),
    distinct=(str, protoc_json_name, protoc_map_entry_name),
)
JSON = Carries(
    atomic=every_atomic,
    keys=st.one_of(
        st.sampled_from([StringType(), BinaryType(), DateType(), TimestampType(), TimestampNTZType()]),
        decimals, chars, varchars, times, collated,
    ),
    names=any_names | st.sampled_from(["$ref", "type", "properties", "a.b", "`", " "]),
)


def _on_name(key: Callable[[str], object]) -> Callable[[tuple[str, object, object]], object]:
    return lambda f: key(f[0])


def _slot(types: st.SearchStrategy[DataType]) -> st.SearchStrategy[tuple[DataType, bool]]:
    # A void value is always null, so whatever holds one must admit null.
    return st.tuples(types, st.booleans()).map(lambda t: (t[0], t[1] or isinstance(t[0], NullType)))


def _metadata() -> st.SearchStrategy[dict[str, object]]:
    return st.fixed_dictionaries({}, optional={"comment": comments, "origin": json_values})


def structs(carries: Carries, children: st.SearchStrategy[DataType]) -> st.SearchStrategy[StructType]:
    """Structs of uniquely named fields of ``children`` types."""
    fields = st.lists(
        st.tuples(carries.names, _slot(children), _metadata()),
        max_size=4,
        unique_by=tuple(_on_name(key) for key in carries.distinct),
    )
    return fields.map(
        lambda fs: StructType([StructField(name, dtype, nullable, meta) for name, (dtype, nullable), meta in fs])
    )


def data_types(carries: Carries) -> st.SearchStrategy[DataType]:
    """Any type the format carries, nested to a few levels."""

    def extend(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
        arrays = _slot(children).map(lambda t: ArrayType(t[0], t[1]))
        maps = st.tuples(carries.keys, _slot(children)).map(lambda t: MapType(t[0], t[1][0], t[1][1]))
        return st.one_of(arrays, maps, structs(carries, children))

    return st.recursive(carries.atomic, extend, max_leaves=8)


def tables(carries: Carries) -> st.SearchStrategy[StructType]:
    """Table schemas: a struct of columns of any type the format carries."""
    return structs(carries, data_types(carries))
