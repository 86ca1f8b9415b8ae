package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Materialized tables (docs/materialized-tables.md): the procedures that create, refresh, suspend, resume
 * and alter them, and the two things the catalog does for them while a query is analyzed on this thread:
 * recording which of its tables the query reads (creation) and pinning them at chosen cuts (refresh).
 *
 * <p>A refresh holds the table's lease on the server (renewed while it runs), reads every source at the
 * cut it had when the lease was taken ({@code VERSION AS OF}, through the pins), and writes the result as
 * ONE overwrite commit that records those cuts and is made only if the table is still at the commit the
 * refresh started from: a refresher that lost its lease, or died, leaves no partial result. A continuous
 * table whose query allows it is refreshed by an incremental step instead ({@link IncrementalRefresh}): the
 * source's changes since the recorded cut, applied to the table's content, in one commit of the same kind
 * of guarantees (an append or an overwrite, recording the new cut, fenced the same way).
 */
final class StreamcatMaterialized {
    /** The table property that marks a materialized table. */
    static final String PROPERTY = "streamcat.materialized";
    /** Write options that make a write a refresh's (the Python writer turns them into commit properties). */
    static final String HOLDER_PROPERTY = "streamcat.materialized.holder";
    static final String HOLDER_OPTION = OptionKeys.COMMIT_PROPERTY + HOLDER_PROPERTY;
    static final String CUTS_OPTION = OptionKeys.COMMIT_PROPERTY + "streamcat.materialized.cuts";
    /** Commit properties of a refresh: how continuous mode maintains the query, and how this refresh was made. */
    static final String PLAN_OPTION = OptionKeys.COMMIT_PROPERTY + "streamcat.materialized.plan";
    static final String METHOD_OPTION = OptionKeys.COMMIT_PROPERTY + "streamcat.materialized.method";
    /** The refresh commit property naming the hidden state columns it wrote (AggregationState), when any. */
    static final String STATE_PROPERTY = "streamcat.materialized.state";
    private static final long DEFAULT_LEASE_SECONDS = 60;
    /** The WITH option naming the partition a scheduled refresh recomputes (model.DATE_FORMATTER on the server). */
    private static final java.util.regex.Pattern DATE_FORMATTER =
            java.util.regex.Pattern.compile("partition\\.fields\\.([^.]+)\\.date-formatter");

    /** Sources pinned at cuts for the refresh running on this thread: "catalog.scope.table" to cut. */
    private static final ThreadLocal<Map<String, Long>> PINS = new ThreadLocal<>();
    /** Tables loaded on this thread while a new query is analyzed: "scope.table" of this catalog. */
    private static final ThreadLocal<Set<String>> LOADED = new ThreadLocal<>();

    private final String catalog;
    private final CatalogRestClient client;

    StreamcatMaterialized(String catalog, CatalogRestClient client) {
        this.catalog = catalog;
        this.client = client;
    }

    /** Called by the catalog's loadTable: notes the table, and answers the cut it is pinned at (or null). */
    static Long loaded(String catalog, Identifier ident) {
        if (ident.namespace().length != 1) {
            return null;
        }
        String key = ident.namespace()[0] + "." + ident.name();
        Set<String> loaded = LOADED.get();
        if (loaded != null) {
            loaded.add(key);
        }
        Map<String, Long> pins = PINS.get();
        return pins == null ? null : pins.get(catalog + "." + key);
    }

    static boolean isMaterialized(Map<String, String> properties) {
        return "true".equals(properties.get(PROPERTY));
    }

    /** The refusal of a user's write into a materialized table. */
    static RuntimeException refusal(String table) {
        return Refusal.unsupported(table + " is a materialized table: its content is the result of "
                + "its query, written only by its refreshes. Change the query with CALL <catalog>.system."
                + "alter_materialized_table(table => ..., query => ...), or refresh it with "
                + "CALL <catalog>.system.refresh_materialized_table(table => ...)");
    }

    // -- procedures ------------------------------------------------------------------------------------

    interface Registry {
        void add(String name, String description, List<ProcedureParameter> parameters, StructType result,
                 java.util.function.Function<InternalRow, InternalRow[]> body);
    }

    interface TableArgument {
        String[] of(InternalRow args);
    }

    private static ProcedureParameter string(String name, String comment, String defaultValue) {
        ProcedureParameter.Builder b = ProcedureParameter.in(name, DataTypes.StringType).comment(comment);
        return (defaultValue == null ? b : b.defaultValue(defaultValue)).build();
    }

    private static final StructType STATE = new StructType().add("table", DataTypes.StringType)
            .add("refresh_mode", DataTypes.StringType).add("effective_refresh_mode", DataTypes.StringType)
            .add("status", DataTypes.StringType).add("freshness", DataTypes.StringType);
    private static final StructType REFRESHED = new StructType().add("table", DataTypes.StringType)
            .add("outcome", DataTypes.StringType).add("commit", DataTypes.LongType).add("cuts", DataTypes.StringType)
            .add("duration_ms", DataTypes.LongType).add("method", DataTypes.StringType);

    private static final StructType DROPPED = new StructType().add("table", DataTypes.StringType)
            .add("dropped", DataTypes.BooleanType);
    private static final StructType LISTED = new StructType().add("table", DataTypes.StringType)
            .add("refresh_mode", DataTypes.StringType).add("freshness", DataTypes.StringType)
            .add("status", DataTypes.StringType).add("lag_seconds", DataTypes.LongType)
            .add("stale", DataTypes.BooleanType);

