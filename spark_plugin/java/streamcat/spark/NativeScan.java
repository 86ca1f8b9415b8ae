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
 *       {@value #DISABLED}), or the same as a read option;</li>
 *   <li>it is a scan of the table's rows: no change feed ({@code streamcat.changes.*}) and no
 *       metadata column ({@code _chunk}, {@code _pos});</li>
 *   <li>the table's location is on the local filesystem (a path or a {@code file:} URI: other
 *       stores may need the credentials only the Python side has);</li>
 *   <li>the chunks the catalog plans for the scan ({@code POST .../chunks/plan} with the snapshot at the
 *       scan's cut, latest, {@code streamcat.cut}/{@code versionAsOf} or {@code streamcat.asoftime}, and
 *       the pushed filters as filter JSON: the live chunks whose partition, and in an append table
 *       statistics, may hold a passing row) are all {@code columnar} and need no merge
 *       ({@link #needsNoMerge}); no planned chunk at all is a Parquet scan of no file (no row);</li>
 *   <li>Spark's reader, which matches columns by name, reads every file's columns as the Python
 *       reader does, which matches them by field id ({@link #readsAsTable}): each table column the
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
     * @param filterJson the pushed filters as filter JSON ({@link FilterJson}: what the Python source gets as
     *     {@code streamcat.filters}), with which the catalog plans the chunks to read
     * @param python the Python scan of the same read (made only if a stream asks for it)
     */
    static Optional<Scan> plan(TableState state, StructType tableSchema, Map<String, String> options,
                               StructType required, Filter[] filters, ArrayNode filterJson, Supplier<Scan> python) {
        if (disabled(options)) {
            return Optional.empty();
        }
        if (options.keySet().stream().anyMatch(k -> k.startsWith("streamcat.changes."))) {
            return Optional.empty();
        }
        Set<String> columns = lowerNames(tableSchema);
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
        return "false".equalsIgnoreCase(options.getOrDefault(DISABLED, "true").trim());
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
        boolean tableIds = hasFieldIds(tableSchema);
        List<ChunkFile> found = new ArrayList<>();
        boolean allIds = true;
        for (JsonNode chunk : chunks) {
            ChunkFile file = chunkFile(location + "/" + chunk.path("path").asText());
            if (file == null) {
                return null;
            }
            found.add(file);
            allIds &= hasFieldIds(file.schema());
        }
        List<FileStatus> statuses = new ArrayList<>();
        if (tableIds && allIds) {
            // Every file has Parquet field ids: Spark's reader matches columns by id, as the Python reader
            // does, so renamed columns read their old data natively.
            for (ChunkFile file : found) {
                if (!readsById(file.schema(), tableSchema)) {
                    return null;
                }
                statuses.add(file.status());
            }
            return new Files(statuses, Map.of(ID_READS, "true"));
        }
        for (int i = 0; i < chunks.size(); i++) {
            StructType schema = found.get(i).schema();
            if (tableIds && !hasFieldIds(schema)) {
                JsonNode writer = writerSchema(state, options, chunks.get(i));
                Map<String, VersionField> ids = writer == null ? null : versionIds(writer);
                if (ids == null) {
                    return null;
                }
                schema = withVersionIds(schema, ids);
            }
            if (!(tableIds ? readsAsTable(schema, tableSchema) : readsByName(schema, tableSchema))) {
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
        String cut = options.get("streamcat.cut");
        if (cut == null) {
            cut = options.get("versionasof");
        }
        String asOfTime = options.get("streamcat.asoftime");
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
            found = new ChunkFile(status, PythonSourceBridge.parquetSchemaWithIds(status));
        } catch (IOException | RuntimeException e) {
            return null; // the Python source reads it, or reports why it cannot
        }
        synchronized (FOOTERS) {
            FOOTERS.put(file, found);
        }
        return found;
    }

    /** StructField metadata key of a column's field id (Spark's own). */
    static final String FIELD_ID = "parquet.field.id";
    /** Spark's metadata key of the value a column's older rows read, which Spark's Parquet reader fills in. */
    private static final String EXISTS_DEFAULT = "EXISTS_DEFAULT";
    /** Spark's setting that makes its Parquet reader match columns by field id. */
    private static final String ID_READS = "spark.sql.parquet.fieldId.read.enabled";
    /** Spark's setting that lets its Parquet reader read a file without field ids under a schema with some. */
    private static final String IGNORE_MISSING_IDS = "spark.sql.parquet.fieldId.read.ignoreMissing";
    /** The Avro schema of each encoding id seen, by scope and group: encoding ids never change meaning. */
    private static final Map<String, JsonNode> ENCODING_SCHEMAS = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * {@code schema} itself if some column has a field id; otherwise {@code schema} with the ids the
     * server gives a schema without ids at its first column change: 1, 2, ... in schema order, depth
     * first (a column, then the fields of the structs in its type, in array elements, map keys and values).
     * This mirrors {@code assign_field_ids} in catalog_api/schema/fieldids.py: change both together.
     */
    static StructType withPositionalIds(StructType schema) {
        return hasFieldIds(schema) ? schema : (StructType) positional(schema, new long[] {0});
    }

    private static DataType positional(DataType type, long[] counter) {
        if (type instanceof StructType struct) {
            StructField[] fields = struct.fields();
            StructField[] out = new StructField[fields.length];
            for (int i = 0; i < fields.length; i++) {
                StructField field = fields[i];
                org.apache.spark.sql.types.Metadata metadata = new org.apache.spark.sql.types.MetadataBuilder()
                        .withMetadata(field.metadata()).putLong(FIELD_ID, ++counter[0]).build();
                out[i] = new StructField(field.name(), positional(field.dataType(), counter), field.nullable(), metadata);
            }
            return new StructType(out);
        }
        if (type instanceof ArrayType array) {
            return new ArrayType(positional(array.elementType(), counter), array.containsNull());
        }
        if (type instanceof MapType map) {
            DataType key = positional(map.keyType(), counter);
            return new MapType(key, positional(map.valueType(), counter), map.valueContainsNull());
        }
        return type;
    }

    /** Whether some column of {@code schema}, top-level or in a nested struct, has a field id. */
    static boolean hasFieldIds(StructType schema) {
        for (StructField field : schema.fields()) {
            if (field.metadata().contains(FIELD_ID)) {
                return true;
            }
            if (field.dataType() instanceof StructType nested && hasFieldIds(nested)) {
                return true;
            }
        }
        return false;
    }

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
                JsonNode info = state.client().get("/v1/groups/" + CatalogRestClient.segment(stream) + "/encodings/"
                        + ids.get(0).asLong() + "?namespace=" + CatalogRestClient.segment(scope));
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

    /** A column's id in a schema version, and the ids of the fields of the struct it is (or holds). */
    private record VersionField(long id, Map<String, VersionField> children) {
    }

    /**
     * The field ids of an Avro record schema, by column name: its {@code field-id} attributes, or, for a
     * version made before ids existed (none has one), the ids its first column change gave it, in schema
     * order (catalog_api/schema/fieldids.py, {@code assign_field_ids}; the Python reader's rule is in
     * catalog_api/schema/resolution.py: change both together). Null for a schema whose order is not
     * that simple (unions of several types, named type references).
     */
    static Map<String, VersionField> versionIds(JsonNode record) {
        boolean positional = !record.toString().contains("\"field-id\"");
        try {
            return versionIds(record, positional, new long[] {0});
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static Map<String, VersionField> versionIds(JsonNode record, boolean positional, long[] counter) {
        Map<String, VersionField> out = new HashMap<>();
        for (JsonNode field : record.path("fields")) {
            long id = positional ? ++counter[0] : field.path("field-id").asLong(-1);
            JsonNode nested = nestedRecord(field.path("type"));
            out.put(field.path("name").asText(), new VersionField(id,
                    nested == null ? Map.of() : versionIds(nested, positional, counter)));
        }
        return out;
    }

    /** The record inside an Avro type (itself, a nullable union's branch, array items, map values), if any. */
    private static JsonNode nestedRecord(JsonNode type) {
        if (type.isTextual()) {
            String name = type.asText();
            if (!Set.of("null", "boolean", "int", "long", "float", "double", "bytes", "string").contains(name)) {
                throw new IllegalArgumentException("a named type reference: " + name);
            }
            return null;
        }
        if (type.isArray()) {
            JsonNode branch = null;
            for (JsonNode member : type) {
                if (!"null".equals(member.asText(""))) {
                    if (branch != null) {
                        throw new IllegalArgumentException("a union of several types");
                    }
                    branch = member;
                }
            }
            return branch == null ? null : nestedRecord(branch);
        }
        return switch (type.path("type").asText()) {
            case "record" -> type;
            case "array" -> nestedRecord(type.path("items"));
            case "map" -> nestedRecord(type.path("values"));
            default -> null;
        };
    }

    /** {@code footer} (a file's schema, without Parquet field ids) with the ids of its schema version, by name. */
    static StructType withVersionIds(StructType footer, Map<String, VersionField> ids) {
        StructField[] fields = footer.fields();
        StructField[] out = new StructField[fields.length];
        for (int i = 0; i < fields.length; i++) {
            StructField field = fields[i];
            VersionField known = ids.get(field.name());
            if (known == null || known.id() < 0) {
                out[i] = field;
                continue;
            }
            DataType type = field.dataType() instanceof StructType nested && !known.children().isEmpty()
                    ? withVersionIds(nested, known.children()) : field.dataType();
            out[i] = new StructField(field.name(), type, field.nullable(),
                    new org.apache.spark.sql.types.MetadataBuilder().withMetadata(field.metadata())
                            .putLong(FIELD_ID, known.id()).build());
        }
        return new StructType(out);
    }

    private static long fieldId(StructField field) {
        return field.metadata().contains(FIELD_ID) ? field.metadata().getLong(FIELD_ID) : -1;
    }

    /**
     * Whether Spark's Parquet reader, matching columns by name, reads a file of schema {@code file}
     * (with the field ids of its footer) under {@code table} (with the table's field ids) as the Python
     * reader does, matching them by id: the file column with a table column's id has the same spelling
     * and type (nested struct fields alike); a table column whose id the file lacks is nullable or has an
     * EXISTS_DEFAULT (which Spark's reader fills in, as the Python reader does), and its name is not in the
     * file (or Spark would read that other column's data).
     */
    static boolean readsAsTable(StructType file, StructType table) {
        Map<Long, StructField> byId = new HashMap<>();
        Set<String> names = new HashSet<>();
        for (StructField field : file.fields()) {
            names.add(field.name().toLowerCase(Locale.ROOT));
            long id = fieldId(field);
            if (id >= 0 && byId.put(id, field) != null) {
                return false;
            }
        }
        for (StructField column : table.fields()) {
            long id = fieldId(column);
            StructField found = id >= 0 ? byId.get(id) : null;
            if (found == null) {
                if (id < 0 || names.contains(column.name().toLowerCase(Locale.ROOT))
                        || (!column.nullable() && !column.metadata().contains(EXISTS_DEFAULT))) {
                    return false;
                }
            } else if (!found.name().equals(column.name()) || !sameTypeById(found.dataType(), column.dataType())) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether Spark's Parquet reader, matching columns by field id, reads a file of schema {@code file} (with
     * the ids of its footer) under {@code table} as the Python reader does: the file column with a table
     * column's id has the table column's type (its name does not matter: a renamed column), nested
     * structs alike; a table column whose id the file lacks is nullable or has an EXISTS_DEFAULT (Spark's
     * reader fills it in, as the Python reader does).
     */
    static boolean readsById(StructType file, StructType table) {
        Map<Long, StructField> byId = new HashMap<>();
        for (StructField field : file.fields()) {
            long id = fieldId(field);
            if (id >= 0 && byId.put(id, field) != null) {
                return false;
            }
        }
        for (StructField column : table.fields()) {
            long id = fieldId(column);
            if (id < 0) {
                return false;
            }
            StructField found = byId.get(id);
            if (found == null) {
                // Spark's Parquet reader fills a column a file lacks with its EXISTS_DEFAULT, else null.
                if (!column.nullable() && !column.metadata().contains(EXISTS_DEFAULT)) {
                    return false;
                }
            } else if (!typeById(found.dataType(), column.dataType())) {
                return false;
            }
        }
        return true;
    }

    private static boolean typeById(DataType file, DataType table) {
        if (file instanceof StructType sf && table instanceof StructType st) {
            return readsById(sf, st);
        }
        if (file instanceof ArrayType af && table instanceof ArrayType at) {
            return typeById(af.elementType(), at.elementType());
        }
        if (file instanceof MapType mf && table instanceof MapType mt) {
            return typeById(mf.keyType(), mt.keyType()) && typeById(mf.valueType(), mt.valueType());
        }
        return sameType(file, table);
    }

    /** {@link #sameType}, and nested struct fields that have ids have the same ones. */
    private static boolean sameTypeById(DataType file, DataType table) {
        if (file instanceof StructType sf && table instanceof StructType st) {
            if (sf.fields().length != st.fields().length) {
                return false;
            }
            for (int i = 0; i < sf.fields().length; i++) {
                long a = fieldId(sf.fields()[i]);
                long b = fieldId(st.fields()[i]);
                if ((a >= 0 && b >= 0 && a != b) || !sf.fields()[i].name().equals(st.fields()[i].name())
                        || !sameTypeById(sf.fields()[i].dataType(), st.fields()[i].dataType())) {
                    return false;
                }
            }
            return true;
        }
        return sameType(file, table);
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
