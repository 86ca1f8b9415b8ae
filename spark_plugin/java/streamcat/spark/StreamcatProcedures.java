package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The catalog's procedures, in namespace {@code system} ({@code CALL streamcat.system.compact(...)}).
 *
 * <ul>
 *   <li>{@code compact(table => 'scope.table' [, rows_per_chunk => n])}: rewrites the table's chunks as
 *   large columnar chunks (key-sorted for a primary-key table, deletes applied) in one compaction
 *   commit, on this Spark session: the table read at its newest cut, written back with
 *   {@code streamcat.compact.base} so that the writer commits a compaction of that cut;</li>
 *   <li>{@code expire_snapshots(table => ... [, older_than => TIMESTAMP] [, retain_last => n])}: makes
 *   older cuts unreadable so that {@code streamcat streams gc} can delete the files only they need;</li>
 *   <li>{@code set_partitioning(table => ..., partitioning => 'months(ts), bucket(8, id)')}: a new current
 *   partition spec (docs/partitioning.md; {@code ''}: unpartitioned), old chunks keep theirs;</li>
 *   <li>{@code create_materialized_table}, {@code refresh_materialized_table}, {@code suspend_materialized_table},
 *   {@code resume_materialized_table}, {@code alter_materialized_table}: materialized tables
 *   ({@link StreamcatMaterialized}).</li>
 * </ul>
 */
final class StreamcatProcedures {
    static final String NAMESPACE = "system";
    private static final long DEFAULT_ROWS_PER_CHUNK = 1_000_000L;
    private static final long DEFAULT_AGE_MS = 5L * 24 * 3600 * 1000;

    private final String catalog;
    private final CatalogRestClient client;
    private final Map<String, UnboundProcedure> procedures = new LinkedHashMap<>();

    StreamcatProcedures(String catalog, CatalogRestClient client, StreamcatMaterialized materialized) {
        this.catalog = catalog;
        this.client = client;
        add(new Definition("compact",
                "Rewrite a table's chunks into large, key-sorted columnar chunks with deletes applied, in one "
                        + "compaction commit that changes no row and never conflicts with appends.",
                List.of(ProcedureParameter.in("table", DataTypes.StringType).comment("scope.table").build(),
                        ProcedureParameter.in("rows_per_chunk", DataTypes.LongType).defaultValue("1000000")
                                .comment("rows per written chunk").build()),
                new StructType().add("table", DataTypes.StringType).add("compacted_version", DataTypes.LongType)
                        .add("compaction_commit", DataTypes.LongType).add("rows", DataTypes.LongType)
                        .add("outcome", DataTypes.StringType),
                this::compact));
        add(new Definition("expire_snapshots",
                "Make the cuts of a table older than a time (keeping the last n) unreadable, so that "
                        + "`streamcat streams gc` may delete the files only they need; never a cut a registered "
                        + "reader still needs.",
                List.of(ProcedureParameter.in("table", DataTypes.StringType).comment("scope.table").build(),
                        ProcedureParameter.in("older_than", DataTypes.TimestampType).defaultValue("NULL")
                                .comment("expire cuts committed before this time (default: 5 days ago)").build(),
                        ProcedureParameter.in("retain_last", DataTypes.IntegerType).defaultValue("NULL")
                                .comment("always keep this many newest cuts (default: 1)").build()),
                new StructType().add("table", DataTypes.StringType).add("oldest_readable_version", DataTypes.LongType),
                this::expireSnapshots));
        add(new Definition("set_partitioning",
                "Make a partitioning (PARTITIONED BY's text: 'days(ts), bucket(8, id), region'; empty: "
                        + "unpartitioned) the table's current partition spec. Rows written from now on are split by "
                        + "it; chunks written before keep their spec and stay readable.",
                List.of(ProcedureParameter.in("table", DataTypes.StringType).comment("scope.table").build(),
                        ProcedureParameter.in("partitioning", DataTypes.StringType)
                                .comment("the transforms, as in PARTITIONED BY (...), comma-separated").build()),
                new StructType().add("table", DataTypes.StringType).add("spec_id", DataTypes.LongType)
                        .add("partitioning", DataTypes.StringType),
                this::setPartitioning));
        materialized.register((name, description, parameters, result, body) ->
                add(new Definition(name, description, parameters, result, body)), this::tableArgument);
    }

    private void add(Definition definition) {
        procedures.put(definition.name(), definition);
    }

    /**
     * A procedure's description followed by its parameters (name, type, default, comment): DESCRIBE PROCEDURE
     * of Spark 4.3 prints a procedure's name and description only, so this is where SQL users find them.
     */
    static String describe(String description, List<ProcedureParameter> parameters) {
        List<String> listed = new ArrayList<>();
        for (ProcedureParameter p : parameters) {
            String text = p.name() + " " + p.dataType().sql();
            if (p.defaultValue() == null) {
                text += " (required)";
            } else {
                text += " DEFAULT " + p.defaultValue().getSql();
            }
            if (p.comment() != null && !p.comment().isBlank()) {
                text += ": " + p.comment();
            }
            listed.add(text);
        }
        return description + " Parameters: " + String.join("; ", listed) + ".";
    }

