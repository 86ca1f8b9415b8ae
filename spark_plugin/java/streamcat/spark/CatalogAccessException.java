package streamcat.spark;

import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;

import scala.Option;

/**
 * The catalog cannot be used as configured: the server refused who we are (401: no or wrong
 * credentials; 403: not permitted), or it cannot be reached or trusted (TLS).
 *
 * An AnalysisException with a SQLSTATE because that is what both front ends show as its bare
 * message: PySpark raises {@code pyspark.errors.AnalysisException} with this text, and spark-sql
 * prints a stack trace after the message unless the exception is a SparkThrowable whose SQLSTATE
 * is set and not of class XX (internal error). So a user sees the server's own words
 * ("authentication required: ..."), not a page of Java frames.
 */
final class CatalogAccessException extends AnalysisException {
    /** The server's answer (401, 403), or 0 when there was none (unreachable, TLS failed). */
    final int status;

    CatalogAccessException(int status, String message) {
        // No error class: Spark's catalogue of error conditions has none for these, and without one
        // Spark shows the message as it is.
        super(message, Option.empty(), Option.empty(), Option.empty(), Option.empty(),
                scala.collection.immutable.Map$.MODULE$.<String, String>empty(), new QueryContext[0]);
        this.status = status;
    }

    /** SQLSTATE 28000 (invalid authorization), 42501 (insufficient privilege) or 08001 (cannot connect). */
    @Override
    public String getSqlState() {
        return status == 401 ? "28000" : status == 403 ? "42501" : "08001";
    }

    /**
     * Throw {@code e} from a method that does not declare it. Java checks AnalysisException,
     * but Spark calls the catalog from Scala, which does not: every catalog method may throw it.
     */
    @SuppressWarnings("unchecked")
    static <E extends Throwable> RuntimeException raise(Throwable e) throws E {
        throw (E) e;
    }
}
