package streamcat.spark;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Continuous (incremental) maintenance of a materialized table from its source's change feed
 * (docs/materialized-tables.md, "Refresh modes and what is incremental").
 *
 * <p>{@link #analyze} reads Spark's <em>analyzed</em> plan of the query (not its text) and decides whether
 * it is one of the shapes maintained incrementally: a chain of filters and projections over one Streamcat
 * table, optionally topped by one GROUP BY aggregate of SUM (integral or decimal), COUNT, MIN and MAX;
 * anything else gets a reason for full refreshes. {@link #step} then turns the change feed of the source
 * between the cut the table reflects and the new pinned cut into the table's next content: the same chain
 * is replayed on the feed's rows, each carrying a sign (+1 insert and post-image, -1 delete and pre-image),
 * and the result is an append (projections, when the feed only adds rows) or the table's content at the
 * commit the step started from, merged with the per-group deltas (aggregates) or plus the arriving and minus
 * the leaving rows (projections). The caller commits it as ONE write that
 * records the new cut, so a step is atomic and exactly once like a full refresh.
 *
 * <p>This is the one class of the materialized-table code that uses Catalyst's classes (plan nodes,
 * expressions): they change between Spark releases, so they stay here.
 */
final class IncrementalRefresh {
    /** The sign of a feed row: +1 adds the row to the query's input, -1 removes it. */
    private static final String SIGN = "__streamcat_sign";
    private static final String OLD = "__streamcat_old";
    private static final scala.collection.immutable.Seq<String> NO_QUALIFIER =
            CollectionConverters.asScala(List.<String>of()).toList();

    private IncrementalRefresh() {
    }

    /** One output column of a maintained aggregate: what it is and, for SUM/COUNT/MIN/MAX, over what. */
    record Output(String name, String kind, Expression argument, int group) {
        static final String KEY = "key";
        static final String COUNT = "count";
        static final String SUM = "sum";
        static final String MIN = "min";
        static final String MAX = "max";
    }

    /**
     * How the query is maintained in continuous mode: {@code kind} ("grouped aggregate", "projection") when
     * incrementally, else {@code reason} says why the table gets full refreshes.
     */
    record Plan(String kind, String reason, String source, List<LogicalPlan> chain, List<Expression> groups,
                List<Output> outputs) {
        boolean incremental() {
            return kind != null;
        }

        /** What DESCRIBE and the commit say: "incremental: grouped aggregate", "full refreshes: a join". */
        String describe() {
            return incremental() ? "incremental: " + kind : "full refreshes: " + reason;
        }

        static Plan full(String reason) {
            return new Plan(null, reason, null, List.of(), List.of(), List.of());
        }
    }

    /**
     * What one step came to: {@code rows} to append ({@code append}) or to overwrite the table with, or
     * {@code fallback}, the reason this step must be a full refresh.
     */
    record Step(Dataset<Row> rows, boolean append, String fallback) {
        static Step fallback(String reason) {
            return new Step(null, false, reason);
        }
    }

    /**
     * The rows computed once, on this session, for the decision and the write that follows. Not
     * {@code persist()}: a cached plan runs in a clone of the session, which does not know the Python data
     * source the feed is read through.
     */
    private static Dataset<Row> once(Dataset<Row> rows) {
        return rows.localCheckpoint(true);
    }

    // -- analysis --------------------------------------------------------------------------------------

    private static <T> List<T> list(scala.collection.Seq<T> seq) {
        return CollectionConverters.asJava(seq);
    }

    /** Why an expression of the query cannot be evaluated on the change feed's rows, or null. */
    private static String unfit(Expression e) {
        if (!e.deterministic()) {
            return "a non-deterministic expression (" + e.sql() + ")";
        }
        if (SubqueryExpression.hasSubquery(e)) {
            return "a subquery";
        }
        return null;
    }

    /** The name of what a plan node does, for a reason given to users. */
    private static String what(LogicalPlan node) {
        String name = node.nodeName();
        return switch (name) {
            case "Join" -> "a join";
            case "Distinct", "Deduplicate" -> "DISTINCT";
            case "Window" -> "a window function";
            case "Union" -> "UNION";
            case "Sort" -> "ORDER BY";
            case "GlobalLimit", "LocalLimit", "Offset" -> "LIMIT/OFFSET";
            case "Aggregate" -> "an aggregate that is not the query's last step (HAVING, or an expression over "
                    + "aggregates)";
            case "View" -> "a view";
            case "Generate" -> "a generator (explode)";
            default -> "a " + name + " step";
        };
    }

    /**
     * How the query (analyzed on this session: the caller sets the definition's catalog and namespace) is
     * maintained; {@code sources} are the Streamcat tables it reads, as "scope.table".
     */
    static Plan analyze(SparkSession spark, String catalog, String query, List<String> sources) {
        if (sources.size() != 1) {
            return Plan.full(sources.isEmpty() ? "the query reads no table of this catalog"
                    : "the query reads " + sources.size() + " tables");
        }
        LogicalPlan analyzed = ((org.apache.spark.sql.classic.Dataset<Row>) spark.sql(query)).queryExecution()
                .analyzed();
        try {
            return analyze(spark, catalog, analyzed, sources.get(0));
        } catch (Exception e) {
            // A plan shape this walk did not foresee must not stop the table's (full) refreshes.
            return Plan.full("the query's plan could not be examined (" + e + ")");
        }
    }

    private static Plan analyze(SparkSession spark, String catalog, LogicalPlan node, String source) {
        Aggregate aggregate = null;
        if (node instanceof Aggregate a) {
            aggregate = a;
            node = a.child();
        }
        List<LogicalPlan> chain = new ArrayList<>();
        while (true) {
            if (node instanceof SubqueryAlias s) {
                node = s.child();
            } else if (node instanceof Filter f) {
                String why = unfit(f.condition());
                if (why != null) {
                    return Plan.full(why);
                }
                chain.add(0, f);
                node = f.child();
            } else if (node instanceof Project p) {
                for (NamedExpression e : list(p.projectList())) {
                    String why = unfit((Expression) e);
                    if (why != null) {
                        return Plan.full(why);
                    }
                }
                chain.add(0, p);
                node = p.child();
            } else {
                break;
            }
        }
        if (!(node instanceof DataSourceV2Relation relation) || !(relation.table() instanceof StreamcatTable)) {
            return Plan.full(what(node));
        }
        if (relation.catalog().isEmpty() || !catalog.equals(relation.catalog().get().name())
                || relation.identifier().isEmpty()) {
            return Plan.full("the query reads a table of another catalog");
        }
        Identifier ident = relation.identifier().get();
        if (ident.namespace().length != 1 || !source.equals(ident.namespace()[0] + "." + ident.name())) {
            return Plan.full("the query reads " + String.join(".", ident.namespace()) + "." + ident.name()
                    + " beside " + source);
        }
        Plan plan = aggregate == null ? new Plan("projection", null, source, chain, List.of(), List.of())
                : aggregatePlan(aggregate, source, chain);
        if (!plan.incremental()) {
            return plan;
        }
        // The step restates the query's expressions over the feed's rows (by their SQL): make sure now, on no
        // rows, that Spark takes them back (a lambda's variables, say, do not round-trip). Exception, not
        // RuntimeException: Spark's AnalysisException is a checked exception that Scala throws undeclared.
        try {
            Dataset<Row> none = spark.createDataFrame(List.of(),
                    relation.schema().add("_change_type", DataTypes.StringType));
            Dataset<Row> rows = replay(plan, signed(none));
            (aggregate == null ? rows : delta(plan, rows)).schema();
        } catch (Exception e) {
            String message = e.getMessage() == null ? e.toString() : e.getMessage().split("\n")[0];
            return Plan.full("an expression that cannot be evaluated on the change feed (" + message + ")");
        }
        return plan;
    }

    private static Plan aggregatePlan(Aggregate aggregate, String source, List<LogicalPlan> chain) {
        List<Expression> groups = list(aggregate.groupingExpressions());
        if (groups.isEmpty()) {
            return Plan.full("an aggregate without GROUP BY");
        }
        for (Expression g : groups) {
            String why = unfit(g);
            if (why != null) {
                return Plan.full(why);
            }
        }
        List<Output> outputs = new ArrayList<>();
        boolean[] grouped = new boolean[groups.size()];
        for (NamedExpression e : list(aggregate.aggregateExpressions())) {
            Expression value = e instanceof Alias alias ? alias.child() : (Expression) e;
            if (value instanceof AggregateExpression ae) {
                Output output = aggregateOutput(e.name(), ae);
                if (output.kind() == null) {
                    return Plan.full(output.name());
                }
                outputs.add(output);
                continue;
            }
            int group = -1;
            for (int i = 0; i < groups.size() && group < 0; i++) {
                if (value.semanticEquals(groups.get(i))) {
                    group = i;
                }
            }
            if (group < 0) {
                return Plan.full("output column " + e.name() + " is neither a GROUP BY column nor one aggregate");
            }
            grouped[group] = true;
            outputs.add(new Output(e.name(), Output.KEY, value, group));
        }
        for (int i = 0; i < groups.size(); i++) {
            if (!grouped[i]) {
                return Plan.full("GROUP BY " + groups.get(i).sql() + " is not an output column (the groups must be "
                        + "found in the table)");
            }
        }
        return new Plan("grouped aggregate", null, source, chain, groups, outputs);
    }

    /** An aggregate output column, or one whose {@code kind} is null and whose {@code name} is the reason. */
    private static Output aggregateOutput(String name, AggregateExpression ae) {
        AggregateFunction f = ae.aggregateFunction();
        String reason = null;
        if (ae.isDistinct()) {
            reason = "a DISTINCT aggregate";
        } else if (ae.filter().isDefined()) {
            reason = "an aggregate with FILTER";
        }
        for (Expression child : list(f.children())) {
            if (reason == null) {
                reason = unfit(child);
            }
        }
        if (reason != null) {
            return new Output(reason, null, null, -1);
        }
        if (f instanceof Sum sum) {
            if (!(sum.child().dataType() instanceof IntegralType) && !(sum.child().dataType() instanceof DecimalType)) {
                return new Output("SUM over " + sum.child().dataType().simpleString() + " (only SUM over integers and "
                        + "decimals adds up to the same result in any order)", null, null, -1);
            }
            return new Output(name, Output.SUM, sum.child(), -1);
        }
        if (f instanceof Count count && count.children().size() == 1) {
            return new Output(name, Output.COUNT, count.children().head(), -1);
        }
        if (f instanceof Min min) {
            return new Output(name, Output.MIN, min.child(), -1);
        }
        if (f instanceof Max max) {
            return new Output(name, Output.MAX, max.child(), -1);
        }
        return new Output(f.prettyName().toUpperCase(Locale.ROOT) + " (maintained: SUM, COUNT, MIN, MAX)", null, null,
                -1);
    }

    // -- one step --------------------------------------------------------------------------------------

    /** Drops the qualifiers of column references, so that the expression reads a feed row's columns by name. */
    private static final class Unqualified extends AbstractPartialFunction<Expression, Expression> {
        @Override
        public boolean isDefinedAt(Expression e) {
            return e instanceof AttributeReference;
        }

        @Override
        public Expression apply(Expression e) {
            return ((AttributeReference) e).withQualifier(NO_QUALIFIER);
        }
    }

    /** The query's expression as a Column over the feed's rows (by the analyzed expression's own SQL). */
    private static Column column(Expression e) {
        Expression plain = e.transform(new Unqualified());
        if (plain instanceof Attribute a) {
            return functions.col("`" + a.name().replace("`", "``") + "`");
        }
        return functions.expr(plain.sql());
    }

    private static Column col(String name) {
        return functions.col("`" + name.replace("`", "``") + "`");
    }

    /** Feed rows with their sign. */
    private static Dataset<Row> signed(Dataset<Row> feed) {
        return feed.withColumn(SIGN, functions.when(functions.col("_change_type").isin("insert", "update_postimage"),
                functions.lit(1)).otherwise(functions.lit(-1)));
    }

    /** The change feed of (from, to] with each row's sign, through the query's filters and projections. */
    private static Dataset<Row> signedRows(SparkSession spark, Plan plan, String sourceName, long from, long to) {
        return replay(plan, signed(spark.read().option("startingVersion", Long.toString(from + 1))
                .option("endingVersion", Long.toString(to)).changes(sourceName)));
    }

    /** Signed feed rows through the query's filters and projections (the sign carried along). */
    private static Dataset<Row> replay(Plan plan, Dataset<Row> rows) {
        for (LogicalPlan node : plan.chain()) {
            if (node instanceof Filter f) {
                rows = rows.filter(column(f.condition()));
            } else {
                List<Column> columns = new ArrayList<>();
                for (NamedExpression e : list(((Project) node).projectList())) {
                    Expression value = e instanceof Alias alias ? alias.child() : (Expression) e;
                    columns.add(column(value).as(e.name()));
                }
                columns.add(col(SIGN));
                rows = rows.select(columns.toArray(new Column[0]));
            }
        }
        return rows;
    }

    /** The table's columns, in its order and of its types, from columns of the same names. */
    private static Dataset<Row> conform(Dataset<Row> rows, StructType target) {
        List<Column> columns = new ArrayList<>();
        for (StructField f : target.fields()) {
            columns.add(col(f.name()).cast(f.dataType()).as(f.name()));
        }
        return rows.select(columns.toArray(new Column[0]));
    }

    /**
     * The next content of the table from the changes of the source in (from, to]; {@code target} names the
     * table, read at {@code base} (the commit the step started from, which its write is fenced on).
     * {@code addsOnly}: the catalog's description of those commits already shows that they only add rows
     * (appends to an append table), so the feed need not be looked at before the write is planned.
     */
    static Step step(SparkSession spark, Plan plan, String sourceName, long from, long to, String target, long base,
                     StructType targetSchema, boolean addsOnly) {
        Dataset<Row> rows = signedRows(spark, plan, sourceName, from, to);
        if (plan.groups().isEmpty()) {
            return projectionStep(spark, rows, target, base, targetSchema, addsOnly);
        }
        return aggregateStep(spark, plan, rows, target, base, targetSchema, addsOnly);
    }

    private static Dataset<Row> old(SparkSession spark, String target, long base) {
        return spark.sql("SELECT * FROM " + target + " VERSION AS OF " + base);
    }

    /**
     * Filters and projections: rows that only arrive are appended; when some leave, the table's rows at
     * {@code base} plus the arriving rows minus the leaving ones, as multisets (so no key is needed, and a
     * row inserted and updated within the range counts once).
     */
    private static Step projectionStep(SparkSession spark, Dataset<Row> rows, String target, long base,
                                       StructType targetSchema, boolean addsOnly) {
        if (addsOnly) {
            return new Step(conform(rows, targetSchema), true, null);
        }
        Dataset<Row> kept = once(rows);
        boolean leaving = !kept.filter(col(SIGN).lt(0)).isEmpty();
        Dataset<Row> arriving = conform(kept.filter(col(SIGN).gt(0)), targetSchema);
        if (!leaving) {
            return new Step(arriving, true, null);
        }
        Dataset<Row> leavingRows = conform(kept.filter(col(SIGN).lt(0)), targetSchema);
        Dataset<Row> next = conform(old(spark, target, base), targetSchema).unionAll(arriving).exceptAll(leavingRows);
        return new Step(next, false, null);
    }

    /**
     * Per group of the feed's rows: how many rows leave ({@code __streamcat_leaving}) and, per output column i,
     * the signed COUNT, the SUM of signed values with the signed count of its non-null values, or the MIN/MAX.
     */
    private static Dataset<Row> delta(Plan plan, Dataset<Row> rows) {
        List<Output> outputs = plan.outputs();
        List<Column> keys = new ArrayList<>();
        for (int i = 0; i < plan.groups().size(); i++) {
            keys.add(column(plan.groups().get(i)).as("__streamcat_k" + i));
        }
        Column sign = col(SIGN);
        List<Column> deltas = new ArrayList<>();
        deltas.add(functions.sum(functions.when(sign.lt(0), functions.lit(1)).otherwise(functions.lit(0)))
                .as("__streamcat_leaving"));
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            if (o.kind().equals(Output.KEY)) {
                continue;
            }
            Column arg = column(o.argument());
            switch (o.kind()) {
                case Output.COUNT -> deltas.add(functions.sum(functions.when(arg.isNull(), functions.lit(0))
                        .otherwise(sign)).as("__streamcat_d" + i));
                case Output.SUM -> {
                    deltas.add(functions.sum(functions.when(sign.gt(0), arg).otherwise(functions.negate(arg)))
                            .as("__streamcat_d" + i));
                    deltas.add(functions.sum(functions.when(arg.isNull(), functions.lit(0)).otherwise(sign))
                            .as("__streamcat_nn" + i));
                }
                case Output.MIN -> deltas.add(functions.min(arg).as("__streamcat_d" + i));
                default -> deltas.add(functions.max(arg).as("__streamcat_d" + i));
            }
        }
        return rows.groupBy(keys.toArray(new Column[0]))
                .agg(deltas.get(0), deltas.subList(1, deltas.size()).toArray(new Column[0]));
    }

    /**
     * A grouped aggregate: the per-group deltas of the feed (SUM of signed values, COUNT of signed rows)
     * merged with the table's groups at {@code base} by the group key (null-safe), groups whose COUNT(*)
     * reaches 0 dropped. Falls back when the range removes rows and the table lacks what tells the result
     * exactly: MIN/MAX (a removed minimum cannot be replaced from the table), no COUNT of never-null values
     * (a group's emptiness), a SUM(x) over nullable x without COUNT(x) beside it (whether the sum is NULL).
     */
    private static Step aggregateStep(SparkSession spark, Plan plan, Dataset<Row> rows, String target, long base,
                                      StructType targetSchema, boolean addsOnly) {
        List<Output> outputs = plan.outputs();
        Dataset<Row> delta = delta(plan, rows);
        boolean leaving = false;
        if (!addsOnly) {
            delta = once(delta);
            Row leavingRow = delta.agg(functions.max(col("__streamcat_leaving"))).first();
            leaving = !leavingRow.isNullAt(0) && leavingRow.getLong(0) > 0;
        }

        // Which output column, if any, counts the rows of each group (COUNT(*), COUNT of a never-null value).
        int groupCount = -1;
        for (int i = 0; i < outputs.size() && groupCount < 0; i++) {
            if (outputs.get(i).kind().equals(Output.COUNT) && !outputs.get(i).argument().nullable()) {
                groupCount = i;
            }
        }
        if (leaving) {
            String why = null;
            if (groupCount < 0) {
                why = "the sources removed rows, and no COUNT(*) in the query tells when a group becomes empty";
            }
            for (Output o : outputs) {
                if (why == null && (o.kind().equals(Output.MIN) || o.kind().equals(Output.MAX))) {
                    why = "the sources removed rows, and MIN/MAX cannot be maintained through removals";
                }
                if (why == null && o.kind().equals(Output.SUM) && o.argument().nullable()
                        && nonNullCount(outputs, o.argument()) < 0) {
                    why = "the sources removed rows, and SUM(" + o.argument().sql() + ") has no COUNT("
                            + o.argument().sql() + ") beside it to tell when it becomes NULL";
                }
            }
            if (why != null) {
                return Step.fallback(why);
            }
        }

        Dataset<Row> current = old(spark, target, base).withColumn(OLD, functions.lit(true));
        Column on = null;
        for (Output o : outputs) {
            if (o.kind().equals(Output.KEY)) {
                Column same = col(o.name()).eqNullSafe(col("__streamcat_k" + o.group()));
                on = on == null ? same : on.and(same);
            }
        }
        Dataset<Row> joined = current.join(delta, on, "full_outer");
        Column wasThere = col(OLD).isNotNull();
        List<Column> next = new ArrayList<>();
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            Column before = col(o.name());
            Column d = col("__streamcat_d" + i);
            Column value = switch (o.kind()) {
                case Output.KEY -> functions.when(wasThere, before).otherwise(col("__streamcat_k" + o.group()));
                case Output.COUNT -> functions.coalesce(before, functions.lit(0L))
                        .plus(functions.coalesce(d, functions.lit(0L)));
                case Output.MIN -> functions.least(before, d);
                case Output.MAX -> functions.greatest(before, d);
                default -> sumValue(outputs, o, i, leaving, groupCount);
            };
            next.add(value.as(o.name()));
        }
        Dataset<Row> merged = joined.select(next.toArray(new Column[0]));
        if (groupCount >= 0) {
            merged = merged.filter(col(outputs.get(groupCount).name()).gt(0));
        }
        return new Step(conform(merged, targetSchema), false, null);
    }

    /** The index of an output COUNT(x) of the same x (whether a SUM(x) is NULL follows from it), or -1. */
    private static int nonNullCount(List<Output> outputs, Expression argument) {
        for (int i = 0; i < outputs.size(); i++) {
            if (outputs.get(i).kind().equals(Output.COUNT) && outputs.get(i).argument().semanticEquals(argument)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * A SUM's next value. With additions only: the delta's sum added, a NULL sum (all values NULL so far)
     * replaced by it, and kept when the delta had no value. With removals: NULL when no non-null value is
     * left (the old COUNT(x) plus the delta's signed count of non-null x), else old plus delta.
     */
    private static Column sumValue(List<Output> outputs, Output o, int i, boolean leaving, int groupCount) {
        Column before = col(o.name());
        Column d = col("__streamcat_d" + i);
        Column nn = functions.coalesce(col("__streamcat_nn" + i), functions.lit(0L));
        if (!leaving) {
            return functions.when(nn.equalTo(0), before).when(before.isNull(), d).otherwise(before.plus(d));
        }
        int counter = o.argument().nullable() ? nonNullCount(outputs, o.argument()) : groupCount;
        Column left = functions.coalesce(col(outputs.get(counter).name()), functions.lit(0L))
                .plus(functions.coalesce(col("__streamcat_d" + counter), functions.lit(0L)));
        return functions.when(left.equalTo(0), functions.lit(null).cast(o.argument().dataType()))
                .otherwise(functions.coalesce(before, functions.lit(0)).plus(functions.coalesce(d, functions.lit(0))));
    }
}
