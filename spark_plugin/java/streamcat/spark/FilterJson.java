package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringStartsWith;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Optional;

/**
 * Spark filters as JSON the Python reader can check against chunk statistics.
 *
 * Values are written in the units of the statistics: dates as days since the epoch,
 * timestamps as microseconds since the epoch. Filters on nested fields, and values that
 * have no statistics (decimals, binary), are left out: they cannot skip chunks.
 */
final class FilterJson {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private FilterJson() {
    }

    static Optional<JsonNode> toJson(Filter filter) {
        if (filter instanceof And and) {
            Optional<JsonNode> left = toJson(and.left());
            Optional<JsonNode> right = toJson(and.right());
            // One side of a conjunction is enough to rule a chunk out.
            if (left.isEmpty()) {
                return right;
            }
            if (right.isEmpty()) {
                return left;
            }
            return Optional.of(binary("and", left.get(), right.get()));
        }
        if (filter instanceof Or or) {
            Optional<JsonNode> left = toJson(or.left());
            Optional<JsonNode> right = toJson(or.right());
            if (left.isEmpty() || right.isEmpty()) {
                return Optional.empty();
            }
            return Optional.of(binary("or", left.get(), right.get()));
        }
        if (filter instanceof EqualTo f) {
            return compare("eq", f.attribute(), f.value());
        }
        if (filter instanceof EqualNullSafe f) {
            return f.value() == null ? column("isnull", f.attribute()) : compare("eq", f.attribute(), f.value());
        }
        if (filter instanceof GreaterThan f) {
            return compare("gt", f.attribute(), f.value());
        }
        if (filter instanceof GreaterThanOrEqual f) {
            return compare("ge", f.attribute(), f.value());
        }
        if (filter instanceof LessThan f) {
            return compare("lt", f.attribute(), f.value());
        }
        if (filter instanceof LessThanOrEqual f) {
            return compare("le", f.attribute(), f.value());
        }
        if (filter instanceof IsNull f) {
            return column("isnull", f.attribute());
        }
        if (filter instanceof IsNotNull f) {
            return column("notnull", f.attribute());
        }
        if (filter instanceof StringStartsWith f) {
            return compare("startswith", f.attribute(), f.value());
        }
        if (filter instanceof In f) {
            if (!simpleName(f.attribute())) {
                return Optional.empty();
            }
            ArrayNode values = NODES.arrayNode();
            for (Object value : f.values()) {
                Optional<JsonNode> json = value(value);
                if (json.isEmpty()) {
                    return Optional.empty();
                }
                values.add(json.get());
            }
            ObjectNode node = NODES.objectNode().put("op", "in").put("column", f.attribute());
            node.set("values", values);
            return Optional.of(node);
        }
        return Optional.empty();
    }

    private static boolean simpleName(String attribute) {
        return !attribute.contains(".") && !attribute.contains("`");
    }

    private static ObjectNode binary(String op, JsonNode left, JsonNode right) {
        ObjectNode node = NODES.objectNode().put("op", op);
        node.set("left", left);
        node.set("right", right);
        return node;
    }

    private static Optional<JsonNode> column(String op, String attribute) {
        if (!simpleName(attribute)) {
            return Optional.empty();
        }
        return Optional.of(NODES.objectNode().put("op", op).put("column", attribute));
    }

    private static Optional<JsonNode> compare(String op, String attribute, Object value) {
        if (!simpleName(attribute)) {
            return Optional.empty();
        }
        return value(value).map(v -> {
            ObjectNode node = NODES.objectNode().put("op", op).put("column", attribute);
            node.set("value", v);
            return node;
        });
    }

    private static long micros(Instant instant) {
        return instant.getEpochSecond() * 1_000_000L + instant.getNano() / 1_000L;
    }

    /** The value in the units of the statistics, or empty when statistics cannot judge it. */
    static Optional<JsonNode> value(Object value) {
        if (value instanceof Byte || value instanceof Short || value instanceof Integer || value instanceof Long) {
            return Optional.of(NODES.numberNode(((Number) value).longValue()));
        }
        if (value instanceof Float || value instanceof Double) {
            double d = ((Number) value).doubleValue();
            return Double.isFinite(d) ? Optional.of(NODES.numberNode(d)) : Optional.empty();
        }
        if (value instanceof String s) {
            return Optional.of(NODES.textNode(s));
        }
        if (value instanceof Boolean b) {
            return Optional.of(NODES.booleanNode(b));
        }
        if (value instanceof LocalDate d) {
            return Optional.of(NODES.numberNode(d.toEpochDay()));
        }
        if (value instanceof java.sql.Date d) {
            return Optional.of(NODES.numberNode(d.toLocalDate().toEpochDay()));
        }
        if (value instanceof Instant i) {
            return Optional.of(NODES.numberNode(micros(i)));
        }
        if (value instanceof java.sql.Timestamp t) {
            return Optional.of(NODES.numberNode(micros(t.toInstant())));
        }
        if (value instanceof LocalDateTime t) {
            return Optional.of(NODES.numberNode(micros(t.toInstant(ZoneOffset.UTC))));
        }
        return Optional.empty();
    }
}