    UnboundProcedure load(Identifier ident) {
        UnboundProcedure found = ident.namespace().length == 1 && NAMESPACE.equals(ident.namespace()[0])
                ? procedures.get(ident.name()) : null;
        if (found == null) {
            throw Refusal.notFound("streamcat has no procedure " + String.join(".", ident.namespace())
                    + "." + ident.name() + "; it has " + NAMESPACE + "." + String.join(", " + NAMESPACE + ".",
                    procedures.keySet()));
        }
        return found;
    }

    Identifier[] list(String[] namespace) {
        if (namespace.length != 1 || !NAMESPACE.equals(namespace[0])) {
            return new Identifier[0];
        }
        return procedures.keySet().stream().map(n -> Identifier.of(namespace, n)).toArray(Identifier[]::new);
    }

    /** 'scope.table' (or 'catalog.scope.table' naming this catalog) as [scope, table]. */
    private String[] tableArgument(InternalRow args) {
        if (args.isNullAt(0)) {
            throw new IllegalArgumentException("the procedure needs table => 'scope.table'");
        }
        String[] parts = args.getUTF8String(0).toString().split("\\.");
        if (parts.length == 3 && parts[0].equals(catalog)) {
            return new String[] {parts[1], parts[2]};
        }
        if (parts.length != 2 || parts[0].isBlank() || parts[1].isBlank()) {
            throw new IllegalArgumentException("table => must name a table as 'scope.table', not '"
                    + args.getUTF8String(0) + "'");
        }
        return parts;
    }

    private static String quoted(String catalog, String[] table) {
        return "`" + catalog.replace("`", "``") + "`.`" + table[0].replace("`", "``") + "`.`"
                + table[1].replace("`", "``") + "`";
    }

    private String streamPath(String[] table) {
        return CatalogRestClient.streamPath(table[0], table[1]);
    }