    void register(Registry registry, TableArgument tables) {
        ProcedureParameter table = string("table", "scope.table", null);
        registry.add("create_materialized_table",
                "Create a table whose content is a query's result, refreshed so that it lags its sources by at "
                        + "most the freshness; its schema is the query's. Refreshes it once unless initialize => false.",
                List.of(table, string("query", "the SELECT whose result the table holds", null),
                        string("freshness", "how far the table may lag its sources, e.g. '10 seconds', '1 hour'",
                                null),
                        string("refresh_mode", "auto (continuous below the server's threshold, else full), "
                                + "continuous or full", "'auto'"),
                        string("primary_key", "comma-separated key columns (a primary-key table)", "NULL"),
                        ProcedureParameter.in("initialize", DataTypes.BooleanType).defaultValue("true")
                                .comment("run the first refresh now").build(),
                        string("comment", "the table's comment", "NULL"),
                        ProcedureParameter.in("if_not_exists", DataTypes.BooleanType).defaultValue("false")
                                .comment("leave an existing materialized table of that name as it is").build(),
                        string("partitioned_by", "comma-separated partition columns (identity partitions)", "NULL"),
                        ProcedureParameter.in("options", OPTIONS).defaultValue("NULL")
                                .comment("WITH options: map('partition.fields.<col>.date-formatter', 'yyyy-MM-dd') "
                                        + "and table properties (merge-engine, sequence.field, fields.<col>.*)")
                                .build()),
                STATE, args -> create(tables.of(args), args));
        registry.add("refresh_materialized_table",
                "Refresh a materialized table now if a source has commits past the cuts it reflects (always with "
                        + "force => true): one atomic commit that records the source cuts it read; a continuous "
                        + "table's query is maintained from its source's changes where it allows (force => true "
                        + "recomputes).",
                List.of(table, string("holder", "the refresher's name (default: one of this session's own)", "NULL"),
                        ProcedureParameter.in("lease_seconds", DataTypes.LongType).defaultValue("60")
                                .comment("how long the lease lasts unless renewed (a dead refresher's is taken over "
                                        + "after it)").build(),
                        ProcedureParameter.in("force", DataTypes.BooleanType).defaultValue("false")
                                .comment("recompute even when no source changed").build(),
                        ProcedureParameter.in("partition", OPTIONS).defaultValue("NULL")
                                .comment("recompute this partition only, e.g. map('ds', '2026-11-01') (a backfill)")
                                .build(),
                        string("at", "the scheduled time (ISO-8601, e.g. '2026-11-01T00:00:00Z') whose partition a "
                                + "full-mode table with a partition date formatter recomputes (default: the latest "
                                + "multiple of its freshness)", "NULL"),
                        ProcedureParameter.in("dry_run", DataTypes.BooleanType).defaultValue("false")
                                .comment("rehearse a step (plan, change feed, the step's job) over one small "
                                        + "consumed commit, writing nothing: no lease, no commit").build()),
                REFRESHED, args -> {
                    String[] t = tables.of(args);
                    if (!args.isNullAt(6) && args.getBoolean(6)) {
                        return new InternalRow[] {rehearse(t).row(t)};
                    }
                    String holder = args.isNullAt(1) ? null : args.getUTF8String(1).toString();
                    long lease = args.isNullAt(2) ? DEFAULT_LEASE_SECONDS : args.getLong(2);
                    Scheduled scheduled = new Scheduled(pairs(args, 4), text(args, 5));
                    return new InternalRow[] {refresh(t, holder, lease * 1000, !args.isNullAt(3) && args.getBoolean(3),
                            scheduled).row(t)};
                });
        registry.add("suspend_materialized_table", "Stop refreshing a materialized table until it is resumed.",
                List.of(table), STATE, args -> state(tables.of(args), action("suspend")));
        registry.add("resume_materialized_table", "Refresh a suspended materialized table again.",
                List.of(table), STATE, args -> state(tables.of(args), action("resume")));
        registry.add("alter_materialized_table",
                "Change a materialized table's freshness, refresh mode or query; a new query's columns must stay "
                        + "compatible with the table's (the schema group's policy decides), and the next refresh "
                        + "recomputes.",
                List.of(table, string("freshness", "the new freshness", "NULL"),
                        string("refresh_mode", "auto, continuous or full", "NULL"),
                        string("query", "the new query", "NULL"),
                        ProcedureParameter.in("keep_columns", DataTypes.BooleanType).defaultValue("false")
                                .comment("as Flink's ALTER MATERIALIZED TABLE ... AS: the new query keeps every "
                                        + "column's name, place and type, and may only add columns at the end")
                                .build()),
                STATE, args -> alter(tables.of(args), args));
        registry.add("drop_materialized_table",
                "Drop a materialized table (its definition, refreshes and data); refuses a table that is not one.",
                List.of(table, ProcedureParameter.in("if_exists", DataTypes.BooleanType).defaultValue("false")
                        .comment("do nothing when no such materialized table exists").build()),
                DROPPED, args -> drop(tables.of(args), !args.isNullAt(1) && args.getBoolean(1)));
        registry.add("show_materialized_tables",
                "List the materialized tables of a namespace with their freshness, refresh mode, status and lag.",
                List.of(string("namespace", "the namespace (default: the session's current one)", "NULL")),
                LISTED, args -> show(args.isNullAt(0) ? SparkSession.active().catalog().currentDatabase()
                        : args.getUTF8String(0).toString()));
    }

