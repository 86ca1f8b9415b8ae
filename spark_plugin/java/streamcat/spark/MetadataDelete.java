package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.unsafe.types.UTF8String;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * DELETE whose condition covers whole chunks, decided from the chunks' statistics alone: every
 * chunk of the table either has all its rows matching (it is removed) or none (it stays). Then the
 * delete is a commit that removes files, without reading a row. Anything the statistics cannot
 * decide (an event chunk without statistics, a chunk only partly matching, a condition on an
 * expression) leaves the statement to the row-level path.
 *
 * Only append tables qualify: removing a chunk of a primary-key table would bring back the older
 * changes of its keys that other chunks hold.
 */
final class MetadataDelete {
    /** What the statistics say of one chunk: all of its rows match, none does, or they cannot tell. */
    enum Verdict { ALL, NONE, SOME }

    private MetadataDelete() {
    }

    /** The chunks to remove, if the statistics decide every chunk; empty if they do not. */
    static Optional<List<String>> plan(JsonNode chunks, Predicate[] predicates) {
        List<String> removed = new ArrayList<>();
        for (JsonNode chunk : chunks) {
            if ("deletes".equals(chunk.path("kind").asText())) {
                continue;  // position deletes of a removed chunk name nothing any more
            }
            Verdict verdict = Verdict.ALL;
            for (Predicate predicate : predicates) {
                verdict = and(verdict, verdict(chunk.path("stats"), chunk.path("eventCount").asLong(), predicate));
            }
            if (verdict == Verdict.SOME) {
                return Optional.empty();
            }
            if (verdict == Verdict.ALL) {
                removed.add(chunk.path("path").asText());
            }
        }
        return Optional.of(removed);
    }

    private static Verdict and(Verdict a, Verdict b) {
        if (a == Verdict.NONE || b == Verdict.NONE) {
            return Verdict.NONE;
        }
        return a == Verdict.ALL && b == Verdict.ALL ? Verdict.ALL : Verdict.SOME;
    }

    private static Verdict or(Verdict a, Verdict b) {
        if (a == Verdict.ALL || b == Verdict.ALL) {
            return Verdict.ALL;
        }
        return a == Verdict.NONE && b == Verdict.NONE ? Verdict.NONE : Verdict.SOME;
    }

    private static Verdict not(Verdict a) {
        return a == Verdict.ALL ? Verdict.NONE : a == Verdict.NONE ? Verdict.ALL : Verdict.SOME;
    }

    static Verdict verdict(JsonNode stats, long rows, Predicate p) {
        Expression[] c = p.children();
        switch (p.name()) {
            case "ALWAYS_TRUE":
                return Verdict.ALL;
            case "ALWAYS_FALSE":
                return Verdict.NONE;
            case "AND":
                return and(verdict(stats, rows, (Predicate) c[0]), verdict(stats, rows, (Predicate) c[1]));
            case "OR":
                return or(verdict(stats, rows, (Predicate) c[0]), verdict(stats, rows, (Predicate) c[1]));
            case "NOT":
                return not(verdict(stats, rows, (Predicate) c[0]));
            case "IS_NULL":
            case "IS_NOT_NULL": {
                JsonNode column = column(stats, c[0]);
                if (column == null || !column.has("nulls")) {
                    return Verdict.SOME;
                }
                long nulls = column.path("nulls").asLong();
                Verdict isNull = nulls == rows ? Verdict.ALL : nulls == 0 ? Verdict.NONE : Verdict.SOME;
                return "IS_NULL".equals(p.name()) ? isNull : not(isNull);
            }
            case "=": case "<": case "<=": case ">": case ">=":
                return compare(stats, rows, p.name(), c[0], c[1]);
            default:
                return Verdict.SOME;
        }
    }

    /** {@code column op literal} (or the mirror image) over a chunk's min, max and null count. */
    private static Verdict compare(JsonNode stats, long rows, String op, Expression left, Expression right) {
        if (right instanceof NamedReference && left instanceof Literal<?>) {
            return compare(stats, rows, mirror(op), right, left);
        }
        JsonNode column = column(stats, left);
        if (column == null || !(right instanceof Literal<?> literal) || literal.value() == null) {
            return Verdict.SOME;
        }
        long nulls = column.path("nulls").asLong(-1);
        if (nulls == rows) {
            return Verdict.NONE;  // a comparison with null is never true
        }
        if (nulls != 0 || !column.has("min") || !column.has("max")) {
            return Verdict.SOME;
        }
        Integer lo = cmp(column.get("min"), literal.value());
        Integer hi = cmp(column.get("max"), literal.value());
        if (lo == null || hi == null) {
            return Verdict.SOME;
        }
        switch (op) {
            case "=":
                return lo == 0 && hi == 0 ? Verdict.ALL : lo > 0 || hi < 0 ? Verdict.NONE : Verdict.SOME;
            case "<":
                return hi < 0 ? Verdict.ALL : lo >= 0 ? Verdict.NONE : Verdict.SOME;
            case "<=":
                return hi <= 0 ? Verdict.ALL : lo > 0 ? Verdict.NONE : Verdict.SOME;
            case ">":
                return lo > 0 ? Verdict.ALL : hi <= 0 ? Verdict.NONE : Verdict.SOME;
            default:
                return lo >= 0 ? Verdict.ALL : hi < 0 ? Verdict.NONE : Verdict.SOME;
        }
    }

    private static String mirror(String op) {
        switch (op) {
            case "<": return ">";
            case "<=": return ">=";
            case ">": return "<";
            case ">=": return "<=";
            default: return op;
        }
    }

    private static JsonNode column(JsonNode stats, Expression e) {
        if (!(e instanceof NamedReference ref) || ref.fieldNames().length != 1) {
            return null;
        }
        JsonNode column = stats.path("columns").path(ref.fieldNames()[0]);
        return column.isMissingNode() ? null : column;
    }

    /** The sign of (statistic - literal), or null when they are not comparable. */
    private static Integer cmp(JsonNode stat, Object literal) {
        if (literal instanceof UTF8String s && stat.isTextual()) {
            return Integer.signum(UTF8String.fromString(stat.asText()).compareTo(s));
        }
        if (literal instanceof Number n && stat.isNumber()) {
            if (literal instanceof Float || literal instanceof Double || stat.isFloatingPointNumber()) {
                return Integer.signum(Double.compare(stat.asDouble(), n.doubleValue()));
            }
            return Integer.signum(Long.compare(stat.asLong(), n.longValue()));
        }
        if (literal instanceof Boolean b && stat.isBoolean()) {
            return Integer.signum(Boolean.compare(stat.asBoolean(), b));
        }
        return null;
    }
}
