package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A table's partition spec (docs/partitioning.md) as Spark sees it: the text a CREATE TABLE sends
 * (the {@code Transform.describe()} texts of {@code PARTITIONED BY}, comma-joined), the Transforms
 * {@code Table.partitioning()} answers for the spec in the table's JSON ({@code partitionSpec.fields}),
 * the partition schema {@code SHOW PARTITIONS} uses (one field per spec field, named by the field's
 * name, typed by its result type) and partition values between the catalog's JSON and Spark's rows.
 *
 * <p>Spec field transforms are Iceberg's names: {@code identity}, {@code year}, {@code month},
 * {@code day}, {@code hour}, {@code bucket[N]}, {@code truncate[W]}. Their values are what chunk
 * statistics use: identity the source value (dates as days, timestamps as microseconds since the
 * epoch), year/month/day/hour the count since 1970 (an int), bucket the bucket number (an int),
 * truncate the truncated source value (binary as base64 text in JSON). Spark shows the time transforms
 * as Iceberg's partitions table does: a day as a DATE ({@code ts_day=2026-11-05}), a year, month or hour
 * as text ({@code 2026}, {@code 2026-11}, {@code 2026-11-05-10}, all UTC).
 */
final class Partitioning {
    private static final Pattern PARAMETERISED = Pattern.compile("(bucket|truncate)\\[(\\d+)]");
    /** The metadata key of a partition schema field naming its transform. */
    private static final String TRANSFORM = "streamcat.transform";
    /** The transforms whose values Spark shows as text. */
    private static final Set<String> TIME = Set.of("year", "month", "hour");
    private static final DateTimeFormatter HOUR = DateTimeFormatter.ofPattern("yyyy-MM-dd-HH").withZone(ZoneOffset.UTC);

    private Partitioning() {
    }

    /** The text form of {@code PARTITIONED BY}: Spark's {@code describe()} of each transform, comma-joined. */
    static String text(Transform[] partitions) {
        List<String> parts = new ArrayList<>();
        for (Transform transform : partitions) {
            parts.add(describe(transform));
        }
        return String.join(", ", parts);
    }

    /** {@code transform.describe()}, with {@code truncate(col, W)} (Iceberg's other order) as {@code truncate(W, col)}. */
    private static String describe(Transform transform) {
        Expression[] args = transform.arguments();
        if ("truncate".equals(transform.name()) && args.length == 2
                && args[0] instanceof NamedReference && args[1] instanceof Literal<?>) {
            return "truncate(" + args[1].describe() + ", " + args[0].describe() + ")";
        }
        return transform.describe();
    }

    /** A column name as {@link Expressions#column} parses it: one part, whatever characters it has. */
    private static String reference(String column) {
        return "`" + column.replace("`", "``") + "`";
    }

    /** The source column of a spec field: its current name, else the column with its field id. */
    private static StructField source(JsonNode field, StructType schema) {
        String name = field.path("source").asText(null);
        int index = name == null ? -1 : find(schema, name);
        if (index >= 0) {
            return schema.fields()[index];
        }
        long id = field.path("sourceId").asLong(-1);
        for (StructField column : schema.fields()) {
            if (column.metadata().contains(FieldIds.FIELD_ID) && column.metadata().getLong(FieldIds.FIELD_ID) == id) {
                return column;
            }
        }
        throw new IllegalStateException("partition field " + field.path("name").asText() + " names column "
                + (name == null ? "with field id " + id : name) + ", which the table's schema does not have");
    }

    /** The Transforms of the spec {@code fields}, as {@code Table.partitioning()} answers them. */
    static Transform[] transforms(JsonNode fields, StructType schema) {
        Transform[] out = new Transform[fields.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode field = fields.get(i);
            String column = reference(source(field, schema).name());
            String transform = field.path("transform").asText();
            Matcher parameterised = PARAMETERISED.matcher(transform);
            switch (transform) {
                case "identity":
                    out[i] = Expressions.identity(column);
                    break;
                case "year":
                    out[i] = Expressions.years(column);
                    break;
                case "month":
                    out[i] = Expressions.months(column);
                    break;
                case "day":
                    out[i] = Expressions.days(column);
                    break;
                case "hour":
                    out[i] = Expressions.hours(column);
                    break;
                default:
                    if (!parameterised.matches()) {
                        throw new IllegalStateException("partition field " + field.path("name").asText()
                                + " has a transform this catalog plugin does not know: " + transform);
                    }
                    int n = Integer.parseInt(parameterised.group(2));
                    out[i] = "bucket".equals(parameterised.group(1)) ? Expressions.bucket(n, column)
                            : Expressions.apply("truncate", Expressions.literal(n), Expressions.column(column));
            }
        }
        return out;
    }

