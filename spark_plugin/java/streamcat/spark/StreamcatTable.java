package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsPartitionManagement;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * A streamcat table as Spark sees it: the catalog's metadata, with reads and writes handed to
 * the Python data source through {@link PythonSourceBridge} (a new Python source per scan and
 * per write), except scans and batch writes that Spark's own Parquet reader and writer can do
 * ({@link NativeScan}, {@link NativeWrite}). Row-level statements (DELETE, UPDATE, MERGE) are {@link StreamcatRowLevelOperation}s;
 * TRUNCATE TABLE is an overwrite commit with no chunks, and a DELETE that removes whole chunks of an
 * append table by their statistics alone is a commit removing them ({@link MetadataDelete}).
 *
 * <p>A partitioned table ({@link Partitioning}) answers its current spec's Transforms (DESCRIBE TABLE's
 * "# Partitioning", SHOW CREATE TABLE) and lists its partitions for SHOW PARTITIONS from the catalog
 * ({@code listPartitions}: the partitions of the current spec that live chunks are in). A partition exists
 * while a chunk holds rows of it: ADD PARTITION is refused; DROP PARTITION (and TRUNCATE TABLE ... PARTITION)
 * is a commit removing the partition's chunks, when every chunk of the table was written under the current
 * spec (otherwise DELETE FROM ... WHERE says which rows go).
 */