    /** The type of the map parameters: WITH options, a partition's values. */
    private static final MapType OPTIONS = DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType);

    /** A map parameter as an ordered map (null values as the text "null"); empty when NULL. */
    private static Map<String, String> pairs(InternalRow args, int i) {
        return PythonSourceBridge.stringMap(args, i);
    }

    private static ObjectNode action(String action) {
        return CatalogRestClient.object().put("action", action);
    }

    private String path(String[] table) {
        return CatalogRestClient.materializedTablePath(table[0], table[1]);
    }

    private InternalRow[] state(String[] table, ObjectNode change) {
        return new InternalRow[] {stateRow(table, client.call("PATCH", path(table), change))};
    }

    private static InternalRow stateRow(String[] table, JsonNode mt) {
        return new GenericInternalRow(new Object[] {
            UTF8String.fromString(table[0] + "." + table[1]), UTF8String.fromString(mt.path("refreshMode").asText()),
            UTF8String.fromString(mt.path("effectiveRefreshMode").asText()),
            UTF8String.fromString(mt.path("status").asText()),
            UTF8String.fromString(mt.path("freshnessMs").asLong() / 1000 + " seconds")});
    }

    /** The query analyzed on this session: its schema and the tables of this catalog it reads. */
    private ObjectNode analyze(String query) {
        SparkSession spark = SparkSession.active();
        Set<String> loaded = new LinkedHashSet<>();
        LOADED.set(loaded);
        StructType schema;
        try {
            Dataset<Row> df = spark.sql(query);
            // Nullable columns (the key's are made non-null by the server): what a query may yield as
            // non-null today (count(*)) is no promise, and a nullable column added later stays Backward.
            schema = df.schema().asNullable();
        } finally {
            LOADED.remove();
        }
        ObjectNode body = CatalogRestClient.object().put("queryText", query);
        body.put("currentCatalog", spark.catalog().currentCatalog());
        body.set("currentNamespace", CatalogRestClient.array().add(spark.catalog().currentDatabase()));
        ArrayNode sources = CatalogRestClient.array();
        for (String key : loaded) {
            int dot = key.indexOf('.');
            sources.add(CatalogRestClient.object().put("scopeName", key.substring(0, dot))
                    .put("tableName", key.substring(dot + 1)));
        }
        body.set("sources", sources);
        body.set("schema", CatalogRestClient.parse(schema.json()));
        return body;
    }

    private static String text(InternalRow args, int i) {
        return args.isNullAt(i) ? null : args.getUTF8String(i).toString();
    }

    private InternalRow[] create(String[] table, InternalRow args) {
        String query = text(args, 1);
        String freshness = text(args, 2);
        if (query == null || freshness == null) {
            throw new IllegalArgumentException("create_materialized_table needs query => and freshness =>");
        }
        if (!args.isNullAt(7) && args.getBoolean(7)) {
            JsonNode existing = existing(table);
            if (existing != null) {
                return new InternalRow[] {stateRow(table, existing)};
            }
        }
        ObjectNode body = analyze(query);
        body.put("tableName", table[1]);
        if (text(args, 6) != null) {
            body.put("comment", text(args, 6));
        }
        body.put("freshness", freshness);
        body.put("refreshMode", text(args, 3) == null ? "auto" : text(args, 3).trim().toLowerCase());
        partitioned(table, body, text(args, 8), pairs(args, 9));
        ArrayNode key = CatalogRestClient.array();
        if (text(args, 4) != null) {
            for (String column : text(args, 4).split(",")) {
                if (!column.isBlank()) {
                    key.add(column.trim());
                }
            }
        }
        // A table refreshed in full only (REFRESH_MODE = FULL) never steps: it stays an ordinary table, whose
        // reads need no merge.
        IncrementalRefresh.Layout layout = "full".equals(body.path("refreshMode").asText()) ? null
                : layout(query, body.path("sources"), key);
        if (layout != null && key.isEmpty()) {
            layout.key().forEach(key::add);
        }
        body.set("primaryKey", key);
        JsonNode created = call("POST", CatalogRestClient.materializedTablesPath(table[0]), body);
        if (layout != null) {
            storeAs(table, layout);
        }
        if (args.isNullAt(5) || args.getBoolean(5)) {
            refresh(table, null, DEFAULT_LEASE_SECONDS * 1000, false);
            created = client.get(path(table));
        }
        return new InternalRow[] {stateRow(table, created)};
    }

    /**
     * How the table of a grouped aggregate is stored so that its steps write only the changed groups
     * ({@link IncrementalRefresh#layout}), or null: not such a query, or a primary key other than its groups.
     */
    private IncrementalRefresh.Layout layout(String query, JsonNode sources, ArrayNode key) {
        List<String> names = new ArrayList<>();
        for (JsonNode s : sources) {
            names.add(s.path("scopeName").asText() + "." + s.path("tableName").asText());
        }
        IncrementalRefresh.Layout layout = IncrementalRefresh.layout(
                IncrementalRefresh.analyze(SparkSession.active(), catalog, query, names));
        if (layout == null || key.isEmpty()) {
            return layout;
        }
        List<String> declared = new ArrayList<>();
        key.forEach(k -> declared.add(k.asText()));
        return layout.keyedBy(declared) ? layout : null;
    }

    /**
     * A table stored keyed by its query's groups with the aggregation engine (IncrementalRefresh.Layout) adds
     * up the rows written per key: a new query must give one row per key (group by the same columns) and keep
     * the column that counts a group's rows.
     */
    private void keepsGroups(String[] table, String query, StructType next) {
        JsonNode described = client.get(CatalogRestClient.tablePath(table[0], table[1]));
        JsonNode properties = described.path("properties");
        if (!"aggregation".equals(properties.path(AggregationState.MERGE_ENGINE).asText())) {
            return;
        }
        List<String> key = StreamcatCatalog.primaryKeyOf(described);
        List<String> groups = IncrementalRefresh.groupColumns(SparkSession.active(), query);
        String name = table[0] + "." + table[1];
        if (groups == null || !new IncrementalRefresh.Layout(groups, Map.of()).keyedBy(key)) {
            throw Refusal.invalid(name + " is stored keyed by its query's groups (" + String.join(", ", key)
                    + ") and adds up the rows written per key: a new query must GROUP BY the same columns "
                    + "(drop the table and create it again for another grouping)");
        }
        String counted = properties.path(AggregationState.ROW_COUNT_FIELD).asText("");
        if (!counted.isEmpty() && !counted.equals(AggregationState.ROWS)
                && java.util.Arrays.stream(next.fieldNames()).noneMatch(counted::equalsIgnoreCase)) {
            throw Refusal.invalid(name + " counts each group's rows in column " + counted
                    + ": a new query must keep it");
        }
    }

    /** Gives a new table the aggregation layout before its first refresh; a refusal drops the table again. */
    private void storeAs(String[] table, IncrementalRefresh.Layout layout) {
        ObjectNode body = CatalogRestClient.object();
        body.set("changes", TableChanges.toJson(layout.properties().entrySet().stream()
                .map(e -> org.apache.spark.sql.connector.catalog.TableChange.setProperty(e.getKey(), e.getValue()))
                .toArray(org.apache.spark.sql.connector.catalog.TableChange[]::new)));
        try {
            client.call("PATCH", CatalogRestClient.tablePath(table[0], table[1]), body);
        } catch (RuntimeException e) {
            SparkSession.active().sql("DROP TABLE " + quoted(catalog, table[0], table[1]));
            throw e;
        }
    }

    private InternalRow[] alter(String[] table, InternalRow args) {
        ObjectNode body = CatalogRestClient.object();
        if (text(args, 1) != null) {
            body.put("freshness", text(args, 1));
        }
        if (text(args, 2) != null) {
            body.put("refreshMode", text(args, 2).trim().toLowerCase());
        }
        if (text(args, 3) != null) {
            ObjectNode query = analyze(text(args, 3));
            keepsGroups(table, text(args, 3), (StructType) DataType.fromJson(query.path("schema").toString()));
            if (!args.isNullAt(4) && args.getBoolean(4)) {
                keepsColumns(table, (StructType) DataType.fromJson(query.path("schema").toString()));
            }
            body.set("query", query);
        }
        return new InternalRow[] {stateRow(table, call("PATCH", path(table), body))};
    }

    /**
     * Adds PARTITIONED BY and WITH to a creation's body. The server judges which options a table takes; what
     * only Java can judge is judged here: a date formatter is a Java date pattern, and its column a string.
     */
    private static void partitioned(String[] table, ObjectNode body, String partitionedBy, Map<String, String> options) {
        ArrayNode columns = CatalogRestClient.array();
        if (partitionedBy != null) {
            for (String column : partitionedBy.split(",")) {
                if (!column.isBlank()) {
                    columns.add(column.trim());
                }
            }
        }
        body.set("partitionedBy", columns);
        body.set("options", CatalogRestClient.JSON.valueToTree(options));
        StructType schema = (StructType) DataType.fromJson(body.path("schema").toString());
        for (Map.Entry<String, String> option : options.entrySet()) {
            java.util.regex.Matcher formatter = DATE_FORMATTER.matcher(option.getKey());
            if (!formatter.matches()) {
                continue;
            }
            String column = formatter.group(1);
            String name = table[0] + "." + table[1];
            try {
                java.time.format.DateTimeFormatter.ofPattern(option.getValue());
            } catch (IllegalArgumentException e) {
                throw Refusal.invalid("option '" + option.getKey() + "' of " + name + " is not a Java date pattern: "
                        + e.getMessage());
            }
            for (var field : schema.fields()) {
                if (field.name().equals(column) && !field.dataType().sameType(DataTypes.StringType)) {
                    throw Refusal.invalid("option '" + option.getKey() + "' of " + name + ": column " + column
                            + " holds the formatted time, so it must be a STRING, not " + field.dataType().sql());
                }
            }
        }
    }

    /** The materialized table's state, or null when there is none of that name (a plain table is refused). */
    private JsonNode existing(String[] table) {
        try {
            return client.get(path(table));
        } catch (CatalogApiException e) {
            if (!e.isNotFound()) {
                throw e;
            }
        }
        try {
            client.get(CatalogRestClient.tablePath(table[0], table[1]));
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                return null;
            }
            throw e;
        }
        throw Refusal.invalid(table[0] + "." + table[1] + " exists and is not a materialized table");
    }

    /**
     * Flink's rule for {@code ALTER MATERIALIZED TABLE ... AS}: the new query's columns start with the table's,
     * same names, same order, same types; only columns at the end may be new (the analysis makes them nullable).
     */
    private void keepsColumns(String[] table, StructType next) {
        JsonNode described = client.get(CatalogRestClient.tablePath(table[0], table[1]));
        StructType current = (StructType) DataType.fromJson(described.path("schema").toString());
        String name = table[0] + "." + table[1];
        for (int i = 0; i < current.fields().length; i++) {
            var column = current.fields()[i];
            if (i >= next.fields().length) {
                throw Refusal.invalid("ALTER MATERIALIZED TABLE " + name + " AS: the new query drops column "
                        + column.name() + "; only new columns at the end may change the table's columns");
            }
            var now = next.fields()[i];
            if (!now.name().equalsIgnoreCase(column.name())) {
                throw Refusal.invalid("ALTER MATERIALIZED TABLE " + name + " AS: column " + column.name()
                        + " is column " + (i + 1) + " of the table, but the new query puts " + now.name()
                        + " there; columns may not be dropped, renamed or reordered");
            }
            if (!now.dataType().sameType(column.dataType())) {
                throw Refusal.invalid("ALTER MATERIALIZED TABLE " + name + " AS: column " + column.name()
                        + " would change type from " + column.dataType().sql() + " to " + now.dataType().sql());
            }
        }
    }

    private InternalRow[] drop(String[] table, boolean ifExists) {
        String name = table[0] + "." + table[1];
        JsonNode existing = existing(table);
        if (existing == null) {
            if (ifExists) {
                return new InternalRow[] {new GenericInternalRow(new Object[] {UTF8String.fromString(name), false})};
            }
            throw Refusal.notFound("no materialized table " + name);
        }
        SparkSession.active().sql("DROP TABLE " + quoted(catalog, table[0], table[1]));
        return new InternalRow[] {new GenericInternalRow(new Object[] {UTF8String.fromString(name), true})};
    }

    private InternalRow[] show(String namespace) {
        List<InternalRow> rows = new ArrayList<>();
        for (JsonNode mt : client.pages(CatalogRestClient.materializedTablesPath(namespace), "materializedTables")) {
            rows.add(new GenericInternalRow(new Object[] {
                UTF8String.fromString(namespace + "." + mt.path("tableName").asText()),
                UTF8String.fromString(mt.path("effectiveRefreshMode").asText()),
                UTF8String.fromString(mt.path("freshnessMs").asLong() / 1000 + " seconds"),
                UTF8String.fromString(mt.path("status").asText()), mt.path("lagMs").asLong() / 1000,
                mt.path("stale").asBoolean()}));
        }
        return rows.toArray(new InternalRow[0]);
    }


    /** A call whose refusal (bad query, incompatible schema, name taken) is shown as a bad statement. */
    private JsonNode call(String method, String path, JsonNode body) {
        try {
            return client.call(method, path, body);
        } catch (CatalogApiException e) {
            if (e.status == 400 || e.status == 409) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
            throw e;
        }
    }

    // -- refresh ---------------------------------------------------------------------------------------

    /** What one refresh came to. */
    record Outcome(String outcome, Long commit, String cuts, long durationMs, String method) {
        InternalRow row(String[] table) {
            return new GenericInternalRow(new Object[] {UTF8String.fromString(table[0] + "." + table[1]),
                UTF8String.fromString(outcome), commit, cuts == null ? null : UTF8String.fromString(cuts),
                durationMs, method == null ? null : UTF8String.fromString(method)});
        }
    }

    private JsonNode lease(String[] table, String holder, long leaseMs) {
        ObjectNode body = CatalogRestClient.object().put("holder", holder).put("ttlMs", leaseMs);
        try {
            return client.call("POST", path(table) + "/lease", body);
        } catch (CatalogApiException e) {
            if (e.status == 409) {
                throw new IllegalStateException(e.getMessage(), e);
            }
            throw e;
        }
    }

    private void report(String[] table, ObjectNode body) {
        client.call("POST", path(table) + "/refreshes", body);
    }

    Outcome refresh(String[] table, String holderOrNull, long leaseMs, boolean force) {
        return refresh(table, holderOrNull, leaseMs, force, Scheduled.NONE);
    }

    Outcome refresh(String[] table, String holderOrNull, long leaseMs, boolean force, Scheduled scheduled) {
        String holder = holderOrNull != null ? holderOrNull : "spark-" + UUID.randomUUID();
        // A partition or time the caller names is judged before the lease is taken: one that cannot be named is
        // the caller's error, not a failed refresh.
        boolean named = !scheduled.partition().isEmpty() || scheduled.at() != null;
        Partial partial = named ? partial(table, client.get(path(table)), scheduled, force) : null;
        long started = System.currentTimeMillis();
        JsonNode mt = lease(table, holder, leaseMs);
        if (partial == null) {
            partial = partial(table, mt, scheduled, force);
        }
        Map<String, Long> cuts = new LinkedHashMap<>();
        for (JsonNode source : mt.path("sources")) {
            cuts.put(source.path("scopeName").asText() + "." + source.path("tableName").asText(),
                    source.path("latestCut").asLong());
        }
        // The server decides whether a refresh would change the content (MaterializedTable.behind); a partition's
        // is recomputed anyway (the scheduled time's may be a new partition).
        if (!mt.path("behind").asBoolean() && !force && partial.values().isEmpty()) {
            report(table, partial.report(CatalogRestClient.object().put("holder", holder).put("outcome", "unchanged")));
            return new Outcome("unchanged", mt.path("refreshCommit").asLong(), null, 0, null);
        }
        String cutsJson = CatalogRestClient.JSON.valueToTree(cuts).toString();
        Heartbeat heartbeat = new Heartbeat(table, holder, leaseMs);
        heartbeat.start();
        try {
            JsonNode described = client.get(CatalogRestClient.tablePath(table[0], table[1]));
            long base = described.path("stream").path("lastCommit").asLong();
            String method = partial.values().isEmpty() ? write(table, mt, cuts, holder, cutsJson, described, force)
                    : writePartition(table, mt, cuts, holder, cutsJson, base, partial);
            heartbeat.check();
            Long commit = null;
            String commits = CatalogRestClient.streamPath(table[0], table[1]) + "/commits?after=" + base + "&limit=100";
            for (JsonNode c : client.get(commits).path("commits")) {
                if (holder.equals(c.path("properties").path(HOLDER_PROPERTY).asText())) {
                    commit = c.path("number").asLong();
                }
            }
            if (commit == null && !partial.values().isEmpty()) {
                // the partition was empty and stays empty: nothing to commit
                heartbeat.stop();
                report(table, partial.report(CatalogRestClient.object().put("holder", holder)
                        .put("outcome", "unchanged")));
                return new Outcome("unchanged", mt.path("refreshCommit").asLong(), cutsJson,
                        System.currentTimeMillis() - started, method);
            }
            if (commit == null) {
                throw new IllegalStateException("the refresh of " + table[0] + "." + table[1]
                        + " wrote no commit of its own");
            }
            if (method.endsWith(IncrementalRefresh.DELTAS)) {
                compactIfDue(table, commit);
            }
            long duration = System.currentTimeMillis() - started;
            ObjectNode body = CatalogRestClient.object().put("holder", holder).put("outcome", "succeeded")
                    .put("commit", commit).put("durationMs", duration);
            body.set("cuts", CatalogRestClient.JSON.valueToTree(cuts));
            heartbeat.stop();
            report(table, partial.report(body));
            return new Outcome("succeeded", commit, cutsJson, duration, method);
        } catch (Throwable e) {
            // Throwable: Spark's AnalysisException (a source's column dropped) is a checked exception that
            // Scala throws undeclared, and an Error must not leave the lease held and the failure unrecorded.
            heartbeat.stop();
            String message = firstLine(e);
            try {
                report(table, CatalogRestClient.object().put("holder", holder).put("outcome", "failed")
                        .put("error", message.length() > 8000 ? message.substring(0, 8000) : message));
            } catch (RuntimeException lost) {
                e.addSuppressed(lost);  // the lease went to another refresher, or the table was dropped
            }
            if (e instanceof Error error) {
                throw error;
            }
            throw failed(table, e);
        }
    }

    /** What the caller of a refresh names: a partition to recompute (a backfill), or a scheduled time. */
    record Scheduled(Map<String, String> partition, String at) {
        static final Scheduled NONE = new Scheduled(Map.of(), null);
    }

    /**
     * What a refresh recomputes: the partition of {@code values} (partition column to its value; empty: the
     * whole table), and the scheduled time it runs for, recorded on the server ({@code tick}; null: none, as
     * for a backfill or a continuous table).
     */
    record Partial(Map<String, Object> values, Long tick) {
        ObjectNode report(ObjectNode body) {
            return tick == null ? body : body.put("scheduledAt", tick);
        }

        String describe() {
            List<String> parts = new ArrayList<>();
            values.forEach((column, value) -> parts.add(column + " = '" + value + "'"));
            return "(" + String.join(", ", parts) + ")";
        }
    }

    /**
     * What a refresh of {@code mt} recomputes. A named partition is a backfill of a full-mode partitioned table.
     * Otherwise a full-mode table runs for the scheduled time at or before now (a multiple of its freshness,
     * {@code at} when given), and with a {@code partition.fields.<col>.date-formatter} option, unless forced,
     * recomputes the partition whose column holds that time formatted in UTC. Refusals name the table and why.
     */
    private Partial partial(String[] table, JsonNode mt, Scheduled scheduled, boolean force) {
        String name = table[0] + "." + table[1];
        boolean full = "full".equals(mt.path("effectiveRefreshMode").asText());
        if (!scheduled.partition().isEmpty()) {
            if (scheduled.at() != null || force) {
                throw Refusal.invalid("REFRESH PARTITION of " + name + " recomputes the partition it names: "
                        + (force ? "force => true" : "at =>") + " does not go with it");
            }
            Map<String, DataType> columns = partitionColumns(table);
            if (columns.isEmpty()) {
                throw Refusal.invalid("REFRESH PARTITION: materialized table " + name + " is not partitioned; "
                        + "use ALTER MATERIALIZED TABLE ... REFRESH");
            }
            if (!full) {
                throw Refusal.invalid("REFRESH PARTITION: materialized table " + name + " is refreshed "
                        + "continuously, so every partition follows its sources; use ALTER MATERIALIZED TABLE ... "
                        + "REFRESH to recompute it all");
            }
            Map<String, Object> values = new LinkedHashMap<>();
            scheduled.partition().forEach((written, text) -> {
                // Spark's names are case-insensitive: the column as the table spells it
                String column = columns.keySet().stream().filter(written::equalsIgnoreCase).findFirst()
                        .orElseThrow(() -> Refusal.invalid("REFRESH PARTITION of " + name + ": " + written + " is not "
                                + "a partition column (its partition columns: " + String.join(", ", columns.keySet())
                                + ")"));
                values.put(column, typed(name, column, text, columns.get(column)));
            });
            return new Partial(values, null);
        }
        java.util.regex.Matcher formatter = null;
        String pattern = null;
        for (var option : mt.path("options").properties()) {
            java.util.regex.Matcher found = DATE_FORMATTER.matcher(option.getKey());
            if (found.matches()) {
                formatter = found;
                pattern = option.getValue().asText();
            }
        }
        if (scheduled.at() != null && (!full || formatter == null)) {
            throw Refusal.invalid("at => of " + name + ": only a full-mode table with a 'partition.fields.<column>."
                    + "date-formatter' option refreshes the partition of a scheduled time");
        }
        if (!full) {
            return new Partial(Map.of(), null);
        }
        long freshness = Math.max(1, mt.path("freshnessMs").asLong());
        long at = scheduled.at() == null ? System.currentTimeMillis() : instant(name, scheduled.at());
        long tick = at - Math.floorMod(at, freshness);
        if (formatter == null || force || mt.path("refreshCommit").asLong() == 0) {
            return new Partial(Map.of(), tick);  // the whole table (a table never refreshed is computed whole)
        }
        String value = java.time.format.DateTimeFormatter.ofPattern(pattern).withZone(java.time.ZoneOffset.UTC)
                .format(java.time.Instant.ofEpochMilli(scheduled.at() == null ? tick : at));
        return new Partial(Map.of(formatter.group(1), value), tick);
    }

    private static long instant(String name, String text) {
        try {
            return java.time.Instant.parse(text.trim()).toEpochMilli();
        } catch (java.time.format.DateTimeParseException e) {
            throw Refusal.invalid("at => of " + name + ": '" + text + "' is not an ISO-8601 time such as "
                    + "'2026-11-01T00:00:00Z'");
        }
    }

    /** The table's identity partition columns and their types, in the order of its partition spec. */
    private Map<String, DataType> partitionColumns(String[] table) {
        JsonNode described = client.get(CatalogRestClient.tablePath(table[0], table[1]));
        StructType schema = (StructType) DataType.fromJson(described.path("schema").toString());
        Map<String, DataType> columns = new LinkedHashMap<>();
        for (JsonNode field : described.path("partitionSpec").path("fields")) {
            String source = field.path("source").asText();
            if ("identity".equals(field.path("transform").asText()) && schema.getFieldIndex(source).isDefined()) {
                columns.put(source, schema.apply(source).dataType());
            }
        }
        return columns;
    }

    /** A partition value as written ('2026-11-01', 7, 'true') as a value of its column's type, as Spark's filters hold them. */
    private static Object typed(String name, String column, String text, DataType type) {
        String v = text.trim();
        try {
            if (type.sameType(DataTypes.StringType)) {
                return text;
            } else if (type.sameType(DataTypes.IntegerType)) {
                return Integer.valueOf(v);
            } else if (type.sameType(DataTypes.LongType)) {
                return Long.valueOf(v);
            } else if (type.sameType(DataTypes.ShortType)) {
                return Short.valueOf(v);
            } else if (type.sameType(DataTypes.ByteType)) {
                return Byte.valueOf(v);
            } else if (type.sameType(DataTypes.BooleanType) && (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false"))) {
                return Boolean.valueOf(v);
            } else if (type.sameType(DataTypes.DateType)) {
                return java.time.LocalDate.parse(v);
            } else if (type.sameType(DataTypes.TimestampNTZType)) {
                return java.time.LocalDateTime.parse(v.replace(' ', 'T'));
            } else if (type.sameType(DataTypes.TimestampType)) {
                return java.time.Instant.parse(v);
            }
        } catch (RuntimeException e) {
            // refused below
        }
        throw Refusal.invalid("REFRESH PARTITION of " + name + ": '" + text + "' is not a " + type.sql()
                + " value, the type of partition column " + column);
    }

    /**
     * Recomputes one partition: the query's rows in it, with every source pinned at its cut, replace the
     * partition's chunks in ONE commit (a row-level commit removing exactly those chunks, read at {@code base}
     * and fenced on it); the other partitions' chunks are not touched. Answers how it was made.
     */
    private String writePartition(String[] table, JsonNode mt, Map<String, Long> cuts, String holder, String cutsJson,
                                  long base, Partial partial) {
        SparkSession spark = SparkSession.active();
        try (DefiningScope ignored = new DefiningScope(spark, mt)) {
            org.apache.spark.sql.Column in = functions.lit(true);
            ArrayNode filters = CatalogRestClient.array();
            for (Map.Entry<String, Object> value : partial.values().entrySet()) {
                in = in.and(functions.col(quoted(value.getKey())).eqNullSafe(functions.lit(value.getValue())));
                filters.add(FilterJson.toJson(new org.apache.spark.sql.sources.EqualTo(value.getKey(), value.getValue()))
                        .orElseThrow(() -> new IllegalStateException("partition column " + value.getKey()
                                + " cannot be planned on")));
            }
            Map<String, Long> pins = new HashMap<>();
            cuts.forEach((k, v) -> pins.put(catalog + "." + k, v));
            PINS.set(pins);
            Dataset<Row> rows = spark.sql(mt.path("queryText").asText()).where(in);
            ObjectNode plan = CatalogRestClient.object().put("cut", base);
            plan.set("filters", filters);
            ArrayNode replaced = CatalogRestClient.array();
            String chunks = CatalogRestClient.streamPath(table[0], table[1]) + "/chunks/plan";
            for (JsonNode chunk : client.call("POST", chunks, plan).path("chunks")) {
                if (!chunk.path("partition").isObject()) {  // it may hold rows of other partitions too
                    throw new IllegalStateException("chunk " + chunk.path("path").asText() + " has no partition: "
                            + "recompute the whole table (ALTER MATERIALIZED TABLE ... REFRESH)");
                }
                replaced.add(chunk.path("path").asText());
            }
            String method = "full: partition " + partial.describe();
            rows.writeTo(quoted(catalog, table[0], table[1])).option(HOLDER_OPTION, holder)
                    .option(CUTS_OPTION, cutsJson).option(METHOD_OPTION, method)
                    .option(OptionKeys.EXPECTED_LAST_COMMIT, Long.toString(base))
                    .option(OptionKeys.REPLACES, replaced.toString()).append();
            return method;
        } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
            throw new IllegalStateException("materialized table " + table[0] + "." + table[1] + " is gone", e);
        } finally {
            PINS.remove();
        }
    }

    /**
     * The session's current catalog and namespace switched, until closed, to those the materialized table's
     * query was defined in (recorded at CREATE), so its unqualified names resolve as they did then.
     */
    private static final class DefiningScope implements AutoCloseable {
        private final SparkSession spark;
        private final String catalogBefore;
        private final String namespaceBefore;

        DefiningScope(SparkSession spark, JsonNode mt) {
            this.spark = spark;
            this.catalogBefore = spark.catalog().currentCatalog();
            this.namespaceBefore = spark.catalog().currentDatabase();
            String defined = mt.path("currentCatalog").asText("");
            if (!defined.isEmpty()) {
                spark.catalog().setCurrentCatalog(defined);
                JsonNode ns = mt.path("currentNamespace");
                if (ns.size() == 1) {
                    spark.catalog().setCurrentDatabase(ns.get(0).asText());
                }
            }
        }

        @Override
        public void close() {
            spark.catalog().setCurrentCatalog(catalogBefore);
            spark.catalog().setCurrentDatabase(namespaceBefore);
        }
    }

    /** The first line of a failure's message (Spark's analysis errors add the query's plan below it). */
    static String firstLine(Throwable e) {
        String message = e.getMessage() == null || e.getMessage().isBlank() ? e.toString() : e.getMessage().strip();
        int end = message.indexOf('\n');
        return (end < 0 ? message : message.substring(0, end)).strip();
    }

    /**
     * A failed refresh as the statement's one-line error: the materialized table and the cause, under the
     * cause's SQLSTATE when it has one (42703 for a column a source no longer has).
     */
    private static Refusal failed(String[] table, Throwable cause) {
        String state = cause instanceof SparkThrowable t && t.getSqlState() != null && !t.getSqlState().startsWith("XX")
                ? t.getSqlState() : "55000";
        String text = firstLine(cause).replaceFirst("\\s*SQLSTATE: \\w+.*$", "");
        return new Refusal("STREAMCAT_REFRESH_FAILED", state, "the refresh of materialized table " + table[0] + "."
                + table[1] + " failed: " + text, cause);
    }

    private String quoted(String... parts) {
        StringBuilder out = new StringBuilder();
        for (String part : parts) {
            out.append(out.length() == 0 ? "" : ".").append('`').append(part.replace("`", "``")).append('`');
        }
        return out.toString();
    }

    /**
     * Writes the table's next content in ONE commit recording {@code cuts} (fenced on {@code base}): for a
     * continuous table whose query allows it and whose content reflects recorded cuts, one incremental step
     * over its source's change feed (IncrementalRefresh); otherwise the query run with every source pinned at
     * its cut. A table stored by its query's groups ({@link IncrementalRefresh#layout}) is written with its
     * hidden state columns (AggregationState), a full refresh of it too ({@link IncrementalRefresh#whole}).
     * {@code described}: the table as the server describes it, at the commit the write is fenced on. Answers
     * how the refresh was made ("incremental", "full: why").
     */
    private String write(String[] table, JsonNode mt, Map<String, Long> cuts, String holder, String cutsJson,
                         JsonNode described, boolean force) {
        SparkSession spark = SparkSession.active();
        String target = quoted(catalog, table[0], table[1]);
        long base = described.path("stream").path("lastCommit").asLong();
        IncrementalRefresh.Step step = null;
        try (DefiningScope ignored = new DefiningScope(spark, mt)) {
            String query = mt.path("queryText").asText();
            // The one source a query maintained incrementally reads, described (its schema keys the plan).
            String[] only = cuts.size() == 1 ? cuts.keySet().iterator().next().split("\\.", 2) : null;
            JsonNode source = only != null ? client.get(CatalogRestClient.tablePath(only[0], only[1])) : null;
            IncrementalRefresh.Plan plan = plan(spark, query, new ArrayList<>(cuts.keySet()), source);
            IncrementalRefresh.Layout layout = IncrementalRefresh.layout(plan);
            boolean deltas = layout != null && layout.storedBy(described.path("properties"),
                    StreamcatCatalog.primaryKeyOf(described));
            StructType visible = (StructType) DataType.fromJson(described.path("schema").toString());
            StructType schema = deltas ? AggregationState.withState(visible, StreamcatCatalog.properties(described))
                    : visible;
            String state = String.join(",", java.util.Arrays.copyOfRange(schema.fieldNames(), visible.size(),
                    schema.size()));
            String method;
            if (!"continuous".equals(mt.path("effectiveRefreshMode").asText())) {
                method = "full: the refresh mode is full";
            } else if (!plan.incremental()) {
                method = "full: " + plan.reason();
            } else if (force) {
                method = "full: forced";
            } else {
                JsonNode consumed = mt.path("sources").get(0).path("consumedCut");
                if (mt.path("refreshCommit").asLong() == 0 || consumed.isNull()) {
                    method = "full: first refresh of this query";
                } else if (deltas && !state.equals(stateWritten(table, mt.path("refreshCommit").asLong()))) {
                    // say an AVG's function was set after its column was written: its rows have no sum and count
                    method = "full: the hidden state (" + state + ") is not written yet";
                } else {
                    long from = consumed.asLong();
                    String[] parts = plan.source().split("\\.", 2);
                    long to = cuts.get(plan.source());
                    if (from < source.path("stream").path("retainedFrom").asLong(0)) {
                        method = "full: the change feed of " + plan.source() + " from cut " + from + " is expired";
                    } else {
                        step = IncrementalRefresh.step(spark, plan, quoted(catalog, parts[0], parts[1]), from, to,
                                target, base, schema, onlyAdds(source, parts, from, to), deltas);
                        method = step.fallback() != null ? "full: " + step.fallback() : "incremental: " + plan.kind()
                                + (deltas && step.append() ? IncrementalRefresh.DELTAS : "");
                    }
                }
            }
            Dataset<Row> result;
            if (step != null && step.fallback() == null) {
                result = step.rows();
            } else {
                Map<String, Long> pins = new HashMap<>();
                cuts.forEach((k, v) -> pins.put(catalog + "." + k, v));
                PINS.set(pins);
                String[] parts = deltas ? plan.source().split("\\.", 2) : null;
                result = deltas ? IncrementalRefresh.whole(spark, plan, quoted(catalog, parts[0], parts[1]), schema)
                        : spark.sql(query);
            }
            if (REHEARSAL.get() != null) {  // a dry run (rehearse): the step's job runs, and writes nothing
                if (step != null && step.fallback() == null) {
                    rehearseWrite(spark, result);
                }
                return method;
            }
            var writer = result.writeTo(target).option(HOLDER_OPTION, holder).option(CUTS_OPTION, cutsJson)
                    .option(PLAN_OPTION, plan.describe()).option(METHOD_OPTION, method)
                    .option(OptionKeys.EXPECTED_LAST_COMMIT, Long.toString(base));
            if (!state.isEmpty()) {
                writer = writer.option(OptionKeys.COMMIT_PROPERTY + STATE_PROPERTY, state);
            }
            try (AggregationState.Scope written = AggregationState.loadedWith(deltas ? table[0] + "." + table[1] : null)) {
                if (step != null && step.fallback() == null && step.append()) {
                    writer.append();
                } else {
                    writer.overwrite(functions.lit(true));
                }
            }
            return method;
        } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
            throw new IllegalStateException("materialized table " + table[0] + "." + table[1] + " is gone", e);
        } finally {
            PINS.remove();
        }
    }

    /** The hidden state columns the table's refresh commit {@code commit} wrote ("" when none). */
    private String stateWritten(String[] table, long commit) {
        String commits = CatalogRestClient.streamPath(table[0], table[1]) + "/commits?after=" + (commit - 1) + "&limit=1";
        for (JsonNode c : client.get(commits).path("commits")) {
            if (c.path("number").asLong() == commit) {
                return c.path("properties").path(STATE_PROPERTY).asText("");
            }
        }
        return "";
    }

    /** Set on the thread of a dry run ({@link #rehearse}): {@link #write} runs the step's job and writes nothing. */
    private static final ThreadLocal<Boolean> REHEARSAL = new ThreadLocal<>();
    /** How many of a source's last consumed commits a dry run picks its one commit from. */
    private static final int REHEARSAL_WINDOW = 10;

    /**
     * A dry run of a table's next step ({@code refresh_materialized_table(dry_run => true)}): the very
     * {@link #write} of a refresh (the plan, remembered per session; the change feed; the step's Spark job), over
     * ONE commit the table already reflects (the one of fewest rows among its source's last consumed commits),
     * with the step's result written where nothing reads it ({@link #rehearseWrite}): no lease, no commit, no
     * report, the table as it was. The refresher runs it before a table's first step, so that the first real step finds the query
     * analyzed and the step's classes loaded and compiled. A table whose refresh is full (full mode, a query
     * continuous mode cannot follow, never refreshed) only has its query analyzed: a full job costs a refresh.
     */
    Outcome rehearse(String[] table) {
        long started = System.currentTimeMillis();
        ObjectNode mt = client.get(path(table)).deepCopy();
        Map<String, Long> cuts = new LinkedHashMap<>();
        for (JsonNode source : mt.path("sources")) {
            String key = source.path("scopeName").asText() + "." + source.path("tableName").asText();
            JsonNode consumed = source.path("consumedCut");
            long commit = consumed.canConvertToLong() ? smallCommit(key, consumed.asLong()) : 0;
            cuts.put(key, commit > 0 ? commit : source.path("latestCut").asLong());
            if (commit > 0) {
                ((ObjectNode) source).put("consumedCut", commit - 1);
            } else {
                ((ObjectNode) source).putNull("consumedCut");  // no commit to step over: analyzed only
            }
        }
        String cutsJson = CatalogRestClient.JSON.valueToTree(cuts).toString();
        JsonNode described = client.get(CatalogRestClient.tablePath(table[0], table[1]));
        REHEARSAL.set(Boolean.TRUE);
        try {
            String method = write(table, mt, cuts, "dry-run", cutsJson, described, false);
            return new Outcome("dry run", null, cutsJson, System.currentTimeMillis() - started, method);
        } catch (Exception e) {  // Spark's AnalysisException is checked, thrown undeclared
            throw failed(table, e);
        } finally {
            REHEARSAL.remove();
        }
    }

    /**
     * A dry run's write: on a local master, Spark's Parquet writer (the table's native write's, with the session's
     * codec) into a temporary directory deleted at once; on a cluster (no directory all executors share), Spark's
     * noop sink.
     */
    private static void rehearseWrite(SparkSession spark, Dataset<Row> result) {
        if (!spark.sparkContext().isLocal()) {
            result.write().format("noop").mode("overwrite").save();
            return;
        }
        java.nio.file.Path dir;
        try {
            dir = java.nio.file.Files.createTempDirectory("streamcat-dry-run-");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        try {
            result.write().mode("overwrite").parquet(dir.toUri().toString());
        } finally {
            try (var paths = java.nio.file.Files.walk(dir)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (java.io.IOException e) {
                // left in the system's temporary directory, which is cleaned up anyway
            }
        }
    }

    /** Of a source's last consumed commits (to {@code consumed}), the latest of fewest rows, no compaction; or 0. */
    private long smallCommit(String source, long consumed) {
        String[] parts = source.split("\\.", 2);
        long chosen = 0;
        long fewest = Long.MAX_VALUE;
        String commits = CatalogRestClient.streamPath(parts[0], parts[1]) + "/commits?after="
                + Math.max(0, consumed - REHEARSAL_WINDOW) + "&limit=" + REHEARSAL_WINDOW;
        for (JsonNode c : client.get(commits).path("commits")) {
            long number = c.path("number").asLong();
            if (number <= consumed && !"compaction".equals(c.path("kind").asText())
                    && c.path("eventCount").asLong() <= fewest) {
                fewest = c.path("eventCount").asLong();
                chosen = number;
            }
        }
        return chosen;
    }

    /** Incremental plans made on each session, by what they depend on (see {@link #plan}). */
    private static final Map<SparkSession, Map<String, IncrementalRefresh.Plan>> PLANS = new WeakHashMap<>();
    private static final int PLANS_PER_SESSION = 256;

    /**
     * How continuous mode maintains the query ({@link IncrementalRefresh#analyze}), remembered per session when
     * incremental: such a plan depends only on the query's text, the catalog and namespace it is analyzed
     * in, and its one source's schema, so a refresher's steps analyze the query once instead of each time.
     */
    private IncrementalRefresh.Plan plan(SparkSession spark, String query, List<String> sources, JsonNode source) {
        if (source == null) {
            return IncrementalRefresh.analyze(spark, catalog, query, sources);
        }
        String key = String.join("\u0000", catalog, spark.catalog().currentCatalog(),
                spark.catalog().currentDatabase(), query, sources.get(0), source.path("schema").toString());
        Map<String, IncrementalRefresh.Plan> plans;
        synchronized (PLANS) {
            plans = PLANS.computeIfAbsent(spark, s -> new LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, IncrementalRefresh.Plan> eldest) {
                    return size() > PLANS_PER_SESSION;
                }
            });
            IncrementalRefresh.Plan known = plans.get(key);
            if (known != null) {
                return known;
            }
        }
        IncrementalRefresh.Plan plan = IncrementalRefresh.analyze(spark, catalog, query, sources);
        if (plan.incremental()) {
            synchronized (PLANS) {
                plans.put(key, plan);
            }
        }
        return plan;
    }

    /** Table properties bounding a deltas table's uncompacted rows: a fraction of its base's rows, a number. */
    static final String DELTA_RATIO_PROPERTY = "compaction.delta-rows-ratio";
    static final String DELTA_MIN_PROPERTY = "compaction.delta-rows-min";
    static final double DEFAULT_DELTA_RATIO = 0.1;
    static final double DEFAULT_DELTA_MIN = 100_000;

    /**
     * Compacts a table whose steps write changed groups' deltas once the rows of the commits after its base
     * (its oldest visible chunks: the last compaction's output or full refresh) exceed both {@code
     * compaction.delta-rows-ratio} (default 0.1) of the base's rows and {@code compaction.delta-rows-min}
     * (default 100,000): a read merges every visible row, so this bounds what deltas add to it, and a small
     * table is not compacted after every step (docs/materialized-tables.md, "What a step costs"). Runs while
     * the lease is held, so that no step of another refresher races the compaction's commit.
     */
    private void compactIfDue(String[] table, long commit) {
        JsonNode properties = client.get(CatalogRestClient.tablePath(table[0], table[1])).path("properties");
        double ratio = number(properties, DELTA_RATIO_PROPERTY, DEFAULT_DELTA_RATIO);
        double least = number(properties, DELTA_MIN_PROPERTY, DEFAULT_DELTA_MIN);
        JsonNode chunks = client.get(CatalogRestClient.streamPath(table[0], table[1]) + "/chunks?streamCut=" + commit)
                .path("chunks");
        long first = Long.MAX_VALUE;
        for (JsonNode c : chunks) {
            first = Math.min(first, c.path("sequence").asLong(c.path("commit").asLong()));
        }
        long baseRows = 0;
        long deltaRows = 0;
        for (JsonNode c : chunks) {
            if (c.path("sequence").asLong(c.path("commit").asLong()) == first) {
                baseRows += c.path("eventCount").asLong();
            } else {
                deltaRows += c.path("eventCount").asLong();
            }
        }
        if (deltaRows > Math.max(ratio * baseRows, least)) {
            try {
                SparkSession.active().sql("CALL " + quoted(catalog) + ".system.compact(table => :table)",
                        Map.<String, Object>of("table", table[0] + "." + table[1])).collect();
            } catch (Exception e) {
                // Exception: Spark's checked exceptions come undeclared. The step is committed and stays a
                // success; the deltas are still past the bound, so the next step compacts again.
                LOG.warn("Streamcat: the compaction of materialized table {}.{} after its step failed: {}",
                        table[0], table[1], firstLine(e));
            }
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(
            StreamcatMaterialized.class);

    /** A table property's number, or {@code fallback} when it is not set or not a number. */
    private static double number(JsonNode properties, String name, double fallback) {
        try {
            return Double.parseDouble(properties.path(name).asText("").strip());
        } catch (NumberFormatException e) {
            return fallback;
        }
    }

    /** Whether the commits of a source in (from, to] only add rows: appends to an append table. */
    private boolean onlyAdds(JsonNode table, String[] source, long from, long to) {
        if (!StreamcatCatalog.primaryKeyOf(table).isEmpty()) {
            return false;  // an upsert may replace a row: only the feed tells
        }
        JsonNode changes = client.get(CatalogRestClient.streamPath(source[0], source[1]) + "/changes?after=" + from
                + "&to=" + to).path("changes");
        for (JsonNode change : changes) {
            if (!"append".equals(change.path("kind").asText()) || change.path("removed").size() > 0) {
                return false;
            }
        }
        return true;
    }

    /** Renews the lease every third of its life while a refresh runs; remembers a renewal that was refused. */
    private final class Heartbeat implements Runnable {
        private final String[] table;
        private final String holder;
        private final long leaseMs;
        private final AtomicReference<RuntimeException> lost = new AtomicReference<>();
        private volatile boolean running = true;
        private Thread thread;

        Heartbeat(String[] table, String holder, long leaseMs) {
            this.table = table;
            this.holder = holder;
            this.leaseMs = leaseMs;
        }

        void start() {
            thread = new Thread(this, "streamcat-lease-" + table[0] + "." + table[1]);
            thread.setDaemon(true);
            thread.start();
        }

        void stop() {
            running = false;
            thread.interrupt();
        }

        /** Fails when the lease was lost while the refresh ran. */
        void check() {
            RuntimeException e = lost.get();
            if (e != null) {
                throw new IllegalStateException("the refresh lost its lease: " + e.getMessage(), e);
            }
        }

        @Override
        public void run() {
            while (running) {
                try {
                    Thread.sleep(Math.max(100, leaseMs / 3));
                } catch (InterruptedException e) {
                    return;
                }
                if (!running) {
                    return;
                }
                try {
                    lease(table, holder, leaseMs);
                } catch (RuntimeException e) {
                    lost.compareAndSet(null, e);
                }
            }
        }
    }

    /** Materialized-table facts for DESCRIBE TABLE EXTENDED, as table properties; empty if the server has none. */
    Map<String, String> describe(String scope, String name) {
        Map<String, String> out = new LinkedHashMap<>();
        JsonNode mt;
        try {
            mt = client.get(path(new String[] {scope, name}));
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                return out;
            }
            throw e;
        }
        out.put("materialized.query", mt.path("queryText").asText());
        List<String> sources = new ArrayList<>();
        Map<String, Long> cuts = new LinkedHashMap<>();
        for (JsonNode s : mt.path("sources")) {
            String key = s.path("scopeName").asText() + "." + s.path("tableName").asText();
            sources.add(key);
            if (!s.path("consumedCut").isNull()) {
                cuts.put(key, s.path("consumedCut").asLong());
            }
        }
        out.put("materialized.sources", String.join(",", sources));
        out.put("materialized.freshness", mt.path("freshnessMs").asLong() / 1000.0 + " seconds");
        out.put("materialized.refresh_mode", mt.path("refreshMode").asText());
        String effective = mt.path("effectiveRefreshMode").asText();
        // How continuous mode maintains the query is decided by each refresh (it analyzes the query on Spark)
        // and recorded in its commit; the server answers the last one's.
        String plan = mt.path("incrementalPlan").asText("");
        out.put("materialized.effective_refresh_mode", "continuous".equals(effective) && !plan.isEmpty()
                ? "continuous (" + plan + ")" : effective);
        out.put("materialized.status", mt.path("status").asText());
        out.put("materialized.cuts", CatalogRestClient.JSON.valueToTree(cuts).toString());
        out.put("materialized.refresh_commit", mt.path("refreshCommit").asText());
        out.put("materialized.last_refresh_at", isoTime(mt.path("lastRefreshAt")));
        out.put("materialized.last_refresh_duration_ms", mt.path("lastRefreshDurationMs").asText("null"));
        out.put("materialized.last_refresh_method", mt.path("lastRefreshMethod").asText("null"));
        out.put("materialized.lag", mt.path("lagMs").asLong() / 1000.0 + " seconds");
        out.put("materialized.stale", mt.path("stale").asText());
        // the server's MaterializedTable.next_refresh_at: full mode at multiples of the freshness since the epoch
        out.put("materialized.next_refresh_at", isoTime(mt.path("nextRefreshAt")));
        if (!mt.path("options").isEmpty()) {
            out.put("materialized.options", mt.path("options").toString());
        }
        if (!mt.path("lastError").isNull()) {
            out.put("materialized.last_error", mt.path("lastError").asText());
            out.put("materialized.last_error_at", isoTime(mt.path("lastErrorAt")));
        }
        return out;
    }

    /** A time of the server (epoch milliseconds) as ISO-8601 UTC text, {@code null} when there is none. */
    private static String isoTime(JsonNode millis) {
        return millis.canConvertToLong() ? java.time.Instant.ofEpochMilli(millis.asLong()).toString() : "null";
    }

}
