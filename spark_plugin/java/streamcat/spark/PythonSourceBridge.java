package streamcat.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.python.PythonUtils$;
import org.apache.spark.api.python.SimplePythonFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.parquet.hadoop.api.DelegatingWriteSupport;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import scala.Option;
import scala.collection.immutable.Map$;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * Every use of Spark-internal classes lives here: Spark's Python data source machinery
 * (PythonDataSourceV2 and its scan and write builders) and Spark's own Parquet scan
 * (ParquetScanBuilder over an InMemoryFileIndex fed by a FileStatusCache of the known files, or a
 * subclass of it whose partitions are given groups of files,
 * ParquetToSparkSchemaConverter) and Parquet write (ParquetFileFormat's write setup and
 * ParquetWriteSupport), which change between releases. No other class of the shim touches an
 * internal class; {@link NativeScan} and {@link NativeFeed} decide when the Parquet scan may be used and call
 * {@link #parquetScan} / {@link #parquetSchema}, {@link NativeWrite} decides when the Parquet
 * write may be used and calls {@link #parquetWriteConf} / {@link #parquetFile}.
 *
 * The table data goes through the Python data source {@code pyspark_streamcat.DefaultSource}, which is
 * never looked up by name: Spark's lookup of Python data sources ({@code DataSourceManager}) imports every
 * {@code pyspark_*} module on the Python path, the working directory included, so a user's
 * {@code pyspark_test.py} would run inside our statements. Instead {@link Source} answers its
 * {@code source()} itself: a pickle of the class by reference, which the Python worker imports, run by the
 * interpreter that {@code spark.pyspark.driver.python} or {@code spark.pyspark.python} names (Spark's own
 * default for data sources is the PYSPARK_PYTHON environment variable of the driver, or python3). Executors
 * get that source inside the write and read plans, never by name. {@code spark.read.format("streamcat")}
 * finds {@code streamcat.DefaultSource} (a {@link Source}) as a class before Spark would look for a Python
 * data source of that name.
 */
public final class PythonSourceBridge {
    /** The name the Python data source answers to ({@code DefaultSource.name()}). */
    static final String SHORT_NAME = "streamcat";

    /** {@code pickle.dumps(pyspark_streamcat.DefaultSource, protocol=2)}: the class by reference. */
    private static final byte[] PICKLED_CLASS =
            "\u0080\u0002cpyspark_streamcat\nDefaultSource\nq\u0000.".getBytes(StandardCharsets.ISO_8859_1);

    private PythonSourceBridge() {
    }

    /** The Python data source for each interpreter (its path; "" for Spark's default), made once. */
    private static final Map<String, UserDefinedPythonDataSource> SOURCES = new ConcurrentHashMap<>();

    /**
     * {@code pyspark_streamcat.DefaultSource} for the active session's Python: never through the session's
     * {@code DataSourceManager}, whose first lookup imports every {@code pyspark_*} module on the path.
     */
    static UserDefinedPythonDataSource pythonSource() {
        SparkConf conf = SparkSession.active().sparkContext().getConf();
        String python = conf.get("spark.pyspark.driver.python", conf.get("spark.pyspark.python", ""));
        return SOURCES.computeIfAbsent(python, chosen -> {
            SimplePythonFunction function = PythonUtils$.MODULE$.createPythonFunction(PICKLED_CLASS);
            if (chosen.isEmpty() || chosen.equals(function.pythonExec())) {
                return UserDefinedPythonDataSource.apply(function);
            }
            return UserDefinedPythonDataSource.apply(new SimplePythonFunction(PICKLED_CLASS, function.envVars(),
                    function.pythonIncludes(), chosen, pythonVersion(chosen), function.broadcastVars(),
                    function.accumulator()));
        });
    }

    /**
     * Spark's Python data source with the Streamcat source built in: everything Spark does with a Python
     * source (plan reads and writes, commit, stream) asks {@code source()}, which this answers without a
     * lookup by name. Public for {@code streamcat.DefaultSource}, Spark's way to {@code format("streamcat")}.
     */
    public static class Source extends PythonDataSourceV2 {
        @Override
        public UserDefinedPythonDataSource source() {
            return pythonSource();
        }
    }

    /** The "major.minor" version of an interpreter (Spark's workers refuse to run under another one). */
    private static String pythonVersion(String python) {
        try {
            Process process = new ProcessBuilder(python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
                    .redirectErrorStream(true).start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
                throw new IllegalStateException("cannot run the Python interpreter " + python + ": " + out);
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run the Python interpreter " + python + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while asking " + python + " for its version", e);
        }
    }

    /** A fresh Python data source: it caches the Python instance and the planned read, so never reuse one. */
    private static PythonDataSourceV2 newSource() {
        PythonDataSourceV2 source = new Source();
        source.setShortName(SHORT_NAME);
        return source;
    }

    /** A scan builder of a new Python source reading {@code schema} (already pruned) with {@code options}. */
    static ScanBuilder scanBuilder(StructType schema, CaseInsensitiveStringMap options) {
        return new PythonTable(newSource(), SHORT_NAME, schema).newScanBuilder(options);
    }

    /** A write builder of a new Python source writing {@code info.schema()} with {@code info.options()}. */
    static WriteBuilder writeBuilder(LogicalWriteInfo info) {
        return new PythonTable(newSource(), SHORT_NAME, info.schema()).newWriteBuilder(info);
    }

    /**
     * Spark's own Parquet scan of {@code files} (statuses of Parquet files), whose rows are read under
     * {@code dataSchema} (columns matched by name, missing ones null), pruned to {@code required};
     * {@code filters} go to the Parquet reader for row-group skipping (Spark still evaluates every
     * filter on the rows it reads). The file index is handed the statuses, so it lists nothing (no
     * listing job however many files). No partition columns, no options of the table (credentials
     * never reach the plan or the Hadoop configuration): {@code options} go into the Hadoop
     * configuration of the scan's readers (what a {@code spark.read.options(...)} of Parquet sets), e.g.
     * {@code spark.sql.parquet.fieldId.read.enabled} to match the files' columns by Parquet field id
     * (Spark's {@code ParquetReadSupport} reads that setting from the configuration, which
     * {@code ParquetScanBuilder} builds from the session's and these options).
     */
    static Scan parquetScan(List<FileStatus> files, StructType dataSchema, StructType required, Filter[] filters,
                            Map<String, String> options) {
        SparkSession session = SparkSession.active();
        InMemoryFileIndex index = new InMemoryFileIndex(session, paths(files), Map$.MODULE$.empty(),
                Option.apply(dataSchema), knownFiles(files), Option.apply(PartitionSpec.emptySpec()), Option.empty());
        return parquetScan(session, index, dataSchema, dataSchema, required, filters, options);
    }

    /**
     * The same scan over groups of files that each carry constant values of {@code partitionSchema}'s
     * columns (the columns follow the files' in the rows, as Hive partition columns do): each group's
     * values are its files' values, whatever directory they are in. {@code filters} must name columns of
     * {@code dataSchema} only.
     */
    static Scan parquetScan(List<Map.Entry<InternalRow, List<FileStatus>>> groups, StructType dataSchema,
                            StructType partitionSchema, StructType required, Filter[] filters,
                            Map<String, String> options) {
        SparkSession session = SparkSession.active();
        List<FileStatus> files = new ArrayList<>();
        List<PartitionDirectory> directories = new ArrayList<>();
        for (Map.Entry<InternalRow, List<FileStatus>> group : groups) {
            files.addAll(group.getValue());
            directories.add(PartitionDirectory.apply(group.getKey(), group.getValue().toArray(new FileStatus[0])));
        }
        StructType schema = dataSchema.merge(partitionSchema, true);
        InMemoryFileIndex index = new GroupedFileIndex(session, paths(files), schema, knownFiles(files),
                partitionSchema, CollectionConverters.asScala(directories).toList());
        return parquetScan(session, index, schema, dataSchema, required, filters, options);
    }

    private static Scan parquetScan(SparkSession session, InMemoryFileIndex index, StructType schema,
                                    StructType dataSchema, StructType required, Filter[] filters,
                                    Map<String, String> options) {
        ParquetScanBuilder builder = new ParquetScanBuilder(session, index, schema, dataSchema,
                new CaseInsensitiveStringMap(options));
        builder.pruneColumns(required);
        builder.pushedDataFilters_$eq(builder.pushDataFilters(filters));
        return builder.build();
    }

    private static scala.collection.immutable.List<Path> paths(List<FileStatus> files) {
        List<Path> paths = new ArrayList<>();
        for (FileStatus status : files) {
            paths.add(status.getPath());
        }
        return CollectionConverters.asScala(paths).toList();
    }

    /** A file status cache that answers the given statuses, so that the file index lists nothing. */
    private static FileStatusCache knownFiles(List<FileStatus> files) {
        Map<Path, FileStatus[]> known = new HashMap<>();
        for (FileStatus status : files) {
            known.put(status.getPath(), new FileStatus[] {status});
        }
        return new FileStatusCache() {
            @Override
            public Option<FileStatus[]> getLeafFiles(Path path) {
                return Option.apply(known.get(path));
            }

            @Override
            public void putLeafFiles(Path path, FileStatus[] leafFiles) {
            }

            @Override
            public void invalidateAll() {
            }
        };
    }

    /**
     * A file index whose partitions are given groups of files rather than directories: Spark's index maps
     * a partition to a directory, and one directory holds the files of many groups (commits).
     */
    private static final class GroupedFileIndex extends InMemoryFileIndex {
        private final scala.collection.immutable.Seq<PartitionDirectory> directories;

        GroupedFileIndex(SparkSession session, scala.collection.immutable.Seq<Path> paths, StructType schema,
                         FileStatusCache statuses, StructType partitionSchema,
                         scala.collection.immutable.Seq<PartitionDirectory> directories) {
            super(session, paths, Map$.MODULE$.empty(), Option.apply(schema), statuses,
                    Option.apply(PartitionSpec.apply(partitionSchema, CollectionConverters.asScala(
                            List.<org.apache.spark.sql.execution.datasources.PartitionPath>of()).toList())),
                    Option.empty());
            this.directories = directories;
        }

        @Override
        public scala.collection.immutable.Seq<PartitionDirectory> listFiles(
                scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.Expression> partitionFilters,
                scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.Expression> dataFilters) {
            return directories;
        }
    }

    /** The status of {@code file} (a path or URI) on its Hadoop filesystem. */
    static FileStatus fileStatus(String file) throws IOException {
        Path path = new Path(file);
        return path.getFileSystem(SparkSession.active().sessionState().newHadoopConf()).getFileStatus(path);
    }

    /** The Spark schema Spark's Parquet reader sees in the footer of {@code file} (under this session's settings). */
    static StructType parquetSchema(FileStatus file) throws IOException {
        SparkSession session = SparkSession.active();
        Configuration conf = session.sessionState().newHadoopConf();
        try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromStatus(file, conf))) {
            return new ParquetToSparkSchemaConverter(session.sessionState().conf())
                    .convert(reader.getFooter().getFileMetaData().getSchema());
        }
    }

    /**
     * Spark's Parquet writer settings (SQLConf keys, as ParquetWriteSupport reads them from the Hadoop
     * configuration) that chunk files fix whatever the session says, so that they have the Python
     * writer's form: INT64 microsecond timestamps (Spark's default INT96 has no statistics), the
     * standard (not legacy) layout of lists, maps and decimals, and the columns' Parquet field ids.
     * (The calendar rebase mode is read from the session instead: {@link NativeWrite} leaves LEGACY to
     * the Python writer.)
     */
    private static final Map<String, String> CHUNK_WRITE_SETTINGS = Map.of(
            "spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS",
            "spark.sql.parquet.writeLegacyFormat", "false",
            "spark.sql.parquet.fieldId.write.enabled", "true");

    /**
     * The Hadoop configuration of Spark's own Parquet write of rows of {@code schema}: what
     * {@code df.write.parquet} sets up (ParquetFileFormat.prepareWrite: the session's codec, writer
     * settings, the row schema with its field metadata, so Parquet field ids are written when the
     * columns carry {@code parquet.field.id}), with {@link #CHUNK_WRITE_SETTINGS} fixed, and local
     * files written without {@code .crc} side files (they would be files that no commit names).
     * No table option goes in (credentials stay out of the configuration).
     */
    static Configuration parquetWriteConf(StructType schema) throws IOException {
        SparkSession session = SparkSession.active();
        Job job = Job.getInstance(session.sessionState().newHadoopConf());
        new ParquetFileFormat().prepareWrite(session, job, Map$.MODULE$.empty(), schema);
        Configuration conf = job.getConfiguration();
        CHUNK_WRITE_SETTINGS.forEach(conf::set);
        conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
        conf.setBoolean("fs.file.impl.disable.cache", true);
        return conf;
    }

    /**
     * A new Parquet file at {@code file} written by Spark's ParquetWriteSupport (the writer of
     * {@code df.write.parquet}) under {@code conf} (from {@link #parquetWriteConf}), with
     * {@code metadata} added to the footer's key-value metadata.
     */
    static NativeWrite.RowFile parquetFile(Configuration conf, String file, Map<String, String> metadata)
            throws IOException {
        WriteSupport<InternalRow> support = new DelegatingWriteSupport<>(new ParquetWriteSupport()) {
            @Override
            public WriteSupport.FinalizedWriteContext finalizeWrite() {
                Map<String, String> extra = new HashMap<>(super.finalizeWrite().getExtraMetaData());
                extra.putAll(metadata);
                return new WriteSupport.FinalizedWriteContext(extra);
            }
        };
        RecordWriter<Void, InternalRow> writer;
        try {
            writer = new ParquetOutputFormat<InternalRow>(support).getRecordWriter(conf, new Path(file),
                    ParquetOutputFormat.getCompression(conf), ParquetFileWriter.Mode.CREATE);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while opening " + file, e);
        }
        return new NativeWrite.RowFile() {
            @Override
            public void write(InternalRow row) throws IOException {
                try {
                    writer.write(null, row);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while writing " + file, e);
                }
            }

            @Override
            public void close() throws IOException {
                try {
                    writer.close(null);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while closing " + file, e);
                }
            }
        };
    }

    /**
     * Run {@code body} on this thread as part of the task {@code context} (Spark's Python runners find
     * their task through the thread's TaskContext); on the driver ({@code null}) just run it.
     */
    static void inTask(TaskContext context, Runnable body) {
        if (context == null) {
            body.run();
            return;
        }
        TaskContext.withTaskContext(context, (scala.Function0<BoxedUnit>) () -> {
            body.run();
            return BoxedUnit.UNIT;
        });
    }
    // -- field ids and column defaults (issue 14, deliverable 2) --------------------------------------

    /**
     * The Spark schema of {@code file}'s footer, as {@link #parquetSchema} gives it, with each column's
     * Parquet field id (top-level columns and the fields of nested structs) in its metadata under
     * {@code parquet.field.id}, as Spark's own reader would match it.
     */
    static StructType parquetSchemaWithIds(FileStatus file) throws IOException {
        SparkSession session = SparkSession.active();
        Configuration conf = session.sessionState().newHadoopConf();
        try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromStatus(file, conf))) {
            org.apache.parquet.schema.MessageType message = reader.getFooter().getFileMetaData().getSchema();
            StructType converted = new ParquetToSparkSchemaConverter(session.sessionState().conf()).convert(message);
            return withFieldIds(converted, message);
        }
    }

    private static StructType withFieldIds(StructType struct, org.apache.parquet.schema.GroupType group) {
        org.apache.spark.sql.types.StructField[] fields = struct.fields();
        org.apache.spark.sql.types.StructField[] out = new org.apache.spark.sql.types.StructField[fields.length];
        for (int i = 0; i < fields.length; i++) {
            org.apache.spark.sql.types.StructField field = fields[i];
            org.apache.parquet.schema.Type type = group.containsField(field.name()) ? group.getType(field.name()) : null;
            org.apache.spark.sql.types.DataType dataType = field.dataType();
            if (type != null && !type.isPrimitive() && type.getLogicalTypeAnnotation() == null
                    && dataType instanceof StructType nested) {
                dataType = withFieldIds(nested, type.asGroupType());
            }
            org.apache.spark.sql.types.MetadataBuilder metadata =
                    new org.apache.spark.sql.types.MetadataBuilder().withMetadata(field.metadata());
            if (type != null && type.getId() != null) {
                metadata.putLong(FIELD_ID, type.getId().intValue());
            }
            out[i] = new org.apache.spark.sql.types.StructField(field.name(), dataType, field.nullable(),
                    metadata.build());
        }
        return new StructType(out);
    }

    /** StructField metadata key of a column's field id (Spark's own). */
    static final String FIELD_ID = "parquet.field.id";

    /**
     * The schema of {@code columns} as Spark's own catalogs make it: a column's DEFAULT becomes its
     * {@code CURRENT_DEFAULT} (the SQL written) and {@code EXISTS_DEFAULT} (the constant it folds to)
     * metadata, which Spark's INSERT and its Parquet reader use.
     */
    static StructType columnsToStruct(org.apache.spark.sql.connector.catalog.Column[] columns) {
        return org.apache.spark.sql.connector.catalog.CatalogV2Util.v2ColumnsToStructType(columns);
    }

    /**
     * A procedure's {@code MAP<STRING, STRING>} argument at {@code ordinal} (Catalyst's MapData) as an ordered
     * map, a null value as the text "null"; empty when the argument is NULL.
     */
    static Map<String, String> stringMap(InternalRow args, int ordinal) {
        Map<String, String> out = new java.util.LinkedHashMap<>();
        if (!args.isNullAt(ordinal)) {
            org.apache.spark.sql.catalyst.util.MapData map = args.getMap(ordinal);
            for (int i = 0; i < map.numElements(); i++) {
                Object value = map.valueArray().isNullAt(i) ? null : map.valueArray().getUTF8String(i);
                out.put(map.keyArray().getUTF8String(i).toString(), String.valueOf(value));
            }
        }
        return out;
    }
}