final class StreamcatTable implements SupportsRead, SupportsWrite, SupportsRowLevelOperations,
        SupportsMetadataColumns, SupportsDeleteV2, SupportsPartitionManagement {
    private static final Set<TableCapability> CAPABILITIES = Collections.unmodifiableSet(EnumSet.of(
            TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.MICRO_BATCH_READ,
            TableCapability.STREAMING_WRITE, TableCapability.TRUNCATE));
    /** The chunk kind that carries deletes of other chunks' rows, not rows of a partition. */
    private static final String DELETES = "deletes";
    /** Where a row of an append table is: what its row-level statements name rows by. */
    private static final MetadataColumn[] POSITION = {
        new Position(StreamcatRowLevelOperation.CHUNK, DataTypes.StringType, "the chunk file holding the row"),
        new Position(StreamcatRowLevelOperation.POS, DataTypes.LongType, "the row's position in its chunk file"),
    };

    private final String name;
    private final StructType schema;
    private final Map<String, String> properties;
    private final Map<String, String> sourceOptions;
    private final TableState state;
    /** The current spec's Transforms and partition schema (empty when the table is not partitioned). */
    private final Transform[] partitioning;
    private final StructType partitionSchema;
    /** The chunks a metadata-only DELETE removes, as {@link #canDeleteWhere} found them. */
    private List<String> removable;

    /**
     * @param sourceOptions what the Python source needs to find the table (uri, scope, stream,
     *     location, schema version, time travel), merged over every scan's and write's options
     * @param state the table's key, its newest commit when loaded, and how to commit to it
     */
    StreamcatTable(String name, StructType schema, Map<String, String> properties, Map<String, String> sourceOptions,
                   TableState state) {
        this.name = name;
        this.schema = schema;
        this.properties = Collections.unmodifiableMap(properties);
        this.sourceOptions = Collections.unmodifiableMap(sourceOptions);
        this.state = state;
        this.partitioning = Partitioning.transforms(state.partitionFields(), schema);
        this.partitionSchema = Partitioning.schema(state.partitionFields(), schema);
    }

    /** The same table read at another point of its history. */
    StreamcatTable at(String key, String value) {
        Map<String, String> options = new HashMap<>(sourceOptions);
        options.put(key, value);
        return new StreamcatTable(name, schema, properties, options, state);
    }

    Map<String, String> sourceOptions() {
        return sourceOptions;
    }

    /** The key columns of a primary-key table; empty for an append table. */
    List<String> primaryKey() {
        return state.primaryKey();
    }

    /** The newest commit when the table was loaded: the cut a row-level statement reads. */
    long readCut() {
        return state.lastCommit();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return schema;
    }

    @Override
    public Map<String, String> properties() {
        return Constraints.withoutChecks(properties);
    }

    @Override
    public Set<TableCapability> capabilities() {
        return CAPABILITIES;
    }

    @Override
    public Transform[] partitioning() {
        return partitioning.clone();
    }

    @Override
    public Constraint[] constraints() {
        List<Constraint> constraints = Constraints.checks(properties);
        if (!state.primaryKey().isEmpty()) {
            NamedReference[] columns = state.primaryKey().stream().map(Expressions::column)
                    .toArray(NamedReference[]::new);
            constraints.add(0, Constraint.primaryKey(state.constraintName(), columns)
                    .enforced(true).rely(true).validationStatus(Constraint.ValidationStatus.VALID).build());
        }
        return constraints.toArray(new Constraint[0]);
    }

    @Override
    public MetadataColumn[] metadataColumns() {
        return state.primaryKey().isEmpty() ? POSITION.clone() : new MetadataColumn[0];
    }

    /** The scan's or write's own options, with the table's (which win) on top; keys lower-cased. */
    private Map<String, String> merge(CaseInsensitiveStringMap options) {
        Map<String, String> merged = new HashMap<>();
        options.asCaseSensitiveMap().forEach((k, v) -> merged.put(k.toLowerCase(Locale.ROOT), v));
        sourceOptions.forEach((k, v) -> merged.put(k.toLowerCase(Locale.ROOT), v));
        return merged;
    }

    /** The options of a write: its own, the table's, and the query id. */
    Map<String, String> writeOptions(LogicalWriteInfo info) {
        Map<String, String> merged = merge(info.options());
        merged.put(OptionKeys.QUERY_ID, info.queryId());
        return merged;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        // The table's own rows: Spark's Parquet scan when the snapshot allows it (NativeScan).
        return new StreamcatScanBuilder(schema, merge(options), state);
    }

    /** A scan of the table's change feed: rows of {@code feedSchema}, the table's columns and the feed's. */
    ScanBuilder newFeedScanBuilder(CaseInsensitiveStringMap options, StructType feedSchema) {
        // Spark's Parquet scan when the range only appends columnar chunks (NativeFeed).
        return new StreamcatScanBuilder(feedSchema, merge(options), state, schema);
    }

    /** Refuses a user's write into a materialized table: only its refreshes (and compactions) write it. */
    private void refuseIfMaterialized(Map<String, String> options) {
        if (StreamcatMaterialized.isMaterialized(properties) && !options.containsKey(StreamcatMaterialized.HOLDER_OPTION)
                && !options.containsKey(OptionKeys.COMPACT_BASE)) {
            throw StreamcatMaterialized.refusal(name);
        }
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        Map<String, String> merged = writeOptions(info);
        refuseIfMaterialized(merged);
        // Both paths see the rows' schema with the table's column metadata (Parquet field ids go into the files).
        StructType rows = (StructType) NativeWrite.withTableMetadata(info.schema(), schema);
        return new WritePath(rows, info, merged,
                () -> PythonSourceBridge.writeBuilder(new WriteInfo(info, new CaseInsensitiveStringMap(merged), rows)));
    }

    /**
     * Where a write goes, which the table decides: a batch write that {@link NativeWrite#eligible} allows into an
     * unpartitioned table goes to Spark's own Parquet writer; a partitioned table's rows (split by partition,
     * one chunk per partition), any other batch write and every stream go to the Python source. Truncation
     * (INSERT OVERWRITE) applies to both paths.
     */
    private final class WritePath implements WriteBuilder, SupportsTruncate {
        private final StructType rows;
        private final LogicalWriteInfo info;
        private final Map<String, String> options;
        private final Supplier<WriteBuilder> python;
        private boolean overwrite;

        WritePath(StructType rows, LogicalWriteInfo info, Map<String, String> options, Supplier<WriteBuilder> python) {
            this.rows = rows;
            this.info = info;
            this.options = options;
            this.python = python;
        }

        @Override
        public WriteBuilder truncate() {
            overwrite = true;
            return this;
        }

        /** The Python source's write of the same rows (truncating if this one does). */
        private Write pythonWrite() {
            WriteBuilder builder = python.get();
            if (overwrite) {
                builder = ((SupportsTruncate) builder).truncate();
            }
            return builder.build();
        }

        @Override
        public Write build() {
            if (state.partitioned() || !NativeWrite.eligible(rows, options)) {
                return pythonWrite();
            }
            return NativeWrite.write(rows, info, options, state, overwrite, this::pythonWrite);
        }
    }

    @Override
    public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
        refuseIfMaterialized(Map.of());
        if ("aggregation".equalsIgnoreCase(properties.getOrDefault(AggregationState.MERGE_ENGINE, ""))
                && info.command() != RowLevelOperation.Command.DELETE) {
            // a row an UPDATE or MERGE writes would be one more input of the aggregates, not their new value
            throw Refusal.unsupported(info.command() + " of " + name + ": an aggregation table's rows are the "
                    + "aggregates of what was inserted; INSERT adds inputs and DELETE removes a key's row");
        }
        return StreamcatRowLevelOperation.builder(this, info);
    }

    @Override
    public boolean canDeleteWhere(Predicate[] predicates) {
        refuseIfMaterialized(Map.of());
        if (!state.primaryKey().isEmpty()) {
            return false;
        }
        Optional<List<String>> plan = MetadataDelete.plan(state.chunks(readCut()), predicates);
        removable = plan.orElse(null);
        return plan.isPresent();
    }

    @Override
    public void deleteWhere(Predicate[] predicates) {
        if (removable == null && !canDeleteWhere(predicates)) {
            throw new IllegalStateException("the statistics of " + name + " do not decide this DELETE");
        }
        if (!removable.isEmpty()) {
            state.removeChunks(removable, readCut());
        }
    }

    @Override
    public boolean truncateTable() {
        refuseIfMaterialized(Map.of());
        state.truncate();
        return true;
    }

    // -- partitions (SHOW PARTITIONS, ALTER TABLE ... DROP PARTITION) -----------------------------------

    @Override
    public StructType partitionSchema() {
        return partitionSchema;
    }

    /** One partition: its values as a row of the partition schema, and what its chunks hold. */
    private record Partition(InternalRow row, JsonNode summary) {
    }

    /** The partitions of the current spec that live chunks are in. */
    private List<Partition> partitions() {
        JsonNode answer = state.partitions();
        long specId = answer.path("specId").asLong(state.specId());
        if (specId != state.specId()) {
            throw new IllegalStateException("the partitioning of " + name + " changed while the statement ran "
                    + "(partition spec " + state.specId() + ", now " + specId + "): run it again");
        }
        List<Partition> out = new ArrayList<>();
        for (JsonNode partition : answer.path("partitions")) {
            out.add(new Partition(Partitioning.row(partition.path("values"), partitionSchema), partition));
        }
        return out;
    }

    @Override
    public InternalRow[] listPartitionIdentifiers(String[] names, InternalRow ident) {
        if (partitionSchema.fields().length == 0) {
            return new InternalRow[0];
        }
        List<InternalRow> found = new ArrayList<>();
        for (Partition partition : partitions()) {
            if (Partitioning.matches(partition.row(), partitionSchema, names, ident)) {
                found.add(partition.row());
            }
        }
        return found.toArray(new InternalRow[0]);
    }

    /** What the live chunks of a partition hold: {@code chunkCount}, {@code eventCount}, {@code bytes}. */
    @Override
    public Map<String, String> loadPartitionMetadata(InternalRow ident) {
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Partition partition : partitions()) {
            if (Partitioning.matches(partition.row(), partitionSchema, partitionSchema.fieldNames(), ident)) {
                for (String key : List.of("chunkCount", "eventCount", "bytes")) {
                    metadata.put(key, partition.summary().path(key).asText());
                }
            }
        }
        return metadata;
    }

    @Override
    public void createPartition(InternalRow ident, Map<String, String> properties) {
        throw Refusal.unsupported("streamcat tables have no empty partitions: a partition of " + name
                + " exists while its chunks hold rows of it, so write rows (INSERT INTO) instead of ADD PARTITION "
                + Partitioning.describe(ident, partitionSchema));
    }

    @Override
    public void replacePartitionMetadata(InternalRow ident, Map<String, String> properties) {
        throw Refusal.unsupported("streamcat partitions have no properties of their own: set the "
                + "table's with ALTER TABLE " + name + " SET TBLPROPERTIES");
    }

    /**
     * ALTER TABLE ... DROP PARTITION: one commit removing the partition's chunks, no row read. Only when
     * every chunk (but deletes of rows) was written under the current spec: a chunk of an earlier spec, or
     * of the table before it was partitioned, may hold rows of the partition too, and DROP PARTITION must
     * not leave them behind.
     */
    @Override
    public boolean dropPartition(InternalRow ident) {
        refuseIfMaterialized(Map.of());
        if (partitionSchema.fields().length == 0) {
            throw Refusal.unsupported(name + " is not partitioned");
        }
        List<String> paths = new ArrayList<>();
        int others = 0;
        for (JsonNode chunk : state.chunks(readCut())) {
            if (DELETES.equals(chunk.path("kind").asText())) {
                continue;  // deletes of a removed chunk's rows name nothing any more
            }
            JsonNode partition = chunk.path("partition");
            if (!partition.isObject() || partition.path("specId").asLong(-1) != state.specId()) {
                others++;
                continue;
            }
            if (Partitioning.matches(Partitioning.row(partition.path("values"), partitionSchema), partitionSchema,
                    partitionSchema.fieldNames(), ident)) {
                paths.add(chunk.path("path").asText());
            }
        }
        if (others > 0) {
            throw Refusal.unsupported("cannot drop partition " + Partitioning.describe(ident,
                    partitionSchema) + " of " + name + " by removing its chunks: " + others + " chunk(s) of the table "
                    + "were written under an earlier partitioning (or by a producer) and may hold rows of it too; "
                    + "use DELETE FROM " + name + " WHERE ... instead");
        }
        if (paths.isEmpty()) {
            return false;
        }
        state.removeChunks(paths, readCut(), "DROP PARTITION");
        return true;
    }

    /** A partition exists only while it holds rows: emptying it is dropping it. */
    @Override
    public boolean truncatePartition(InternalRow ident) {
        return dropPartition(ident);
    }

    /** A metadata column of the row position. */
    private record Position(String name, DataType dataType, String comment) implements MetadataColumn {
        @Override
        public boolean isNullable() {
            return false;
        }
    }
}
