package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Average;
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
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Continuous (incremental) maintenance of a materialized table from its source's change feed
 * (docs/materialized-tables.md, "Refresh modes and what is incremental").
 *
 * <p>{@link #analyze} reads Spark's <em>analyzed</em> plan of the query (not its text) and decides whether
 * it is one of the shapes maintained incrementally: a chain of filters and projections over one Streamcat
 * table, optionally topped by one GROUP BY aggregate of SUM (integral or decimal), COUNT, MIN, MAX and AVG
 * (integral); anything else gets a reason for full refreshes. {@link #step} then turns the change feed of the source
 * between the cut the table reflects and the new pinned cut into the table's next content: the same chain
 * is replayed on the feed's rows, each carrying a sign (+1 insert and post-image, -1 delete and pre-image),
 * and the result is an append (projections, when the feed only adds rows) or the table's content at the
 * commit the step started from, merged with the per-group deltas (aggregates) or plus the arriving and minus
 * the leaving rows (projections). A grouped aggregate whose table is stored as an aggregation-engine table
 * keyed by its groups ({@link #layout}) gets only the changed groups' deltas, appended: the merge on read
 * adds them up. The caller commits it as ONE write that records the new cut, so a step is atomic and
 * exactly once like a full refresh.
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
        static final String AVG = "avg";
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

    /** What a step that wrote only the changed groups' deltas says it did (beside "incremental: "). */
    static final String DELTAS = " (changed groups)";

    /**
     * How a grouped aggregate's table is stored so that a step writes only the changed groups: a primary-key
     * table keyed by the GROUP BY columns ({@code key}) with {@code 'merge-engine' = 'aggregation'} and, per
     * output column, the function that adds a delta to it ({@code properties}: SUM and COUNT by sum, MIN by
     * min, MAX by max, AVG by avg, kept in hidden state columns; the COUNT(*) as {@code
     * 'aggregation.row-count-field'}, or without one the hidden {@code $rows}, so that a group whose rows all
     * left is no longer a row: {@link AggregationState}). Null when the query is no grouped aggregate, or a
     * group may be NULL (a key column never is: declare the column NOT NULL, or filter {@code WHERE x IS NOT
     * NULL}).
     */
    record Layout(List<String> key, Map<String, String> properties) {
        /** Whether a table of these properties and key is stored this way (else its steps rewrite it). */
        boolean storedBy(JsonNode tableProperties, List<String> tableKey) {
            if (!keyedBy(tableKey)) {
                return false;
            }
            for (Map.Entry<String, String> e : properties.entrySet()) {
                if (!e.getValue().equals(tableProperties.path(e.getKey()).asText(null))) {
                    return false;
                }
            }
            return true;
        }

        /** Whether {@code tableKey} is this layout's key (its column names' case aside). */
        boolean keyedBy(List<String> tableKey) {
            if (tableKey.size() != key.size()) {
                return false;
            }
            for (int i = 0; i < key.size(); i++) {
                if (!key.get(i).equalsIgnoreCase(tableKey.get(i))) {
                    return false;
                }
            }
            return true;
        }
    }

    /** The aggregation-engine layout of a grouped aggregate's table (see {@link Layout}), or null. */
    static Layout layout(Plan plan) {
        if (!plan.incremental() || plan.groups().isEmpty()) {
            return null;
        }
        List<Expression> notNull = new ArrayList<>();
        for (LogicalPlan node : plan.chain()) {
            if (node instanceof Filter f) {
                conjuncts(f.condition(), notNull);
            }
        }
        List<String> key = new ArrayList<>();
        for (int g = 0; g < plan.groups().size(); g++) {
            Expression group = plan.groups().get(g);
            boolean filtered = notNull.stream().anyMatch(e -> e.semanticEquals(group));
            if (group.nullable() && !filtered) {
                return null;
            }
            key.add(keyOutput(plan, g).name());
        }
        Map<String, String> properties = new LinkedHashMap<>();
        properties.put(AggregationState.MERGE_ENGINE, "aggregation");
        List<Output> outputs = plan.outputs();
        for (Output o : outputs) {
            String function = switch (o.kind()) {
                case Output.SUM, Output.COUNT -> "sum";
                case Output.MIN -> "min";
                case Output.MAX -> "max";
                case Output.AVG -> AggregationState.AVG;
                default -> null;
            };
            if (function != null) {
                properties.put("fields." + o.name() + ".aggregate-function", function);
            }
        }
        int count = groupCount(outputs);
        properties.put(AggregationState.ROW_COUNT_FIELD, count >= 0 ? outputs.get(count).name() : AggregationState.ROWS);
        return new Layout(key, properties);
    }

    /**
     * The output columns a query's rows are one per (the columns that show its GROUP BY expressions, when its
     * last step is a grouped aggregate that shows them all), or null: a table keyed by them and adding up what
     * is written per key holds this query's result after a full refresh.
     */
    static List<String> groupColumns(SparkSession spark, String query) {
        LogicalPlan analyzed = ((org.apache.spark.sql.classic.Dataset<Row>) spark.sql(query)).queryExecution()
                .analyzed();
        while (analyzed instanceof SubqueryAlias alias) {
            analyzed = alias.child();
        }
        if (!(analyzed instanceof Aggregate aggregate) || aggregate.groupingExpressions().isEmpty()) {
            return null;
        }
        List<String> columns = new ArrayList<>();
        for (Expression group : list(aggregate.groupingExpressions())) {
            String found = null;
            for (NamedExpression e : list(aggregate.aggregateExpressions())) {
                Expression value = e instanceof Alias alias ? alias.child() : (Expression) e;
                if (found == null && value.semanticEquals(group)) {
                    found = e.name();
                }
            }
            if (found == null) {
                return null;
            }
            columns.add(found);
        }
        return columns;
    }

    /** The expressions {@code x} of the conjuncts {@code x IS NOT NULL} of a filter's condition. */
    private static void conjuncts(Expression condition, List<Expression> notNull) {
        if (condition instanceof And and) {
            conjuncts(and.left(), notNull);
            conjuncts(and.right(), notNull);
        } else if (condition instanceof IsNotNull isNotNull) {
            notNull.add(isNotNull.child());
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
            (aggregate == null ? rows : summed(plan, feedContributions(plan, rows, relation.schema()))).schema();
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
        if (f instanceof Average avg) {
            if (!(avg.child().dataType() instanceof IntegralType)) {
                // its state is a double sum: exact for integers (as Spark's own AVG), order-dependent otherwise
                return new Output("AVG over " + avg.child().dataType().simpleString() + " (only AVG over integers "
                        + "comes to the same result in any order)", null, null, -1);
            }
            return new Output(name, Output.AVG, avg.child(), -1);
        }
        if (f instanceof Min min) {
            return new Output(name, Output.MIN, min.child(), -1);
        }
        if (f instanceof Max max) {
            return new Output(name, Output.MAX, max.child(), -1);
        }
        return new Output(f.prettyName().toUpperCase(Locale.ROOT) + " (maintained: SUM, COUNT, MIN, MAX, AVG)", null,
                null, -1);
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
                     StructType targetSchema, boolean addsOnly, boolean deltas) {
        Dataset<Row> rows = signedRows(spark, plan, sourceName, from, to);
        if (plan.groups().isEmpty()) {
            return projectionStep(spark, rows, target, base, targetSchema, addsOnly);
        }
        return aggregateStep(spark, plan, rows, target, base, targetSchema, addsOnly, deltas);
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

    /** The name of the column that carries output i's contribution ({@code part} "" or "nn"). */
    private static String part(String part, int i) {
        return "__streamcat_" + part + "v" + i;
    }

    private static String key(int group) {
        return "__streamcat_k" + group;
    }

    private static final String LEAVING = "__streamcat_leaving";
    /** A feed row's contribution to its group's row count, when no output column counts the rows. */
    private static final String ROWS = "__streamcat_rows";

    /** The type of the table's column {@code name} (its case aside), or {@code fallback}. */
    private static DataType typeOf(StructType target, String name, DataType fallback) {
        for (StructField f : target.fields()) {
            if (f.name().equalsIgnoreCase(name)) {
                return f.dataType();
            }
        }
        return fallback;
    }

    /**
     * What each feed row contributes to its group, in the shape the table's rows are brought to by
     * {@link #tableContributions}: the group's keys, then per output column i its contribution (COUNT: the
     * sign, or 0 for a NULL value; SUM and AVG: the signed value, and in {@code nn} the signed count of non-null
     * values; MIN/MAX: the value), the sign ({@code __streamcat_rows}) when no COUNT(*) counts the group's rows,
     * and whether the row leaves ({@code __streamcat_leaving}).
     */
    private static Dataset<Row> feedContributions(Plan plan, Dataset<Row> rows, StructType target) {
        List<Column> columns = groupKeys(plan, target);
        Column sign = col(SIGN);
        List<Output> outputs = plan.outputs();
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            if (o.kind().equals(Output.KEY)) {
                continue;
            }
            Column arg = column(o.argument());
            DataType type = typeOf(target, o.name(), o.argument().dataType());
            switch (o.kind()) {
                case Output.COUNT -> columns.add(functions.when(arg.isNull(), functions.lit(0L))
                        .otherwise(sign).cast(DataTypes.LongType).as(part("", i)));
                case Output.SUM, Output.AVG -> {
                    DataType summed = o.kind().equals(Output.AVG) ? DataTypes.DoubleType : type;
                    columns.add(functions.when(sign.gt(0), arg.cast(summed))
                            .otherwise(functions.negate(arg.cast(summed))).as(part("", i)));
                    columns.add(functions.when(arg.isNull(), functions.lit(0L)).otherwise(sign)
                            .cast(DataTypes.LongType).as(part("nn", i)));
                }
                default -> columns.add(arg.cast(type).as(part("", i)));
            }
        }
        if (groupCount(outputs) < 0) {
            columns.add(sign.cast(DataTypes.LongType).as(ROWS));
        }
        columns.add(functions.when(sign.lt(0), functions.lit(1L)).otherwise(functions.lit(0L)).as(LEAVING));
        return rows.select(columns.toArray(new Column[0]));
    }

    /** The query's GROUP BY expressions over the source's (or its feed's) rows, of the table's key types. */
    private static List<Column> groupKeys(Plan plan, StructType target) {
        List<Column> keys = new ArrayList<>();
        for (int g = 0; g < plan.groups().size(); g++) {
            keys.add(column(plan.groups().get(g)).cast(groupType(plan, g, target)).as(key(g)));
        }
        return keys;
    }

    /** The first output column that shows a group's key (analysis made sure there is one). */
    private static Output keyOutput(Plan plan, int group) {
        for (Output o : plan.outputs()) {
            if (o.kind().equals(Output.KEY) && o.group() == group) {
                return o;
            }
        }
        throw new IllegalStateException("GROUP BY " + plan.groups().get(group).sql() + " is no output column");
    }

    /** The type a group's key has in the table: that of the first output column that shows it. */
    private static DataType groupType(Plan plan, int group, StructType target) {
        Output o = keyOutput(plan, group);
        return typeOf(target, o.name(), o.argument().dataType());
    }

    /**
     * The table's rows as contributions of the {@link #feedContributions} shape: each group's current values
     * (a SUM's non-null count from the COUNT that tells it: {@code counters}), leaving nothing.
     */
    private static Dataset<Row> tableContributions(Plan plan, Dataset<Row> table, StructType target) {
        List<Output> outputs = plan.outputs();
        List<Column> columns = new ArrayList<>();
        for (int g = 0; g < plan.groups().size(); g++) {
            columns.add(col(keyOutput(plan, g).name()).cast(groupType(plan, g, target)).as(key(g)));
        }
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            if (o.kind().equals(Output.KEY)) {
                continue;
            }
            columns.add(col(o.name()).as(part("", i)));
            if (o.kind().equals(Output.SUM) || o.kind().equals(Output.AVG)) {
                int counter = sumCounter(outputs, o);
                // Unknown without a counter: only additions are applied then (see aggregateStep), and SUM over
                // the table's value and the added ones is NULL exactly when all of them are.
                columns.add((counter < 0 ? functions.lit(0L) : col(outputs.get(counter).name()))
                        .cast(DataTypes.LongType).as(part("nn", i)));
            }
        }
        if (groupCount(outputs) < 0) {
            columns.add(functions.lit(0L).as(ROWS));
        }
        columns.add(functions.lit(0L).as(LEAVING));
        return table.select(columns.toArray(new Column[0]));
    }

    /** Contributions summed per group (the same shape: one row per group). */
    private static Dataset<Row> summed(Plan plan, Dataset<Row> contributions) {
        List<Output> outputs = plan.outputs();
        List<Column> keys = new ArrayList<>();
        for (int g = 0; g < plan.groups().size(); g++) {
            keys.add(col(key(g)));
        }
        List<Column> values = new ArrayList<>();
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            switch (o.kind()) {
                case Output.KEY -> {
                    continue;
                }
                case Output.MIN -> values.add(functions.min(col(part("", i))).as(part("", i)));
                case Output.MAX -> values.add(functions.max(col(part("", i))).as(part("", i)));
                case Output.SUM, Output.AVG -> {
                    values.add(functions.sum(col(part("", i))).as(part("", i)));
                    values.add(functions.sum(col(part("nn", i))).as(part("nn", i)));
                }
                default -> values.add(functions.sum(col(part("", i))).as(part("", i)));
            }
        }
        if (groupCount(outputs) < 0) {
            values.add(functions.sum(col(ROWS)).as(ROWS));
        }
        values.add(functions.sum(col(LEAVING)).as(LEAVING));
        return contributions.groupBy(keys.toArray(new Column[0]))
                .agg(values.get(0), values.subList(1, values.size()).toArray(new Column[0]));
    }

    /**
     * A grouped aggregate: the table's groups at {@code base} and the feed's rows, as contributions of one
     * shape, summed per group in ONE aggregation (one shuffle; no join), groups whose COUNT(*) reaches 0
     * dropped. When the range may remove rows (not {@code addsOnly}) the feed's contributions are summed
     * first, once, to see whether any row leaves; then the step falls back when the table lacks what tells
     * the result exactly: MIN/MAX (a removed minimum cannot be replaced from the table), no COUNT of
     * never-null values (a group's emptiness), a SUM(x) over nullable x without COUNT(x) beside it (whether
     * the sum is NULL).
     *
     * <p>With {@code deltas} (the table is stored by {@link #layout}) the step is instead the feed's per-group
     * sums alone, appended: the aggregation engine adds each to its group's row (an AVG's to its hidden sum and
     * count), and a group whose row count reaches 0 is gone. Only when rows leave and a SUM of a nullable value
     * could become NULL (the engine would say 0) is the table rewritten as above; a rewrite cannot restate an
     * AVG's hidden state, so a query with one falls back to a full refresh then.
     */
    private static Step aggregateStep(SparkSession spark, Plan plan, Dataset<Row> rows, String target, long base,
                                      StructType targetSchema, boolean addsOnly, boolean deltas) {
        List<Output> outputs = plan.outputs();
        Dataset<Row> feed = feedContributions(plan, rows, targetSchema);
        int groupCount = groupCount(outputs);
        boolean leaving = false;
        if (!addsOnly) {
            feed = once(summed(plan, feed));
            Row leavingRow = feed.agg(functions.max(col(LEAVING))).first();
            leaving = !leavingRow.isNullAt(0) && leavingRow.getLong(0) > 0;
        }
        if (leaving && has(outputs, Output.MIN, Output.MAX)) {
            return Step.fallback("the sources removed rows, and MIN/MAX cannot be maintained through removals");
        }
        if (deltas && !(leaving && nullableSum(outputs))) {
            return new Step(conform(deltaRows(plan, addsOnly ? summed(plan, feed) : feed), targetSchema), true, null);
        }
        if (has(outputs, Output.AVG)) {
            return Step.fallback(deltas ? "the sources removed rows, and a SUM of a nullable value could become NULL "
                    + "(which a rewrite with AVG cannot restate)" : "AVG is maintained only in a table keyed by the "
                    + "query's GROUP BY columns, which must never be NULL");
        }
        if (leaving) {
            String why = whyNotThroughRemovals(outputs, groupCount);
            if (why != null) {
                return Step.fallback(why);
            }
        }
        Dataset<Row> all = summed(plan, tableContributions(plan, old(spark, target, base), targetSchema)
                .unionAll(feed));
        List<Column> next = new ArrayList<>();
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            Column value = switch (o.kind()) {
                case Output.KEY -> col(key(o.group()));
                // NULL when no non-null value is left; SUM over the table's value and the added ones when
                // the count is unknown (additions only: see tableContributions).
                case Output.SUM -> sumCounter(outputs, o) < 0 ? col(part("", i))
                        : functions.when(col(part("nn", i)).equalTo(0), functions.lit(null)).otherwise(col(part("", i)));
                default -> col(part("", i));
            };
            next.add(value.as(o.name()));
        }
        Dataset<Row> merged = all.select(next.toArray(new Column[0]));
        if (groupCount >= 0) {
            merged = merged.filter(col(outputs.get(groupCount).name()).gt(0));
        }
        return new Step(conform(merged, targetSchema), false, null);
    }

    /**
     * The changed groups' rows of a table stored by {@link #layout}: per group, its key, each COUNT's and SUM's
     * signed delta (a SUM of only NULLs stays NULL: the engine skips it), each MIN's and MAX's over the
     * arriving values (removals never get here), each AVG's in its hidden sum and count (the AVG column itself
     * NULL: a read divides the state), and the hidden row count's when no COUNT(*) counts the rows.
     */
    private static Dataset<Row> deltaRows(Plan plan, Dataset<Row> summed) {
        List<Output> outputs = plan.outputs();
        List<Column> next = new ArrayList<>();
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            if (o.kind().equals(Output.AVG)) {
                next.add(functions.lit(null).cast(DataTypes.DoubleType).as(o.name()));
                next.add(functions.coalesce(col(part("", i)), functions.lit(0.0)).as(AggregationState.sum(o.name())));
                next.add(col(part("nn", i)).as(AggregationState.count(o.name())));
            } else {
                next.add((o.kind().equals(Output.KEY) ? col(key(o.group())) : col(part("", i))).as(o.name()));
            }
        }
        if (groupCount(outputs) < 0) {
            next.add(col(ROWS).as(AggregationState.ROWS));
        }
        return summed.select(next.toArray(new Column[0]));
    }

    /**
     * The whole content of a table stored by {@link #layout}, hidden state included: the source (which the
     * caller pins at its cut) through the query's filters and projections, aggregated per group into the
     * columns a step's deltas have ({@link #deltaRows}: an AVG as its sum and count, the row count when no
     * COUNT(*) shows it). What a full refresh of such a table writes, so that the steps after it add to the same
     * state; one aggregation, as the query's own.
     */
    static Dataset<Row> whole(SparkSession spark, Plan plan, String sourceName, StructType target) {
        Dataset<Row> rows = replay(plan, spark.table(sourceName).withColumn(SIGN, functions.lit(1)));
        List<Column> keys = groupKeys(plan, target);
        List<Output> outputs = plan.outputs();
        List<Column> values = new ArrayList<>();
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            if (o.kind().equals(Output.KEY)) {
                continue;
            }
            Column arg = column(o.argument());
            DataType type = typeOf(target, o.name(), o.argument().dataType());
            switch (o.kind()) {
                case Output.COUNT -> values.add(functions.count(arg).as(part("", i)));
                case Output.SUM -> values.add(functions.sum(arg.cast(type)).as(part("", i)));
                case Output.AVG -> {
                    values.add(functions.sum(arg.cast(DataTypes.DoubleType)).as(part("", i)));
                    values.add(functions.count(arg).as(part("nn", i)));
                }
                case Output.MIN -> values.add(functions.min(arg.cast(type)).as(part("", i)));
                default -> values.add(functions.max(arg.cast(type)).as(part("", i)));
            }
        }
        if (groupCount(outputs) < 0) {
            values.add(functions.count(functions.lit(1)).as(ROWS));
        }
        Dataset<Row> grouped = rows.groupBy(keys.toArray(new Column[0]))
                .agg(values.get(0), values.subList(1, values.size()).toArray(new Column[0]));
        return conform(deltaRows(plan, grouped), target);
    }

    /** Whether an output column is one of these kinds. */
    private static boolean has(List<Output> outputs, String... kinds) {
        return outputs.stream().anyMatch(o -> List.of(kinds).contains(o.kind()));
    }

    /** Whether a SUM adds up a nullable value (its result may turn NULL when rows leave). */
    private static boolean nullableSum(List<Output> outputs) {
        return outputs.stream().anyMatch(o -> o.kind().equals(Output.SUM) && o.argument().nullable());
    }

    /** Which output column, if any, counts the rows of each group (COUNT(*), COUNT of a never-null value). */
    private static int groupCount(List<Output> outputs) {
        for (int i = 0; i < outputs.size(); i++) {
            if (outputs.get(i).kind().equals(Output.COUNT) && !outputs.get(i).argument().nullable()) {
                return i;
            }
        }
        return -1;
    }

    /** Why a rewrite cannot follow the removal of rows (MIN and MAX are refused before), or null when it can. */
    private static String whyNotThroughRemovals(List<Output> outputs, int groupCount) {
        if (groupCount < 0) {
            return "the sources removed rows, and no COUNT(*) in the query tells when a group becomes empty";
        }
        for (Output o : outputs) {
            if (o.kind().equals(Output.SUM) && sumCounter(outputs, o) < 0) {
                return "the sources removed rows, and SUM(" + o.argument().sql() + ") has no COUNT("
                        + o.argument().sql() + ") beside it to tell when it becomes NULL";
            }
        }
        return null;
    }

    /**
     * The output COUNT that tells how many non-null values a SUM adds up: COUNT(x) of its x, or for a
     * never-null x the group's COUNT(*); -1 when there is none.
     */
    private static int sumCounter(List<Output> outputs, Output sum) {
        return sum.argument().nullable() ? nonNullCount(outputs, sum.argument()) : groupCount(outputs);
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
}
