package streamcat.spark;

import org.apache.spark.sql.connector.catalog.Changelog;
import org.apache.spark.sql.connector.catalog.ChangelogContext;
import org.apache.spark.sql.connector.catalog.ChangelogRange;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The change feed of a streamcat table ({@code SELECT * FROM t CHANGES FROM VERSION a TO VERSION b},
 * {@code spark.read.changes}, {@code spark.readStream.changes}): the table's columns plus
 * {@code _change_type}, {@code _commit_version} (the commit number) and {@code _commit_timestamp}
 * (the commit's time, strictly increasing per table). The Python source computes it from the
 * chunks of the commits in the range (docs/changelog-tables.md, "Change feeds"), or Spark's Parquet scan
 * reads it when the range only appends columnar chunks to an append table ({@link NativeFeed}).
 *
 * A primary-key table's feed shows updates as pre- and post-images identified by the key; an append
 * table has no row identity across commits, so its updates show as a delete and an insert.
 */
final class StreamcatChangelog implements Changelog {

    private final StreamcatTable table;
    private final ChangelogRange range;

    StreamcatChangelog(StreamcatTable table, ChangelogContext context) {
        this.table = table;
        this.range = context.range();
    }

    @Override
    public String name() {
        return table.name();
    }

    private StructType schema() {
        List<StructField> fields = new ArrayList<>(List.of(table.schema().fields()));
        fields.addAll(List.of(FEED_COLUMNS.fields()));
        return new StructType(fields.toArray(new StructField[0]));
    }

    static final String CHANGE_TYPE = "_change_type";
    static final String COMMIT_VERSION = "_commit_version";
    static final String COMMIT_TIMESTAMP = "_commit_timestamp";
    /** The feed's own columns, as they follow the table's in every feed row. */
    static final StructType FEED_COLUMNS = new StructType()
            .add(CHANGE_TYPE, DataTypes.StringType, false)
            .add(COMMIT_VERSION, DataTypes.LongType, false)
            .add(COMMIT_TIMESTAMP, DataTypes.TimestampType, false);

    @Override
    public Column[] columns() {
        StructType schema = schema();
        Column[] out = new Column[schema.fields().length];
        for (int i = 0; i < out.length; i++) {
            StructField f = schema.fields()[i];
            out[i] = Column.create(f.name(), f.dataType(), f.nullable(), f.getComment().getOrElse(() -> null), null);
        }
        return out;
    }

    @Override
    public boolean containsCarryoverRows() {
        return false;
    }

    /**
     * A primary-key table's feed holds every change of a key within the range (Spark nets them out when
     * asked to); an append table has no row identity to net by, and Spark refuses post-processing that
     * needs one, so its feed is declared as it is: inserts, and the deletes its DML made (an UPDATE is a
     * delete and an insert).
     */
    @Override
    public boolean containsIntermediateChanges() {
        return !table.primaryKey().isEmpty();
    }

    @Override
    public boolean representsUpdateAsDeleteAndInsert() {
        return false;
    }

    @Override
    public NamedReference[] rowId() {
        return table.primaryKey().stream().map(Expressions::column).toArray(NamedReference[]::new);
    }

    @Override
    public NamedReference rowVersion() {
        return Expressions.column(COMMIT_VERSION);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        Map<String, String> bounds = new HashMap<>();
        if (range instanceof ChangelogRange.VersionRange v) {
            bounds.put(OptionKeys.CHANGES_FROM, v.startingVersion().trim());
            v.endingVersion().ifPresent(end -> bounds.put(OptionKeys.CHANGES_TO, end.trim()));
        } else if (range instanceof ChangelogRange.TimestampRange t) {
            bounds.put(OptionKeys.CHANGES_FROM, "ts:" + t.startingTimestamp());
            t.endingTimestamp().ifPresent(end -> bounds.put(OptionKeys.CHANGES_TO, "ts:" + end));
        } else {
            bounds.put(OptionKeys.CHANGES_FROM, "0");  // unbounded: every commit still retained
        }
        bounds.put(OptionKeys.CHANGES_FROM_INCLUSIVE, Boolean.toString(range.startingBoundInclusive()));
        bounds.put(OptionKeys.CHANGES_TO_INCLUSIVE, Boolean.toString(range.endingBoundInclusive()));
        StreamcatTable ranged = table;
        for (Map.Entry<String, String> e : bounds.entrySet()) {
            ranged = ranged.at(e.getKey(), e.getValue());
        }
        return ranged.newFeedScanBuilder(options, schema());
    }
}
