package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The native columnar path of batch scans: when a snapshot's chunks are Parquet files that can be
 * read one after the other (no merge, no deletes, no event chunks), Spark reads them with its own
 * Parquet scan instead of the Python data source. This class decides, with public APIs only; the
 * Parquet scan itself is built by {@link PythonSourceBridge}, the one class that uses Spark-internal
 * classes.
 *
 * The native path is taken only when all of these hold, and otherwise the scan is the Python one,
 * unchanged (correctness first):
 * <ul>
 *   <li>it is not turned off: catalog option {@code native-scan=false} (the table option
 *       {@value OptionKeys#NATIVE_SCAN}), or the same as a read option;</li>
 *   <li>it is a scan of the table's rows: no change feed ({@code streamcat.changes.*}) and no
 *       metadata column ({@code _chunk}, {@code _pos});</li>
 *   <li>this JVM has a Hadoop filesystem for the table's location ({@link #nativeLocation}: a local path
 *       or {@code file:} URI, or a store such as S3 whose filesystem the session added);</li>
 *   <li>the chunks the catalog plans for the scan ({@code POST .../chunks/plan} with the snapshot at the
 *       scan's cut, latest, {@code streamcat.cut}/{@code versionAsOf} or {@code streamcat.asoftime}, and
 *       the pushed filters as filter JSON: the live chunks whose partition, and in an append table
 *       statistics, may hold a passing row) are all {@code columnar} and need no merge
 *       ({@link #needsNoMerge}); no planned chunk at all is a Parquet scan of no file (no row);</li>
 *   <li>Spark's reader, which matches columns by name, reads every file's columns as the Python
 *       reader does, which matches them by field id ({@link FieldIds#readsAsTable}): each table column the
 *       file holds (the column with the table column's {@code parquet.field.id}) has the table
 *       column's spelling and Spark type there (or, when every file has Parquet field ids, Spark's
 *       reader matches by id and only the type must agree), and a column the file lacks is nullable or
 *       has an EXISTS_DEFAULT, which Spark's reader fills in, and no other column of the file has its
 *       name (a column dropped and added again);
 *       a file without Parquet field ids takes the ids of the schema version it was written under
 *       (its encoding id's, asked of the registry once).</li>
 * </ul>
 * A table's scan builder does not know whether it serves a batch or a streaming read, so the scan
 * answered is a {@link Native}: Spark's Parquet scan for a batch, the Python scan for a stream.
 */
final class NativeScan {
    /** The catalog option ({@code spark.sql.catalog.NAME.native-scan}) that turns the native path off. */
    static final String CATALOG_OPTION = "native-scan";
    private static final String COLUMNAR = "columnar";
    /** The Spark schema of each chunk file seen (chunk files are immutable), least recently used out first. */
    private static final int FOOTER_CACHE = 20_000;
    private static final Map<String, ChunkFile> FOOTERS = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, ChunkFile> eldest) {
            return size() > FOOTER_CACHE;
        }
    };

    private NativeScan() {
    }

    /**
     * Spark's Parquet scan of the snapshot the scan reads, or empty when the Python source must read it.
     *
     * @param options the scan's options merged with the table's (lower-case keys)
     * @param tableSchema the table's schema (the rows the scan reads, before pruning)
     * @param required the pruned schema the scan must answer with
     * @param filters every filter Spark offered (the Parquet reader keeps those it can use)
     * @param filterJson the pushed filters as filter JSON ({@link FilterJson}: what the Python source gets as
     *     {@code streamcat.filters}), with which the catalog plans the chunks to read
     * @param python the Python scan of the same read (made only if a stream asks for it)
     */
    static Optional<Scan> plan(TableState state, StructType tableSchema, Map<String, String> options,
                               StructType required, Filter[] filters, ArrayNode filterJson, Supplier<Scan> python) {
        if (disabled(options)) {
            return Optional.empty();
        }
        if (options.keySet().stream().anyMatch(k -> k.startsWith(OptionKeys.CHANGES))) {
            return Optional.empty();
        }
        Set<String> columns = lowerNames(tableSchema);
        for (StructField field : required.fields()) {
            // _chunk, _pos (the metadata columns) or anything else that is not a column of the table.
            if (!columns.contains(field.name().toLowerCase(Locale.ROOT))) {
                return Optional.empty();
            }
        }
        String location = nativeLocation(options.get("location"));
        if (location == null) {
            return Optional.empty();
        }
        Optional<ObjectNode> selectors = snapshotSelectors(options);
        if (selectors.isEmpty()) {
            return Optional.empty();
        }
        JsonNode chunks;
        try {
            // The catalog plans the scan before any footer is opened: only the chunks whose partition (and, in
            // an append table, statistics) may hold a row passing the pushed filters.
            chunks = plan(state, selectors.get(), filterJson);
        } catch (RuntimeException e) {
            return Optional.empty(); // the Python source asks again and reports the error as it always has
        }
        if (!chunks.isArray()) {
            return Optional.empty();
        }
        if (chunks.isEmpty()) {
            // No chunk may hold a passing row (or the snapshot has none): Spark's Parquet scan of no file.
            return Optional.of(new Native(PythonSourceBridge.parquetScan(List.of(), tableSchema, required, filters,
                    Map.of(ID_READS, "false", IGNORE_MISSING_IDS, "true")), python));
        }
        if (!needsNoMerge(chunks, !state.primaryKey().isEmpty())) {
            return Optional.empty();
        }
        List<JsonNode> listed = new ArrayList<>();
        chunks.forEach(listed::add);
        Files files = files(state, options, tableSchema, location, listed);
        if (files == null) {
            return Optional.empty();
        }
        Scan parquet = PythonSourceBridge.parquetScan(files.statuses(), tableSchema, required, filters,
                files.readOptions());
        return Optional.of(new Native(parquet, python));
    }

    /** Whether the scan's options (the table's, the catalog's {@value #CATALOG_OPTION}) turn the native path off. */
    static boolean disabled(Map<String, String> options) {
        return "false".equalsIgnoreCase(options.getOrDefault(OptionKeys.NATIVE_SCAN, "true").trim());
    }

    /** The names of {@code schema}'s columns, lower-cased (Spark's column names are case-insensitive). */
    static Set<String> lowerNames(StructType schema) {
        Set<String> names = new HashSet<>();
        for (StructField field : schema.fields()) {
            names.add(field.name().toLowerCase(Locale.ROOT));
        }
        return names;
    }

    /** The chunk files of a native scan, in chunk order, and the reader settings that read them as the table. */
    record Files(List<FileStatus> statuses, Map<String, String> readOptions) {
    }

    /**
     * The files of {@code chunks} (columnar chunks of the table at {@code location}) with the reader settings
     * under which Spark's reader reads each as the Python reader does, or null when some file is not read
     * the same way (the rules of the class comment: field ids, spellings, types, defaults).
     */
    static Files files(TableState state, Map<String, String> options, StructType tableSchema,
                               String location, List<JsonNode> chunks) {
        boolean tableIds = FieldIds.hasFieldIds(tableSchema);
        List<ChunkFile> found = new ArrayList<>();
        boolean allIds = true;
        for (JsonNode chunk : chunks) {
            ChunkFile file = chunkFile(location + "/" + chunk.path("path").asText());
            if (file == null) {
                return null;
            }
            found.add(file);
            allIds &= FieldIds.hasFieldIds(file.schema());
        }
        List<FileStatus> statuses = new ArrayList<>();
        if (tableIds && allIds) {
            // Every file has Parquet field ids: Spark's reader matches columns by id, as the Python reader
            // does, so renamed columns read their old data natively.
            for (ChunkFile file : found) {
                if (!FieldIds.readsById(file.schema(), tableSchema)) {
                    return null;
                }
                statuses.add(file.status());
            }
            return new Files(statuses, Map.of(ID_READS, "true"));
        }
        for (int i = 0; i < chunks.size(); i++) {
            StructType schema = found.get(i).schema();
            if (tableIds && !FieldIds.hasFieldIds(schema)) {
                JsonNode writer = writerSchema(state, options, chunks.get(i));
                Map<String, FieldIds.VersionField> ids = writer == null ? null : FieldIds.versionIds(writer);
                if (ids == null) {
                    return null;
                }
                schema = FieldIds.withVersionIds(schema, ids);
            }
            if (!(tableIds ? FieldIds.readsAsTable(schema, tableSchema) : FieldIds.readsByName(schema, tableSchema))) {
                return null;
            }
            statuses.add(found.get(i).status());
        }
        // Matched by name whatever the session says, as checked above; Spark's reader refuses a read schema
        // with field ids over a file without any unless told to ignore that.
        return new Files(statuses, Map.of(ID_READS, "false", IGNORE_MISSING_IDS, "true"));
    }

    /**
     * Spark's Parquet scan for batch reads (it is what Spark plans: its description, statistics and
     * metrics), the Python scan for micro-batch streams (which the Parquet scan cannot do).
     */
    static final class Native implements SupportsReportStatistics {
        private final Scan parquet;
        private final Supplier<Scan> pythonScan;
        private Scan python;

        Native(Scan parquet, Supplier<Scan> python) {
            this.parquet = parquet;
            this.pythonScan = python;
        }

        @Override
        public StructType readSchema() {
            return parquet.readSchema();
        }

        @Override
        public String description() {
            return parquet.description();
        }

        @Override
        public Batch toBatch() {
            return parquet.toBatch();
        }

        @Override
        public synchronized MicroBatchStream toMicroBatchStream(String checkpointLocation) {
            if (python == null) {
                python = pythonScan.get();
            }
            return python.toMicroBatchStream(checkpointLocation);
        }

        private synchronized Scan current() {
            return python != null ? python : parquet;
        }

        @Override
        public CustomMetric[] supportedCustomMetrics() {
            return current().supportedCustomMetrics();
        }

        @Override
        public CustomTaskMetric[] reportDriverMetrics() {
            return current().reportDriverMetrics();
        }

        @Override
        public ColumnarSupportMode columnarSupportMode() {
            return parquet.columnarSupportMode();
        }

        @Override
        public Statistics estimateStatistics() {
            return parquet instanceof SupportsReportStatistics stats ? stats.estimateStatistics() : UNKNOWN;
        }

        @Override
        public OptionalLong estimateSizeInBytes() {
            return parquet instanceof SupportsReportStatistics stats ? stats.estimateSizeInBytes() : OptionalLong.empty();
        }

        @Override
        public boolean reflectsFullyPushedDownFilters() {
            return parquet instanceof SupportsReportStatistics stats && stats.reflectsFullyPushedDownFilters();
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Native n && n.parquet.equals(parquet);
        }

        @Override
        public int hashCode() {
            return parquet.hashCode();
        }

        @Override
        public String toString() {
            return parquet.toString();
        }
    }

    private static final Statistics UNKNOWN = new Statistics() {
        @Override
        public OptionalLong sizeInBytes() {
            return OptionalLong.empty();
        }

        @Override
        public OptionalLong numRows() {
            return OptionalLong.empty();
        }
    };

    /**
     * Whether the snapshot's {@code chunks} are read by reading each chunk's rows one after the other:
     * every chunk columnar, and (an append table) no {@code deletes} chunk, or (a primary-key table)
     * the chunks are one compaction's output and nothing else: all added by one commit, each with a
     * {@code sequence} (the compaction's base cut) below that commit.
     *
     * <p>This mirrors the Python rule, which is the reference: {@code catalog_api/streams/merge.py},
     * {@code needs_merge} and {@code is_compacted} (used by {@code pyspark_streamcat/reader.py},
     * {@code BatchReader.partitions}). Change both together.
     */
    static boolean needsNoMerge(JsonNode chunks, boolean keyed) {
        Set<Long> commits = new HashSet<>();
        for (JsonNode chunk : chunks) {
            if (!COLUMNAR.equals(chunk.path("kind").asText())) {
                return false; // events (decoded by the Python source), deletes (a merge)
            }
            long commit = chunk.path("commit").asLong(0);
            long sequence = chunk.path("sequence").asLong(0);
            if (keyed && !(sequence > 0 && sequence < commit)) {
                return false;
            }
            commits.add(commit);
        }
        return !keyed || commits.size() == 1;
    }

    /**
     * The planned chunks; when the catalog refuses the filters (a value or a list beyond what it takes), the
     * snapshot's chunks without pruning by filters (Spark still applies every filter to the rows read).
     */
    private static JsonNode plan(TableState state, ObjectNode selectors, ArrayNode filterJson) {
        try {
            return state.planChunks(selectors, filterJson).path("chunks");
        } catch (CatalogApiException e) {
            if ((e.status == 400 || e.status == 422) && !filterJson.isEmpty()) {
                return state.planChunks(selectors, CatalogRestClient.array()).path("chunks");
            }
            throw e;
        }
    }

    /**
     * The snapshot selectors of the plan request for the scan's cut ({@code cut}, {@code asOfTime} in epoch
     * milliseconds; none: the latest), or empty when an option does not parse.
     */
    static Optional<ObjectNode> snapshotSelectors(Map<String, String> options) {
        String cut = options.get(OptionKeys.CUT);
        if (cut == null) {
            cut = options.get("versionasof");
        }
        String asOfTime = options.get(OptionKeys.AS_OF_TIME);
        ObjectNode selectors = CatalogRestClient.object();
        try {
            if (cut != null) {
                selectors.put("cut", Long.parseLong(cut.trim()));
            }
            if (asOfTime != null) {
                selectors.put("asOfTime", Long.parseLong(asOfTime.trim()));
            }
        } catch (NumberFormatException e) {
            return Optional.empty(); // the Python source reports it
        }
        return Optional.of(selectors);
    }

    /**
     * The location without a trailing slash if this JVM can read and write it with a Hadoop filesystem of its
     * own (a local path, a {@code file:} URI, or a scheme Hadoop has a filesystem for, such as {@code s3a:}
     * with hadoop-aws on the classpath, or {@code s3:} mapped to it by {@code spark.hadoop.fs.s3.impl}), else
     * null: the Python data source (pyarrow's filesystems) does the work then, and the first time a scheme is
     * found without a filesystem one line is logged (docs/operations.md says how to add one).
     */
    static String nativeLocation(String location) {
        if (location == null || location.isBlank()) {
            return null;
        }
        String trimmed = location.replaceAll("/+$", "");
        if (trimmed.startsWith("/")) {
            return trimmed;
        }
        String scheme;
        try {
            scheme = new URI(trimmed).getScheme();
        } catch (URISyntaxException e) {
            return null;
        }
        if (scheme == null) {
            return null;
        }
        if ("file".equalsIgnoreCase(scheme) || hasFileSystem(scheme)) {
            return trimmed;
        }
        if (NO_FILESYSTEM.add(scheme.toLowerCase(Locale.ROOT))) {
            LOG.warn("Streamcat: no Hadoop filesystem for scheme \"{}\" in this JVM; scans and writes of tables at "
                    + "{}:// locations go through the Python data source", scheme, scheme);
        }
        return null;
    }

    /** Schemes seen without a Hadoop filesystem in this JVM (each is logged once). */
    private static final Set<String> NO_FILESYSTEM = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(NativeScan.class);

    /** Whether the session's Hadoop configuration names a filesystem class for {@code scheme} that can be loaded. */
    private static boolean hasFileSystem(String scheme) {
        try {
            org.apache.hadoop.conf.Configuration conf = org.apache.spark.sql.SparkSession.active().sparkContext()
                    .hadoopConfiguration();
            return org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf) != null;
        } catch (IOException | RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** A chunk file's status and the Spark schema Spark's Parquet reader sees in its footer. */
    private record ChunkFile(FileStatus status, StructType schema) {
    }

    /** What {@code file} is (remembered: chunk files are immutable), or null if it cannot be read. */
    private static ChunkFile chunkFile(String file) {
        synchronized (FOOTERS) {
            ChunkFile known = FOOTERS.get(file);
            if (known != null) {
                return known;
            }
        }
        ChunkFile found;
        try {
            FileStatus status = PythonSourceBridge.fileStatus(file);
            found = new ChunkFile(status, PythonSourceBridge.parquetSchemaWithIds(status));
        } catch (IOException | RuntimeException e) {
            return null; // the Python source reads it, or reports why it cannot
        }
        synchronized (FOOTERS) {
            FOOTERS.put(file, found);
        }
        return found;
    }

    /** Spark's setting that makes its Parquet reader match columns by field id. */
    private static final String ID_READS = "spark.sql.parquet.fieldId.read.enabled";
    /** Spark's setting that lets its Parquet reader read a file without field ids under a schema with some. */
    private static final String IGNORE_MISSING_IDS = "spark.sql.parquet.fieldId.read.ignoreMissing";
    /** The Avro schema of each encoding id seen, by scope and group: encoding ids never change meaning. */
    private static final Map<String, JsonNode> ENCODING_SCHEMAS = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * The Avro record schema of the version {@code chunk} was written under (its one encoding id), asked
     * of the registry once per encoding id; null when in doubt (an error, several encoding ids, a schema
     * that is no Avro record), and the Python path reads.
     */
    private static JsonNode writerSchema(TableState state, Map<String, String> options, JsonNode chunk) {
        JsonNode ids = chunk.path("encodingIds");
        String scope = options.get("scope");
        String stream = options.get("stream");
        if (scope == null || stream == null || !ids.isArray() || ids.size() != 1) {
            return null;
        }
        String key = scope + "\t" + stream + "\t" + ids.get(0).asLong();
        JsonNode found = ENCODING_SCHEMAS.get(key);
        if (found == null) {
            try {
                JsonNode info = state.client().get(CatalogRestClient.encodingPath(scope, stream, ids.get(0).asLong()));
                byte[] data = java.util.Base64.getDecoder().decode(info.path("schemaInfo").path("schemaData").asText(""));
                found = CatalogRestClient.parse(new String(data, java.nio.charset.StandardCharsets.UTF_8));
            } catch (RuntimeException e) {
                return null;
            }
            if (found == null || !"record".equals(found.path("type").asText())) {
                return null;
            }
            ENCODING_SCHEMAS.put(key, found);
        }
        return found;
    }
}
