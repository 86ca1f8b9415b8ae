package streamcat.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

import java.util.Optional;

/**
 * The session extension ({@code spark.sql.extensions=streamcat.spark.StreamcatSqlExtensions}) that gives
 * Spark SQL the materialized-table statements: a parser that reads them ({@link MaterializedStatement}) as
 * the procedure calls that carry them out and hands every other statement to Spark's own parser unchanged.
 *
 * <p>The parser interface is Spark-internal (catalyst), which is why this class, like
 * {@link PythonSourceBridge}, is one of the shim's internal-API classes.
 */
public final class StreamcatSqlExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface delegate) {
                return new Parser(session, delegate);
            }
        });
        return BoxedUnit.UNIT;
    }

    /** Spark's parser, with the materialized-table statements read first. */
    static final class Parser implements ParserInterface {
        private final SparkSession session;
        private final ParserInterface delegate;

        Parser(SparkSession session, ParserInterface delegate) {
            this.session = session;
            this.delegate = delegate;
        }

        @Override
        public LogicalPlan parsePlan(String sql) throws ParseException {
            Optional<String> call = MaterializedStatement.rewrite(sql, new SessionNames(session));
            return delegate.parsePlan(call.orElse(sql));
        }

        /** Parameterized SQL ({@code spark.sql(text, args)}): the interface's default drops the parameters. */
        @Override
        public LogicalPlan parsePlanWithParameters(String sql, org.apache.spark.sql.catalyst.parser.ParameterContext
                context) throws ParseException {
            Optional<String> call = MaterializedStatement.rewrite(sql, new SessionNames(session));
            return delegate.parsePlanWithParameters(call.orElse(sql), context);
        }

        @Override
        public Expression parseExpression(String sql) throws ParseException {
            return delegate.parseExpression(sql);
        }

        @Override
        public TableIdentifier parseTableIdentifier(String sql) throws ParseException {
            return delegate.parseTableIdentifier(sql);
        }

        @Override
        public FunctionIdentifier parseFunctionIdentifier(String sql) throws ParseException {
            return delegate.parseFunctionIdentifier(sql);
        }

        @Override
        public Seq<String> parseMultipartIdentifier(String sql) throws ParseException {
            return delegate.parseMultipartIdentifier(sql);
        }

        @Override
        public LogicalPlan parseQuery(String sql) throws ParseException {
            return delegate.parseQuery(sql);
        }

        @Override
        public StructType parseRoutineParam(String sql) throws ParseException {
            return delegate.parseRoutineParam(sql);
        }

        @Override
        public SqlStatementSplitResult splitStatements(String sql) {
            return delegate.splitStatements(sql);
        }

        @Override
        public StructType parseTableSchema(String sql) throws ParseException {
            return delegate.parseTableSchema(sql);
        }

        @Override
        public DataType parseDataType(String sql) throws ParseException {
            return delegate.parseDataType(sql);
        }
    }

    /** The session's current catalog and namespace, and which of its catalogs are Streamcat's. */
    private record SessionNames(SparkSession session) implements MaterializedStatement.Session {
        @Override
        public String currentCatalog() {
            return session.catalog().currentCatalog();
        }

        @Override
        public String currentNamespace() {
            return session.catalog().currentDatabase();
        }

        @Override
        public boolean isStreamcat(String catalog) {
            return StreamcatCatalog.class.getName().equals(
                    session.conf().get("spark.sql.catalog." + catalog, ""));
        }
    }
}
