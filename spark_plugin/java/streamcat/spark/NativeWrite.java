package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * The native columnar path of batch writes: Spark's own Parquet writer (ParquetWriteSupport, the
 * writer of {@code df.write.parquet}) writes the chunk files in the tasks, and the driver commits
 * them through the catalog REST API exactly as the Python writer ({@code pyspark_streamcat/writer.py},
 * {@code BatchWriter}) does: paths {@code data/<32 hex>.parquet} under the table's location, kind
 * {@code columnar}, a new file every {@code rowsPerChunk} rows of a task (1,000,000 by default), the
 * encoding id of the schema version Spark planned with in the commit and in the footer's key-value
 * metadata ({@code streamcat.encoding_id}, {@code streamcat.chunk_version}), per-column statistics in
 * the format of {@code catalog_api.streams.chunks.column_stats} (read back from the footers), one
 * commit with writer id {@code spark-write-<uuid>} and sequence 0, the properties
 * {@code streamcat.commit.property.*} and {@code spark.queryId}, and {@code streamcat.expectedlastcommit}.
 * The request is built and sent by {@link CommitBody}: a lost answer is resolved from the catalog by the
 * writer id, and the write succeeds if the commit was made. A failed job deletes its files, unless its
 * commit may have been made; files it could not delete are named by no commit, so readers never
 * see them and the cleanup command ({@code streamcat streams gc}) removes them. This class uses public
 * APIs only; the Parquet writer itself comes from {@link PythonSourceBridge}.
 *
 * <p>The table chooses the path ({@code StreamcatTable}'s write builder): native only when all of these
 * hold ({@link #eligible} checks the write's own; the table knows whether it is partitioned); otherwise the
 * write is the Python data source's, unchanged:
 * <ul>
 *   <li>it is not turned off: catalog option {@code native-write=false}
 *       ({@code spark.sql.catalog.NAME.native-write}), or the write option {@value OptionKeys#NATIVE_WRITE}
 *       {@code =false} ({@code streamcat.nativeWrite});</li>
 *   <li>it is a batch append or overwrite of rows: INSERT INTO / INSERT OVERWRITE, CTAS and RTAS,
 *       {@code df.writeTo(t).append()} / {@code .overwrite(lit(true))}, {@code df.write.insertInto},
 *       including a materialized table's refresh (its commit properties and expected last commit
 *       are passed on); not a compaction ({@code streamcat.compact.base}), not a row-level write
 *       (those never come here) and not a streaming write ({@link Routed#toStreaming} hands it to
 *       the Python source);</li>
 *   <li>this JVM has a Hadoop filesystem for the table's location ({@link NativeScan#nativeLocation});</li>
 *   <li>the table is not partitioned (its current partition spec has no fields): the Python writer splits
 *       a partitioned table's rows by partition and records each chunk's partition;</li>
 *   <li>every column is of a type whose Parquet form is the Python writer's: booleans, integers,
 *       floats, decimals, strings, binary, dates, timestamps (with or without time zone), and
 *       arrays, maps and structs of them;</li>
 *   <li>the session does not ask Spark to rebase dates and timestamps to the Julian calendar
 *       ({@code spark.sql.parquet.datetimeRebaseModeInWrite=LEGACY}): pyarrow never does.</li>
 * </ul>
 * Chunk files are compressed with the session's Parquet codec ({@code spark.sql.parquet.compression.codec},
 * snappy by default) as {@code df.write.parquet} would be; the Python writer uses zstd. Readers do not
 * care; a session that wants zstd chunks sets that codec.
 */
final class NativeWrite {
    /** The catalog option ({@code spark.sql.catalog.NAME.native-write}) that turns the native path off. */
    static final String CATALOG_OPTION = "native-write";
    /** Where chunk files go under the table's location (writer.py's DATA_DIR). */
    static final String DATA_DIR = "data";
    /** The footer keys of chunks.py (ENCODING_ID_KEY, CHUNK_VERSION_KEY). */
    static final String ENCODING_ID_KEY = "streamcat.encoding_id";
    static final String CHUNK_VERSION_KEY = "streamcat.chunk_version";
    /** options.py's DEFAULT_ROWS_PER_CHUNK. */
    static final long DEFAULT_ROWS_PER_CHUNK = 1_000_000L;
    /** The session setting that would make Spark's writer rebase old dates to the Julian calendar. */
    private static final String REBASE_MODE = "spark.sql.parquet.datetimeRebaseModeInWrite";

    private NativeWrite() {
    }

    /** A file of rows, written in order and closed once. */
    interface RowFile extends Closeable {
        void write(InternalRow row) throws IOException;
    }

    /**
     * The native batch write of {@code schema}'s rows (with the table's column metadata:
     * {@link #withTableMetadata}), truncating first when {@code overwrite}; a stream, which Spark asks of the
     * same Write, goes to {@code python}. The table decides whether a write is native ({@link #eligible}).
     */
    static Write write(StructType schema, LogicalWriteInfo info, Map<String, String> options, TableState state,
                       boolean overwrite, Supplier<Write> python) {
        return new Routed(new ChunkBatchWrite(schema, options, info.queryId(), state, overwrite), python);
    }

    /** Whether the native path may write this write (the rules of the class comment). */
    static boolean eligible(StructType schema, Map<String, String> options) {
        if ("false".equalsIgnoreCase(options.getOrDefault(OptionKeys.NATIVE_WRITE, "true").trim())) {
            return false;
        }
        if (options.containsKey(OptionKeys.COMPACT_BASE) || options.containsKey(OptionKeys.ROW_LEVEL)) {
            return false;
        }
        if (NativeScan.nativeLocation(options.get("location")) == null) {
            return false;
        }
        for (StructField field : schema.fields()) {
            if (!writable(field.dataType())) {
                return false;
            }
        }
        String rebase = SparkSession.active().conf().get(REBASE_MODE, "CORRECTED");
        return !"LEGACY".equalsIgnoreCase(rebase.trim());
    }

    /** Types whose Parquet form (Spark's writer, INT64 micros timestamps) the Python reader reads as the Python writer's. */
    static boolean writable(DataType type) {
        if (type instanceof StructType struct) {
            for (StructField field : struct.fields()) {
                if (!writable(field.dataType())) {
                    return false;
                }
            }
            return true;
        }
        if (type instanceof ArrayType array) {
            return writable(array.elementType());
        }
        if (type instanceof MapType map) {
            return writable(map.keyType()) && writable(map.valueType());
        }
        return type instanceof BooleanType || type instanceof ByteType || type instanceof ShortType
                || type instanceof IntegerType || type instanceof LongType || type instanceof FloatType
                || type instanceof DoubleType || type instanceof DecimalType || type instanceof BinaryType
                || type instanceof DateType || type instanceof TimestampType || type instanceof TimestampNTZType
                || (type instanceof StringType && type.equals(DataTypes.StringType));
    }

    /**
     * {@code write} (the rows Spark hands over) with the field metadata of the table's columns of the
     * same name (recursively into structs, arrays and maps): Parquet field ids and anything else the
     * table's schema says of a column reach the Parquet writer unchanged, whatever the query's
     * columns carried.
     */
    static DataType withTableMetadata(DataType write, DataType table) {
        if (write instanceof StructType ws && table instanceof StructType ts) {
            Map<String, StructField> byName = new HashMap<>();
            for (StructField field : ts.fields()) {
                byName.putIfAbsent(field.name().toLowerCase(Locale.ROOT), field);
            }
            StructField[] fields = new StructField[ws.fields().length];
            for (int i = 0; i < fields.length; i++) {
                StructField field = ws.fields()[i];
                StructField known = byName.get(field.name().toLowerCase(Locale.ROOT));
                fields[i] = known == null ? field : new StructField(field.name(),
                        withTableMetadata(field.dataType(), known.dataType()), field.nullable(), known.metadata());
            }
            return new StructType(fields);
        }
        if (write instanceof ArrayType wa && table instanceof ArrayType ta) {
            return new ArrayType(withTableMetadata(wa.elementType(), ta.elementType()), wa.containsNull());
        }
        if (write instanceof MapType wm && table instanceof MapType tm) {
            return new MapType(withTableMetadata(wm.keyType(), tm.keyType()),
                    withTableMetadata(wm.valueType(), tm.valueType()), wm.valueContainsNull());
        }
        return write;
    }

    /**
     * What {@link #write} answers: the native batch write for {@code toBatch}, the Python source's write
     * for {@code toStreaming} (a builder does not know which it serves).
     */
    static final class Routed implements Write {
        private final ChunkBatchWrite batch;
        private final Supplier<Write> python;

        Routed(ChunkBatchWrite batch, Supplier<Write> python) {
            this.batch = batch;
            this.python = python;
        }

        @Override
        public String description() {
            return "streamcat native Parquet write";
        }

        @Override
        public BatchWrite toBatch() {
            return batch;
        }

        @Override
        public StreamingWrite toStreaming() {
            return python.get().toStreaming();
        }
    }

    /** One task's files: the chunks it wrote, as the commit request lists them. */
    static final class ChunksWritten implements WriterCommitMessage {
        private static final long serialVersionUID = 1L;
        /** Each chunk's JSON (the wire form of ChunkInfo, built by {@link CommitBody#columnarChunk}). */
        final List<String> chunks;
        /** Every file the task made, committed or not (what an abort deletes). */
        final List<String> files;

        ChunksWritten(List<String> chunks, List<String> files) {
            this.chunks = chunks;
            this.files = files;
        }
    }

    /** The driver side: the encoding id and writer set-up before the tasks, one catalog commit after them. */
    static final class ChunkBatchWrite implements BatchWrite {
        private final StructType schema;
        private final Map<String, String> options;
        private final String queryId;
        private final TableState state;
        private final boolean overwrite;
        private final String location;
        /** A retried commit request (a lost answer) must not commit twice: the write is its own writer. */
        private final String writerId = "spark-write-" + UUID.randomUUID();
        /** Whether the commit may have been made although it failed (its answer was lost): keep the files. */
        private volatile boolean inDoubt;

        ChunkBatchWrite(StructType schema, Map<String, String> options, String queryId, TableState state,
                        boolean overwrite) {
            this.schema = schema;
            this.options = options;
            this.queryId = queryId;
            this.state = state;
            this.overwrite = overwrite;
            this.location = NativeScan.nativeLocation(options.get("location"));
        }

        @Override
        public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
            long rowsPerChunk = DEFAULT_ROWS_PER_CHUNK;
            String raw = options.get(OptionKeys.ROWS_PER_CHUNK);
            if (raw != null && !raw.isBlank()) {
                rowsPerChunk = Long.parseLong(raw.trim());
                if (rowsPerChunk < 1) {
                    throw new IllegalArgumentException("option rowsPerChunk must be at least 1, not " + raw);
                }
            }
            int encodingId = encodingId();
            try {
                Configuration conf = PythonSourceBridge.parquetWriteConf(schema);
                return new ChunkWriterFactory(location, serialize(conf), encodingId, rowsPerChunk);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot set up the Parquet write of " + location, e);
            }
        }

        /** The encoding id of the schema version Spark planned with (created by the registry if new). */
        private int encodingId() {
            ObjectNode version = CatalogRestClient.object();
            version.put("type", options.getOrDefault(OptionKeys.SCHEMA_TYPE, ""));
            version.put("version", Integer.parseInt(options.get(OptionKeys.SCHEMA_VERSION).trim()));
            version.put("id", Integer.parseInt(options.get(OptionKeys.SCHEMA_ID).trim()));
            ObjectNode body = CatalogRestClient.object();
            body.set("versionInfo", version);
            body.put("codecType", "");
            String path = CatalogRestClient.encodingsPath(options.get(OptionKeys.SCOPE), options.get(OptionKeys.STREAM));
            return state.client().call("PUT", path, body).path("encodingId").asInt();
        }

        @Override
        public void commit(WriterCommitMessage[] messages) {
            List<JsonNode> chunks = new ArrayList<>();
            for (WriterCommitMessage message : messages) {
                if (message instanceof ChunksWritten written) {
                    written.chunks.forEach(chunk -> chunks.add(CatalogRestClient.parse(chunk)));
                }
            }
            if (chunks.isEmpty() && !overwrite) {
                return; // nothing was written: an empty INSERT leaves the table as it is
            }
            CommitBody body = new CommitBody(chunks).overwrite(overwrite).writer(writerId, 0);
            options.forEach((key, value) -> {
                if (key.startsWith(OptionKeys.COMMIT_PROPERTY)) {
                    body.property(key.substring(OptionKeys.COMMIT_PROPERTY.length()), value);
                }
            });
            body.property("spark.queryId", queryId == null ? "" : queryId);
            String expected = options.get(OptionKeys.EXPECTED_LAST_COMMIT);
            if (expected != null && !expected.isBlank()) {
                body.expectedLastCommit(Long.parseLong(expected.trim()));
            }
            try {
                body.send(state.client(), state.streamPath()); // a lost answer is resolved from the catalog
            } catch (CommitBody.InDoubt e) {
                inDoubt = true;
                throw CatalogAccessException.raise(new CatalogAccessException(0, e.getMessage()));
            }
        }

        @Override
        public void abort(WriterCommitMessage[] messages) {
            if (inDoubt) {
                return; // the files may be the table's now; gc removes them if they are not
            }
            List<String> files = new ArrayList<>();
            for (WriterCommitMessage message : messages) {
                if (message instanceof ChunksWritten written) {
                    files.addAll(written.files);
                }
            }
            deleteQuietly(files, null);
        }

        @Override
        public String toString() {
            return "streamcat native Parquet write to " + location;
        }
    }

    private static byte[] serialize(Configuration conf) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            conf.write(out);
        }
        return bytes.toByteArray();
    }

    private static Configuration deserialize(byte[] bytes) {
        Configuration conf = new Configuration(false);
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            conf.readFields(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return conf;
    }

    /** Delete {@code files} (absolute paths), ignoring failures: a file left behind is named by no commit. */
    static void deleteQuietly(List<String> files, Configuration conf) {
        Configuration used = conf != null ? conf : new Configuration();
        for (String file : files) {
            try {
                Path path = new Path(file);
                FileSystem fs = path.getFileSystem(used);
                fs.delete(path, false);
            } catch (IOException | RuntimeException e) {
                // gc removes it
            }
        }
    }

    /** Shipped to the tasks: where and how to write, and the encoding id. */
    static final class ChunkWriterFactory implements DataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final String location;
        private final byte[] conf;
        private final int encodingId;
        private final long rowsPerChunk;

        ChunkWriterFactory(String location, byte[] conf, int encodingId, long rowsPerChunk) {
            this.location = location;
            this.conf = conf;
            this.encodingId = encodingId;
            this.rowsPerChunk = rowsPerChunk;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
            return new ChunkWriter(location, deserialize(conf), encodingId, rowsPerChunk);
        }
    }

    /** One task: rows into chunk files of at most {@code rowsPerChunk} rows, each described by its footer. */
    static final class ChunkWriter implements DataWriter<InternalRow> {
        private final String location;
        private final Configuration conf;
        private final int encodingId;
        private final long rowsPerChunk;
        private final Map<String, String> metadata;
        private final List<String> chunks = new ArrayList<>();
        private final List<String> files = new ArrayList<>();
        private RowFile current;
        private String currentPath;
        private long rows;

        ChunkWriter(String location, Configuration conf, int encodingId, long rowsPerChunk) {
            this.location = location;
            this.conf = conf;
            this.encodingId = encodingId;
            this.rowsPerChunk = rowsPerChunk;
            this.metadata = Map.of(ENCODING_ID_KEY, Integer.toString(encodingId), CHUNK_VERSION_KEY, "1");
        }

        @Override
        public void write(InternalRow row) throws IOException {
            if (current == null) {
                currentPath = DATA_DIR + "/" + UUID.randomUUID().toString().replace("-", "") + ".parquet";
                String file = location + "/" + currentPath;
                files.add(file);
                current = PythonSourceBridge.parquetFile(conf, file, metadata);
            }
            current.write(row);
            rows++;
            if (rows >= rowsPerChunk) {
                finish();
            }
        }

        /** Close the current file and describe it as the commit will list it. */
        private void finish() throws IOException {
            RowFile file = current;
            current = null;
            file.close();
            chunks.add(describe(location + "/" + currentPath, currentPath, rows).toString());
            rows = 0;
        }

        private ObjectNode describe(String file, String path, long count) throws IOException {
            Path hadoopPath = new Path(file);
            ParquetMetadata footer;
            try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromPath(hadoopPath, conf))) {
                footer = reader.getFooter();
            }
            long size = hadoopPath.getFileSystem(conf).getFileStatus(hadoopPath).getLen();
            ObjectNode chunk = CommitBody.columnarChunk(path, count, size, encodingId, columnStats(footer, count));
            return chunk;
        }

        @Override
        public WriterCommitMessage commit() throws IOException {
            if (current != null) {
                finish();
            }
            return new ChunksWritten(List.copyOf(chunks), List.copyOf(files));
        }

        @Override
        public void abort() {
            closeQuietly();
            deleteQuietly(files, conf); // this task's files would never be committed
        }

        @Override
        public void close() {
            closeQuietly();
        }

        private void closeQuietly() {
            if (current != null) {
                try {
                    current.close();
                } catch (IOException | RuntimeException e) {
                    // the file is deleted by abort, or left to gc
                }
                current = null;
            }
        }
    }

    /**
     * The statistics of a chunk as {@code catalog_api.streams.chunks.column_stats} records them, from
     * its footer: for each top-level column of an integer, floating, string, boolean, date or timestamp
     * type, {@code nulls} and (when it has a non-null value) {@code min} and {@code max}, dates in days
     * and timestamps in microseconds; {@code rows}. Where the footer has no bounds (a string longer than
     * Parquet keeps bounds of, a float column holding NaN) the column has no {@code min}/{@code max}: a
     * reader then keeps the chunk, as it does for any chunk it cannot judge.
     */
    static ObjectNode columnStats(ParquetMetadata footer, long rows) {
        Map<String, Statistics<?>> merged = new HashMap<>();
        Map<String, Boolean> bounded = new HashMap<>();
        // Summed here: statistics built for merging start with an unknown (-1) null count.
        Map<String, Long> nulls = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (BlockMetaData block : footer.getBlocks()) {
            for (ColumnChunkMetaData column : block.getColumns()) {
                String[] path = column.getPath().toArray();
                if (path.length != 1 || !statsType(column)) {
                    continue;
                }
                String name = path[0];
                Statistics<?> stats = column.getStatistics();
                if (!merged.containsKey(name)) {
                    order.add(name);
                    merged.put(name, Statistics.getBuilderForReading(column.getPrimitiveType()).build());
                    bounded.put(name, Boolean.TRUE);
                    nulls.put(name, 0L);
                }
                if (stats == null || stats.isEmpty() || !stats.isNumNullsSet()) {
                    merged.put(name, null); // nulls unknown: the column is left out
                    continue;
                }
                Statistics<?> into = merged.get(name);
                if (into == null) {
                    continue;
                }
                boolean hasValues = column.getValueCount() > stats.getNumNulls();
                if (hasValues && !stats.hasNonNullValue()) {
                    bounded.put(name, Boolean.FALSE);
                }
                nulls.merge(name, stats.getNumNulls(), Long::sum);
                mergeInto(into, stats);
            }
        }
        ObjectNode columns = CatalogRestClient.object();
        for (String name : order) {
            Statistics<?> stats = merged.get(name);
            if (stats == null) {
                continue;
            }
            ObjectNode entry = columns.putObject(name);
            entry.put("nulls", nulls.get(name));
            if (bounded.get(name) && stats.hasNonNullValue()) {
                Object min = stats.genericGetMin();
                Object max = stats.genericGetMax();
                if (!isNaN(min) && !isNaN(max)) {
                    putValue(entry, "min", min);
                    putValue(entry, "max", max);
                }
            }
        }
        ObjectNode result = CatalogRestClient.object();
        result.set("columns", columns);
        result.put("rows", rows);
        return result;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void mergeInto(Statistics into, Statistics stats) {
        into.mergeStatistics(stats);
    }

    /** The Parquet columns column_stats covers: integers, floats, strings, booleans, dates, timestamps. */
    private static boolean statsType(ColumnChunkMetaData column) {
        var type = column.getPrimitiveType();
        var logical = type.getLogicalTypeAnnotation();
        switch (type.getPrimitiveTypeName()) {
            case BOOLEAN:
            case FLOAT:
            case DOUBLE:
                return true;
            case INT32:
            case INT64:
                // Decimals stored as integers have no statistics in column_stats; times neither.
                return logical == null
                        || logical instanceof org.apache.parquet.schema.LogicalTypeAnnotation.IntLogicalTypeAnnotation
                        || logical instanceof org.apache.parquet.schema.LogicalTypeAnnotation.DateLogicalTypeAnnotation
                        || logical instanceof org.apache.parquet.schema.LogicalTypeAnnotation.TimestampLogicalTypeAnnotation;
            case BINARY:
                return logical instanceof org.apache.parquet.schema.LogicalTypeAnnotation.StringLogicalTypeAnnotation;
            default:
                return false;
        }
    }

    private static boolean isNaN(Object value) {
        return (value instanceof Float f && f.isNaN()) || (value instanceof Double d && d.isNaN());
    }

    private static void putValue(ObjectNode entry, String key, Object value) {
        if (value instanceof Integer i) {
            entry.put(key, i.longValue());
        } else if (value instanceof Long l) {
            entry.put(key, l);
        } else if (value instanceof Float f) {
            // Parquet widens a bound of 0 to -0.0 / +0.0; Spark and Python compare them as equal.
            entry.put(key, f == 0.0f ? 0.0 : (double) f);
        } else if (value instanceof Double d) {
            entry.put(key, d == 0.0 ? 0.0 : d);
        } else if (value instanceof Boolean b) {
            entry.put(key, b);
        } else if (value instanceof Binary binary) {
            entry.put(key, binary.toStringUsingUTF8());
        }
    }
}
