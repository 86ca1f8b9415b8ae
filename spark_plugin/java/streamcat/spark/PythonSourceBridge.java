package streamcat.spark;

import org.apache.spark.TaskContext;
import org.apache.spark.api.python.PythonFunction;
import org.apache.spark.api.python.PythonUtils$;
import org.apache.spark.api.python.SimplePythonFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.DataSourceManager;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter;
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
import java.util.concurrent.TimeUnit;

import scala.Option;
import scala.collection.immutable.Map$;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * Every use of Spark-internal classes lives here: Spark's Python data source machinery
 * (PythonDataSourceV2 and its scan and write builders) and Spark's own Parquet scan
 * (ParquetScanBuilder over an InMemoryFileIndex fed by a FileStatusCache of the known files,
 * ParquetToSparkSchemaConverter), which change
 * between releases. No other class of the shim touches an internal class; {@link NativeScan}
 * decides when the Parquet scan may be used and calls {@link #parquetScan} / {@link #parquetSchema}.
 *
 * The table data goes through the Python data source {@code pyspark_streamcat.DefaultSource}.
 * Spark discovers it by itself when the module is a plain top-level module of the workers'
 * Python; when it was not discovered (an editable install, whose import hook pkgutil cannot
 * list, or a {@code python3} on PATH that lacks the project), it is registered here by
 * reference: a pickle of the class that the Python worker imports, run by the interpreter that
 * {@code spark.pyspark.driver.python} or {@code spark.pyspark.python} names (Spark's own default
 * for data sources is the PYSPARK_PYTHON environment variable of the driver, or python3).
 */
final class PythonSourceBridge {
    /** The name the Python data source answers to ({@code DefaultSource.name()}). */
    static final String SHORT_NAME = "streamcat";

    /** {@code pickle.dumps(pyspark_streamcat.DefaultSource, protocol=2)}: the class by reference. */
    private static final byte[] PICKLED_CLASS =
            "\u0080\u0002cpyspark_streamcat\nDefaultSource\nq\u0000.".getBytes(StandardCharsets.ISO_8859_1);

    private PythonSourceBridge() {
    }

    /** Make sure the session knows the Python data source; register it by reference if needed. */
    static synchronized void ensureRegistered() {
        SparkSession session = SparkSession.active();
        DataSourceManager manager = session.sessionState().dataSourceManager();
        if (manager.dataSourceExists(SHORT_NAME)) {
            return;
        }
        SimplePythonFunction function = PythonUtils$.MODULE$.createPythonFunction(PICKLED_CLASS);
        String python = session.sparkContext().getConf().get("spark.pyspark.driver.python",
                session.sparkContext().getConf().get("spark.pyspark.python", null));
        PythonFunction chosen = function;
        if (python != null && !python.equals(function.pythonExec())) {
            chosen = new SimplePythonFunction(PICKLED_CLASS, function.envVars(), function.pythonIncludes(), python,
                    pythonVersion(python), function.broadcastVars(), function.accumulator());
        }
        manager.registerDataSource(SHORT_NAME, UserDefinedPythonDataSource.apply(chosen));
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
        ensureRegistered();
        PythonDataSourceV2 source = new PythonDataSourceV2();
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
     * never reach the plan or the Hadoop configuration).
     */
    static Scan parquetScan(List<FileStatus> files, StructType dataSchema, StructType required, Filter[] filters) {
        SparkSession session = SparkSession.active();
        List<Path> paths = new ArrayList<>();
        Map<Path, FileStatus[]> known = new HashMap<>();
        for (FileStatus status : files) {
            paths.add(status.getPath());
            known.put(status.getPath(), new FileStatus[] {status});
        }
        FileStatusCache statuses = new FileStatusCache() {
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
        InMemoryFileIndex index = new InMemoryFileIndex(session, CollectionConverters.asScala(paths).toList(),
                Map$.MODULE$.empty(), Option.apply(dataSchema), statuses, Option.apply(PartitionSpec.emptySpec()),
                Option.empty());
        ParquetScanBuilder builder = new ParquetScanBuilder(session, index, dataSchema, dataSchema,
                CaseInsensitiveStringMap.empty());
        builder.pruneColumns(required);
        builder.pushedDataFilters_$eq(builder.pushDataFilters(filters));
        return builder.build();
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
}
