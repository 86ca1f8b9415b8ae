package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.constraints.Check;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A table's CHECK constraints (docs/data-contracts.md). The catalog keeps each as the table property
 * {@code constraint.check.<name>} holding its SQL, and answers every CHECK in force, its own and those
 * translated from CEL rules added through the Confluent API, as the table's {@code checks}. Spark enforces
 * them on every write ({@link StreamcatTable#constraints}); ADD and DROP CONSTRAINT are property changes.
 */
final class Constraints {
    /** The prefix of the reserved table properties that hold CHECK constraints. */
    static final String PREFIX = "constraint.check.";

    private Constraints() {
    }

    /** Put a table answer's {@code checks} into {@code properties} (under {@link #PREFIX}), where the table keeps them. */
    static void putChecks(JsonNode table, Map<String, String> properties) {
        table.path("checks").forEach(check -> {
            if (check.path("sql").isTextual()) {  // a CEL rule without a SQL form is the Python writers' to enforce
                properties.put(PREFIX + check.path("name").asText(), check.path("sql").asText());
            }
        });
    }

    /** {@code properties} without the CHECK constraints (which DESCRIBE and SHOW CREATE TABLE show as constraints). */
    static Map<String, String> withoutChecks(Map<String, String> properties) {
        Map<String, String> out = new LinkedHashMap<>();
        properties.forEach((key, value) -> {
            if (!key.startsWith(PREFIX)) {
                out.put(key, value);
            }
        });
        return out;
    }

    /** The CHECK constraints {@code properties} hold, enforced by Spark on every write. */
    static List<Constraint> checks(Map<String, String> properties) {
        List<Constraint> out = new ArrayList<>();
        properties.forEach((key, value) -> {
            if (key.startsWith(PREFIX)) {
                out.add(Constraint.check(key.substring(PREFIX.length())).predicateSql(value).enforced(true)
                        .rely(false).validationStatus(Constraint.ValidationStatus.VALID).build());
            }
        });
        return out;
    }

    /** A CHECK constraint of CREATE TABLE into {@code properties}; false for a constraint of another kind. */
    static boolean put(Constraint constraint, Map<String, String> properties) {
        if (!(constraint instanceof Check check)) {
            return false;
        }
        properties.put(PREFIX + check.name(), sql(check));
        return true;
    }

    /** ADD or DROP CONSTRAINT as the catalog API's change (null: not a constraint change this class knows). */
    static ObjectNode change(TableChange change) {
        if (change instanceof TableChange.AddConstraint add && add.constraint() instanceof Check check) {
            return TableChanges.setProperty(PREFIX + check.name(), sql(check));
        }
        if (change instanceof TableChange.DropConstraint drop) {
            return TableChanges.removeProperty(PREFIX + drop.name());
        }
        return null;
    }

    private static String sql(Check check) {
        if (check.predicateSql() == null || check.predicateSql().isBlank()) {
            throw Refusal.unsupported("CHECK constraint " + check.name() + " has no SQL text the catalog can keep");
        }
        return check.predicateSql();
    }
}
