package streamcat.spark;

import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * DELETE, UPDATE or MERGE on a streamcat table, as a delta of changes (merge-on-read).
 *
 * The statement reads the table at the cut it was loaded at (its read cut) and writes changes
 * identified by row id: the key columns of a primary-key table, or the position of a row of an
 * append table ({@code _chunk}, {@code _pos}, metadata columns of its scan). One commit of kind
 * row-level records the read cut; a commit since then that touched the same rows or keys makes it
 * fail with a retryable conflict (checked by the Python writer before it commits).
 */
final class StreamcatRowLevelOperation implements SupportsDelta {
    static final String CHUNK = "_chunk";
    static final String POS = "_pos";

    private final StreamcatTable table;
    private final Command command;

    private StreamcatRowLevelOperation(StreamcatTable table, Command command) {
        this.table = table;
        this.command = command;
    }

    /** The builder Spark asks for when it plans a row-level statement on {@code table}. */
    static RowLevelOperationBuilder builder(StreamcatTable table, RowLevelOperationInfo info) {
        return () -> new StreamcatRowLevelOperation(table, info.command());
    }

    @Override
    public Command command() {
        return command;
    }

    @Override
    public String description() {
        return "streamcat " + command.name().toLowerCase(Locale.ROOT) + " at cut " + table.readCut();
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return table.at(OptionKeys.CUT, Long.toString(table.readCut())).newScanBuilder(options);
    }

    @Override
    public NamedReference[] rowId() {
        List<String> key = table.primaryKey();
        if (key.isEmpty()) {
            return new NamedReference[] {Expressions.column(CHUNK), Expressions.column(POS)};
        }
        return key.stream().map(Expressions::column).toArray(NamedReference[]::new);
    }

    @Override
    public NamedReference[] requiredMetadataAttributes() {
        return new NamedReference[0];
    }

    @Override
    public boolean representUpdateAsDeleteAndInsert() {
        return false;
    }

    @Override
    public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        Map<String, String> options = table.writeOptions(info);
        options.put(OptionKeys.ROW_LEVEL, command.name().toLowerCase(Locale.ROOT));
        options.put(OptionKeys.READ_CUT, Long.toString(table.readCut()));
        return new DeltaWrites.Builder(info, options);
    }
}
