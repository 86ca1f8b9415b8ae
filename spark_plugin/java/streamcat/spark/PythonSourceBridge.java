package streamcat.spark;

import org.apache.spark.api.python.PythonFunction;
import org.apache.spark.api.python.PythonUtils$;
import org.apache.spark.api.python.SimplePythonFunction;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.DataSourceManager;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * Every use of Spark-internal classes lives here: Spark's Python data source machinery
 * (PythonDataSourceV2 and its scan and write builders), which change between releases.
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
}