    private InternalRow[] compact(InternalRow args) {
        String[] table = tableArgument(args);
        long rowsPerChunk = args.isNullAt(1) ? DEFAULT_ROWS_PER_CHUNK : args.getLong(1);
        if (rowsPerChunk < 1) {
            throw new IllegalArgumentException("rows_per_chunk must be at least 1, not " + rowsPerChunk);
        }
        JsonNode info = client.get(CatalogRestClient.tablePath(table[0], table[1]));
        long base = info.path("stream").path("lastCommit").asLong();
        UTF8String name = UTF8String.fromString(table[0] + "." + table[1]);
        JsonNode snapshot = client.get(streamPath(table) + "/chunks?streamCut=" + base);
        long rows = 0;
        for (JsonNode chunk : snapshot.path("chunks")) {
            rows += chunk.path("eventCount").asLong();
        }
        if (base == 0) {
            return compacted(name, base, null, rows, "nothing to compact: " + name + " has no commit yet");
        }
        if (alreadyCompact(table, base)) {
            return compacted(name, base, null, rows, "nothing to compact at version " + base
                    + ": its newest commit is a compaction already");
        }
        List<String> key = StreamcatCatalog.primaryKeyOf(info);
        SparkSession spark = SparkSession.active();
        String target = quoted(catalog, table);
        int partitions = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (rows + rowsPerChunk - 1) / rowsPerChunk));
        // An aggregation table's hidden state (AggregationState) is read and written back with its columns.
        try (AggregationState.Scope withState = AggregationState.loadedWith(table[0] + "." + table[1])) {
            Dataset<Row> state = spark.sql("SELECT * FROM " + target + " VERSION AS OF " + base);
            if (!key.isEmpty()) {
                org.apache.spark.sql.Column[] columns = key.stream().map(state::col)
                        .toArray(org.apache.spark.sql.Column[]::new);
                state = state.repartitionByRange(partitions, columns).sortWithinPartitions(columns);
            } else {
                state = state.coalesce(partitions);
            }
            state.writeTo(target).option(OptionKeys.COMPACT_BASE, Long.toString(base))
                    .option("rowsPerChunk", Long.toString(rowsPerChunk)).append();
        } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
            throw Refusal.notFound("no table " + table[0] + "." + table[1]);
        }
        Long commit = null;
        for (JsonNode c : client.get(streamPath(table) + "/commits?after=" + base + "&limit=1000").path("commits")) {
            if ("compaction".equals(c.path("kind").asText()) && c.path("baseCut").asLong(-1) == base) {
                commit = c.path("number").asLong();
            }
        }
        return compacted(name, base, commit, rows, commit == null
                ? "nothing to compact at version " + base + ": a compaction of it was committed meanwhile"
                : "compacted version " + base + " into commit " + commit);
    }

    private static InternalRow[] compacted(UTF8String table, long base, Long commit, long rows, String outcome) {
        return new InternalRow[] {new GenericInternalRow(new Object[] {table, base, commit, rows,
            UTF8String.fromString(outcome)})};
    }

    /** Whether the newest commit at {@code base} is itself a compaction: then there is nothing to do. */
    private boolean alreadyCompact(String[] table, long base) {
        JsonNode commits = client.get(streamPath(table) + "/commits?after=" + (base - 1) + "&limit=1").path("commits");
        return commits.size() == 1 && "compaction".equals(commits.get(0).path("kind").asText());
    }

    private InternalRow[] expireSnapshots(InternalRow args) {
        String[] table = tableArgument(args);
        // Iceberg's defaults: cuts older than five days go, the newest one always stays.
        long olderThan = args.isNullAt(1) ? System.currentTimeMillis() - DEFAULT_AGE_MS
                : Math.floorDiv(args.getLong(1), 1000L);  // micros -> ms
        ObjectNode body = CatalogRestClient.object();
        body.put("olderThan", olderThan);
        body.put("retainLast", args.isNullAt(2) ? 1 : args.getInt(2));
        JsonNode stream = client.call("POST", streamPath(table) + "/expire", body);
        return new InternalRow[] {new GenericInternalRow(new Object[] {
            UTF8String.fromString(table[0] + "." + table[1]), stream.path("retainedFrom").asLong()})};
    }

    /** ALTER of the table's partition spec: {@code {"op": "setPartitioning", "partitioning": ...}}. */
    private InternalRow[] setPartitioning(InternalRow args) {
        String[] table = tableArgument(args);
        if (args.isNullAt(1)) {
            throw new IllegalArgumentException("set_partitioning needs partitioning => 'days(ts), bucket(8, id)' "
                    + "(the transforms of PARTITIONED BY; '' makes the table unpartitioned)");
        }
        ObjectNode change = TableChanges.setPartitioning(args.getUTF8String(1).toString().trim());
        ObjectNode body = CatalogRestClient.object();
        body.set("changes", CatalogRestClient.array().add(change));
        JsonNode answer;
        try {
            answer = client.call("PATCH", CatalogRestClient.tablePath(table[0], table[1]), body);
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw Refusal.notFound("no table " + table[0] + "." + table[1] + ": " + e.text());
            }
            if (e.status == 400 || e.status == 409) {
                throw Refusal.invalid("cannot partition " + table[0] + "." + table[1] + " by '"
                        + change.path("partitioning").asText() + "': " + e.text());
            }
            throw e;
        }
        invalidate(table);
        JsonNode spec = answer.path("partitionSpec");
        return new InternalRow[] {new GenericInternalRow(new Object[] {
            UTF8String.fromString(table[0] + "." + table[1]), spec.path("specId").asLong(0),
            UTF8String.fromString(spec.path("text").asText(""))})};
    }

    /** Spark's cached plans of the table read its old partitioning: forget them. */
    private void invalidate(String[] table) {
        try {
            SparkSession.active().catalog().refreshTable(quoted(catalog, table));
        } catch (RuntimeException e) {
            // nothing cached, or the table went: the next statement loads it afresh anyway
        }
    }

    /**
     * A procedure whose parameters are fixed: binding it only checks the arguments' types. Its description
     * lists its parameters ({@link #describe}); a refusal it makes reaches the user as one line ({@link Refusal}).
     */
    private record Definition(String name, String description, List<ProcedureParameter> declared, StructType result,
                              Function<InternalRow, InternalRow[]> body) implements UnboundProcedure, BoundProcedure {
        Definition {
            description = describe(description, declared);
        }

        @Override
        public BoundProcedure bind(StructType inputType) {
            return this;
        }

        @Override
        public ProcedureParameter[] parameters() {
            return declared.toArray(new ProcedureParameter[0]);
        }

        @Override
        public boolean isDeterministic() {
            return false;
        }

        @Override
        public Iterator<Scan> call(InternalRow input) {
            InternalRow[] rows;
            try {
                rows = body.apply(input);
            } catch (RuntimeException e) {
                String table = declared.isEmpty() || !"table".equals(declared.get(0).name()) || input.isNullAt(0)
                        ? "" : input.getUTF8String(0).toString();
                throw table.isEmpty() ? Refusal.shown(e) : Refusal.about(name + " of " + table, table, e);
            }
            return List.<Scan>of(new Result(result, rows)).iterator();
        }
    }

    /** A procedure's answer: a few rows. */
    private record Result(StructType readSchema, InternalRow[] rows) implements LocalScan {
        @Override
        public String description() {
            return "streamcat procedure result";
        }
    }

}
