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
 * A CEL rule without a SQL form is shown as a CHECK that is NOT ENFORCED, whose predicate is {@code TRUE} followed
 * by the rule's CEL in a comment: Spark does not enforce it (the Python writers and Kafka clients do), and says so
 * rather than hide it. (Spark resolves the predicate of every CHECK on a write, enforced or not, and the CEL itself
 * would not resolve.)
 */
final class Constraints {
    /** The prefix of the reserved table properties that hold CHECK constraints. */
    static final String PREFIX = "constraint.check.";
    /** The prefix under which a loaded table keeps the CEL of its rules without a SQL form (never sent back). */
    static final String CEL_PREFIX = "streamcat.constraint.cel.";

    private Constraints() {
    }

    /** Put a table answer's {@code checks} into {@code properties} (under {@link #PREFIX}), where the table keeps them. */
    static void putChecks(JsonNode table, Map<String, String> properties) {
        table.path("checks").forEach(check -> {
            if (check.path("sql").isTextual()) {
                properties.put(PREFIX + check.path("name").asText(), check.path("sql").asText());
            } else if (check.path("cel").isTextual()) {  // the Python writers' to enforce: shown as NOT ENFORCED
                properties.put(CEL_PREFIX + check.path("name").asText(), check.path("cel").asText());
            }
        });
    }

    /** {@code properties} without the CHECK constraints (which DESCRIBE and SHOW CREATE TABLE show as constraints). */
    static Map<String, String> withoutChecks(Map<String, String> properties) {
        Map<String, String> out = new LinkedHashMap<>();
        properties.forEach((key, value) -> {
            if (!key.startsWith(PREFIX) && !key.startsWith(CEL_PREFIX)) {
                out.put(key, value);
            }
        });
        return out;
    }

    /** The CHECK constraints {@code properties} hold: enforced by Spark on every write, but CEL rules without a
     * SQL form (not enforced, their CEL shown in the predicate's comment). */
    static List<Constraint> checks(Map<String, String> properties) {
        List<Constraint> out = new ArrayList<>();
        properties.forEach((key, value) -> {
            if (key.startsWith(PREFIX)) {
                out.add(Constraint.check(key.substring(PREFIX.length())).predicateSql(value).enforced(true)
                        .rely(false).validationStatus(Constraint.ValidationStatus.VALID).build());
            } else if (key.startsWith(CEL_PREFIX)) {
                String shown = "TRUE /* CEL: " + value.replace("*/", "* /") + " */";
                out.add(Constraint.check(key.substring(CEL_PREFIX.length())).predicateSql(shown).enforced(false)
                        .rely(false).validationStatus(Constraint.ValidationStatus.UNVALIDATED).build());
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
