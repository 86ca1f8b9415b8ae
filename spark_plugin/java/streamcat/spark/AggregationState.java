package streamcat.spark;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import org.apache.spark.sql.connector.catalog.Identifier;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The hidden state columns of an aggregation-engine table (docs/changelog-tables.md, "Hidden state columns"):
 * an {@code avg} column is kept as {@code <column>$sum} and {@code <column>$count}, and
 * {@code 'aggregation.row-count-field' = '$rows'} counts each key's rows in a column of that name. Their names hold
 * a {@code $}, so they are never table columns; which a table has follows from its properties alone (the server's
 * {@code catalog_api.aggregates.state_columns} says the same). They are in the chunk files, never in the schema a
 * reader sees: only a materialized table's refresh and a compaction load the table with them ({@link #loadedWith}),
 * to carry them over.
 */
final class AggregationState {
    /** The table ("scope.table") the catalog loads with its hidden state columns on this thread, or null. */
    private static final ThreadLocal<String> LOADED_WITH_STATE = new ThreadLocal<>();
    /** The hidden column that counts a key's rows, when {@code 'aggregation.row-count-field'} names it. */
    static final String ROWS = "$rows";
    static final String ROW_COUNT_FIELD = "aggregation.row-count-field";
    static final String MERGE_ENGINE = "merge-engine";
    static final String AVG = "avg";

    private AggregationState() {
    }

    /** The hidden column holding the sum of an {@code avg} column's values. */
    static String sum(String column) {
        return column + "$sum";
    }

    /** The hidden column holding the number of an {@code avg} column's non-null values. */
    static String count(String column) {
        return column + "$count";
    }

    /**
     * {@code schema} with the hidden columns {@code properties} declare appended (all nullable), or as it is: each
     * {@code avg} column's sum and count (by the columns' names), then {@code $rows}. Each carries a Parquet field
     * id from {@link #FIELD_IDS} up, in that order, so that Iceberg readers, which project a file's columns by id,
     * pass over them (Streamcat reads them by name).
     */
    static StructType withState(StructType schema, Map<String, String> properties) {
        if (!"aggregation".equalsIgnoreCase(properties.getOrDefault(MERGE_ENGINE, "").strip())) {
            return schema;
        }
        List<StructField> hidden = new ArrayList<>();
        Arrays.stream(schema.fieldNames()).sorted().forEach(name -> {
            String function = properties.getOrDefault("fields." + name + ".aggregate-function", "");
            if (AVG.equals(function.strip().toLowerCase(Locale.ROOT))) {
                hidden.add(new StructField(sum(name), DataTypes.DoubleType, true, Metadata.empty()));
                hidden.add(new StructField(count(name), DataTypes.LongType, true, Metadata.empty()));
            }
        });
        if (ROWS.equals(properties.getOrDefault(ROW_COUNT_FIELD, "").strip())) {
            hidden.add(new StructField(ROWS, DataTypes.LongType, true, Metadata.empty()));
        }
        StructType out = schema;
        for (int i = 0; i < hidden.size(); i++) {
            StructField field = hidden.get(i);
            out = out.add(field.name(), field.dataType(), true,
                    new MetadataBuilder().putLong(FieldIds.FIELD_ID, FIELD_IDS + i).build());
        }
        return out;
    }

    /** The field id of the first hidden column of a file (catalog_api.aggregates.HIDDEN_FIELD_IDS). */
    static final long FIELD_IDS = 2_147_483_000L;

    /** What {@link #loadedWith} answers: closing it ends the loading with hidden state. */
    interface Scope extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Until closed, the catalog loads {@code table} ("scope.table"; null: none) on this thread with its hidden
     * state columns at the end of its schema: the statements run meanwhile read and write them.
     */
    static Scope loadedWith(String table) {
        String before = LOADED_WITH_STATE.get();
        LOADED_WITH_STATE.set(table);
        return () -> LOADED_WITH_STATE.set(before);
    }

    /** Called by the catalog's loadTable: whether the table is to be loaded with its hidden state columns. */
    static boolean loadsWithState(Identifier ident) {
        String table = LOADED_WITH_STATE.get();
        return table != null && ident.namespace().length == 1
                && table.equalsIgnoreCase(ident.namespace()[0] + "." + ident.name());
    }
}
