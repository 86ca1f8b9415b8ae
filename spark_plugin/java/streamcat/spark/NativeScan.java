package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

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
 *       {@value #DISABLED}), or the same as a read option;</li>
 *   <li>it is a scan of the table's rows: no change feed ({@code streamcat.changes.*}) and no
 *       metadata column ({@code _chunk}, {@code _pos});</li>
 *   <li>the table's location is on the local filesystem (a path or a {@code file:} URI: other
 *       stores may need the credentials only the Python side has);</li>
 *   <li>the snapshot at the scan's cut (latest, {@code streamcat.cut}/{@code versionAsOf},
 *       {@code streamcat.asoftime}) has at least one chunk, every chunk is {@code columnar}, and
 *       the snapshot needs no merge ({@link #needsNoMerge});</li>
 *   <li>every file's columns map by name onto the table's: a column of the table that a file has
 *       has the same Spark type there (as Spark's Parquet reader sees the footer) and the same
 *       spelling; a column a file lacks is nullable and has no default (Spark reads it as null, as the
 *       Python reader does).</li>
 * </ul>
 * A table's scan builder does not know whether it serves a batch or a streaming read, so the scan
 * answered is a {@link Native}: Spark's Parquet scan for a batch, the Python scan for a stream.
 */
final class NativeScan {
    /** The catalog option ({@code spark.sql.catalog.NAME.native-scan}) that turns the native path off. */
    static final String CATALOG_OPTION = "native-scan";
    /** The scan option that carries it (lower-case: options reach the scan lower-cased). */
    static final String DISABLED = "streamcat.nativescan";
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
     * @param python the Python scan of the same read (made only if a stream asks for it)
     */
    static Optional<Scan> plan(TableState state, StructType tableSchema, Map<String, String> options,
                               StructType required, Filter[] filters, Supplier<Scan> python) {
        if ("false".equalsIgnoreCase(options.getOrDefault(DISABLED, "true").trim())) {
            return Optional.empty();
        }
        if (options.keySet().stream().anyMatch(k -> k.startsWith("streamcat.changes."))) {
            return Optional.empty();
        }
        Set<String> columns = new HashSet<>();
        for (StructField field : tableSchema.fields()) {
            columns.add(field.name().toLowerCase(Locale.ROOT));
        }
        for (StructField field : required.fields()) {
            // _chunk, _pos (the metadata columns) or anything else that is not a column of the table.
            if (!columns.contains(field.name().toLowerCase(Locale.ROOT))) {
                return Optional.empty();
            }
        }
        String location = localLocation(options.get("location"));
        if (location == null) {
            return Optional.empty();
        }
        Optional<String> query = snapshotQuery(options);
        if (query.isEmpty()) {
            return Optional.empty();
        }
        JsonNode chunks;
        try {
            chunks = state.client().get(state.streamPath() + "/chunks" + query.get()).path("chunks");
        } catch (RuntimeException e) {
            return Optional.empty(); // the Python source asks again and reports the error as it always has
        }
        if (!chunks.isArray() || chunks.isEmpty() || !needsNoMerge(chunks, !state.primaryKey().isEmpty())) {
            return Optional.empty();
        }
        List<FileStatus> files = new ArrayList<>();
        for (JsonNode chunk : chunks) {
            ChunkFile file = chunkFile(location + "/" + chunk.path("path").asText());
            if (file == null || !readsByName(file.schema(), tableSchema)) {
                return Optional.empty();
            }
            files.add(file.status());
        }
        Scan parquet = PythonSourceBridge.parquetScan(files, tableSchema, required, filters);
        return Optional.of(new Native(parquet, python));
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

    /** The query of the snapshot request for the scan's cut, or empty when an option does not parse. */
    private static Optional<String> snapshotQuery(Map<String, String> options) {
        String cut = options.get("streamcat.cut");
        if (cut == null) {
            cut = options.get("versionasof");
        }
        String asOfTime = options.get("streamcat.asoftime");
        List<String> params = new ArrayList<>();
        try {
            if (cut != null) {
                params.add("streamCut=" + Long.parseLong(cut.trim()));
            }
            if (asOfTime != null) {
                params.add("asOfTime=" + Long.parseLong(asOfTime.trim()));
            }
        } catch (NumberFormatException e) {
            return Optional.empty(); // the Python source reports it
        }
        return Optional.of(params.isEmpty() ? "" : "?" + String.join("&", params));
    }

    /** The location as a local path or {@code file:} URI without a trailing slash, or null if it is not local. */
    static String localLocation(String location) {
        if (location == null || location.isBlank()) {
            return null;
        }
        String trimmed = location.replaceAll("/+$", "");
        if (trimmed.startsWith("/")) {
            return trimmed;
        }
        try {
            URI uri = new URI(trimmed);
            return "file".equalsIgnoreCase(uri.getScheme()) ? trimmed : null;
        } catch (URISyntaxException e) {
            return null;
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
            found = new ChunkFile(status, PythonSourceBridge.parquetSchema(status));
        } catch (IOException | RuntimeException e) {
            return null; // the Python source reads it, or reports why it cannot
        }
        synchronized (FOOTERS) {
            FOOTERS.put(file, found);
        }
        return found;
    }

    /**
     * Whether Spark's Parquet reader, matching columns by name, reads a file of schema {@code file}
     * under {@code table} as the Python reader does: every table column the file has (compared
     * ignoring case, as the Python reader does) is spelled the same and has the same type (ignoring
     * nullability); every table column it lacks is nullable and has no default value.
     */
    static boolean readsByName(StructType file, StructType table) {
        Map<String, StructField> byName = new HashMap<>();
        for (StructField field : file.fields()) {
            if (byName.put(field.name().toLowerCase(Locale.ROOT), field) != null) {
                return false; // two columns that differ only in case
            }
        }
        for (StructField column : table.fields()) {
            StructField found = byName.get(column.name().toLowerCase(Locale.ROOT));
            if (found == null) {
                if (!column.nullable() || column.metadata().contains("CURRENT_DEFAULT")
                        || column.metadata().contains("EXISTS_DEFAULT")) {
                    return false;
                }
            } else if (!found.name().equals(column.name()) || !sameType(found.dataType(), column.dataType())) {
                return false;
            }
        }
        return true;
    }

    /** Equal types, ignoring nullability (of fields, elements and values), with struct fields equal by name and order. */
    static boolean sameType(DataType a, DataType b) {
        if (a instanceof StructType sa && b instanceof StructType sb) {
            if (sa.fields().length != sb.fields().length) {
                return false;
            }
            for (int i = 0; i < sa.fields().length; i++) {
                if (!sa.fields()[i].name().equals(sb.fields()[i].name())
                        || !sameType(sa.fields()[i].dataType(), sb.fields()[i].dataType())) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof ArrayType aa && b instanceof ArrayType ab) {
            return sameType(aa.elementType(), ab.elementType());
        }
        if (a instanceof MapType ma && b instanceof MapType mb) {
            return sameType(ma.keyType(), mb.keyType()) && sameType(ma.valueType(), mb.valueType());
        }
        return a.equals(b);
    }
}