    /**
     * The partition schema of the spec {@code fields}: one nullable field per spec field, named by its
     * name, of its result type: identity and truncate the source column's type, bucket int, day DATE, and
     * year, month and hour their text (the field's metadata names the transform: {@link #row} formats it).
     */
    static StructType schema(JsonNode fields, StructType schema) {
        StructType out = new StructType();
        for (JsonNode field : fields) {
            String transform = field.path("transform").asText();
            DataType type = switch (transform) {
                case "day" -> DataTypes.DateType;
                case "year", "month", "hour" -> DataTypes.StringType;
                default -> "identity".equals(transform) || transform.startsWith("truncate")
                        ? source(field, schema).dataType() : DataTypes.IntegerType;
            };
            Metadata metadata = new MetadataBuilder().putString(TRANSFORM, transform).build();
            out = out.add(field.path("name").asText(), type, true, metadata);
        }
        return out;
    }

    /** A year, month or hour ordinal (count since 1970, UTC) as the text Spark shows. */
    private static String timeText(String transform, int ordinal) {
        return switch (transform) {
            case "year" -> Integer.toString(1970 + ordinal);
            case "month" -> YearMonth.of(1970, 1).plusMonths(ordinal).toString();
            case "hour" -> HOUR.format(Instant.EPOCH.plus(ordinal, ChronoUnit.HOURS));
            default -> Integer.toString(ordinal);
        };
    }

    /** A partition value of the catalog's JSON as Spark holds a value of {@code type} in a row. */
    static Object internal(JsonNode value, DataType type) {
        if (value == null || value.isNull() || value.isMissingNode()) {
            return null;
        }
        if (type instanceof IntegerType || type instanceof DateType) {
            return value.asInt();
        }
        if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) {
            return value.asLong();
        }
        if (type instanceof ShortType) {
            return (short) value.asInt();
        }
        if (type instanceof ByteType) {
            return (byte) value.asInt();
        }
        if (type instanceof BooleanType) {
            return value.asBoolean();
        }
        if (type instanceof BinaryType) {
            return Base64.getDecoder().decode(value.asText());
        }
        if (type instanceof StringType) {
            return UTF8String.fromString(value.asText());
        }
        throw new IllegalStateException("a partition value of type " + type.simpleString() + " is not supported");
    }

    /** The row of partition {@code values} (JSON, one per field of {@code partitionSchema}). */
    static InternalRow row(JsonNode values, StructType partitionSchema) {
        StructField[] fields = partitionSchema.fields();
        if (!values.isArray() || values.size() != fields.length) {
            throw new IllegalStateException("the catalog answered partition values " + values + " for the "
                    + fields.length + " fields of " + partitionSchema.simpleString());
        }
        Object[] out = new Object[fields.length];
        for (int i = 0; i < out.length; i++) {
            JsonNode value = values.get(i);
            String transform = fields[i].metadata().contains(TRANSFORM) ? fields[i].metadata().getString(TRANSFORM) : "";
            out[i] = fields[i].dataType() instanceof StringType && TIME.contains(transform) && value.canConvertToInt()
                    ? UTF8String.fromString(timeText(transform, value.asInt()))
                    : internal(value, fields[i].dataType());
        }
        return new GenericInternalRow(out);
    }

    /** Whether the {@code names}d fields of {@code row} hold the values of {@code ident} (in that order). */
    static boolean matches(InternalRow row, StructType partitionSchema, String[] names, InternalRow ident) {
        for (int i = 0; i < names.length; i++) {
            int index = indexOf(partitionSchema, names[i]);
            DataType type = partitionSchema.fields()[index].dataType();
            Object have = row.isNullAt(index) ? null : row.get(index, type);
            Object want = ident.isNullAt(i) ? null : ident.get(i, type);
            if (!same(have, want)) {
                return false;
            }
        }
        return true;
    }

    private static int indexOf(StructType partitionSchema, String name) {
        int index = find(partitionSchema, name);
        if (index >= 0) {
            return index;
        }
        throw Refusal.invalid("the table has no partition field " + name + "; its partition fields are "
                + String.join(", ", partitionSchema.fieldNames()));
    }

    /** The index of the field named {@code name}, matched exactly, else ignoring case (as Spark resolves); -1: none. */
    private static int find(StructType struct, String name) {
        StructField[] fields = struct.fields();
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].name().equals(name)) {
                return i;
            }
        }
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].name().equalsIgnoreCase(name)) {
                return i;
            }
        }
        return -1;
    }

    private static boolean same(Object a, Object b) {
        if (a instanceof byte[] x && b instanceof byte[] y) {
            return Arrays.equals(x, y);
        }
        return Objects.equals(a, b);
    }

    /** A partition's values as {@code name=value} text, for messages. */
    static String describe(InternalRow ident, StructType partitionSchema) {
        List<String> parts = new ArrayList<>();
        StructField[] fields = partitionSchema.fields();
        for (int i = 0; i < fields.length && i < ident.numFields(); i++) {
            Object value = ident.isNullAt(i) ? null : ident.get(i, fields[i].dataType());
            parts.add(fields[i].name() + "=" + (value instanceof byte[] b ? Base64.getEncoder().encodeToString(b)
                    : String.valueOf(value)));
        }
        return "(" + String.join(", ", parts) + ")";
    }
}
