package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Changelog;
import org.apache.spark.sql.connector.catalog.ChangelogContext;
import org.apache.spark.sql.connector.catalog.ChangelogRange;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.Relation;
import org.apache.spark.sql.connector.catalog.RelationCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableCatalogCapability;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;
import org.apache.spark.sql.connector.catalog.constraints.PrimaryKey;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The Streamcat catalog for Spark: databases are scopes, tables are streams with a schema group.
 *
 * <pre>
 * spark.sql.catalog.streamcat       streamcat.spark.StreamcatCatalog
 * spark.sql.catalog.streamcat.uri   http://localhost:9092
 * </pre>
 *
 * plus, for a server that wants them, credentials and TLS settings ({@link CatalogCredentials}).
 *
 * Metadata calls go to the catalog REST API; table data goes through the project's Python data
 * source (see {@link StreamcatTable}). Schema conversion happens on the server: this shim only
 * sends and receives Spark's StructType JSON.
 */
public class StreamcatCatalog implements RelationCatalog, SupportsNamespaces, ProcedureCatalog {
    /** Table formats, as USING names them. */
    static final Set<String> FORMATS = Set.of("avro", "protobuf", "json");
    /** Marks tables created with an explicit LOCATION: DROP TABLE keeps their files. */
    static final String EXTERNAL = "streamcat.external";
    static final String SEGMENTS = "segments";
    /** The table property that declares a primary key (docs/changelog-tables.md). */
    static final String PRIMARY_KEY = "primary-key";
    /** The name a PRIMARY KEY constraint was declared with (SHOW CREATE TABLE repeats it). */
    static final String PRIMARY_KEY_NAME = "primary-key.constraint";

    private String name;
    private CatalogRestClient client;
    private CatalogCredentials credentials;
    /** Whether scans may use Spark's own Parquet reader (catalog option {@code native-scan}, default true). */
    private boolean nativeScan = true;
    private boolean nativeWrite = true;
    private StreamcatProcedures procedures;
    private StreamcatViews views;
    private StreamcatMaterialized materialized;

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
        String uri = options.get("uri");
        if (uri == null || uri.isBlank()) {
            throw Refusal.invalid("spark.sql.catalog." + name + ".uri must name the streamcat server, "
                    + "e.g. http://localhost:9092");
        }
        long timeout = Long.parseLong(options.getOrDefault("timeout", "60"));
        this.credentials = CatalogCredentials.from(name, options);
        this.nativeScan = !"false".equalsIgnoreCase(options.getOrDefault(NativeScan.CATALOG_OPTION, "true").trim());
        this.nativeWrite = !"false".equalsIgnoreCase(options.getOrDefault(NativeWrite.CATALOG_OPTION, "true").trim());
        this.client = new CatalogRestClient(uri, Duration.ofSeconds(timeout), credentials);
        this.materialized = new StreamcatMaterialized(name, client);
        this.procedures = new StreamcatProcedures(name, client, materialized);
        this.views = new StreamcatViews(client);
    }

    @Override
    public Set<TableCatalogCapability> capabilities() {
        // Column defaults are kept in the columns' metadata (CURRENT_DEFAULT, EXISTS_DEFAULT) on the server, which
        // refuses any that is not a literal: every reader, Spark or not, fills EXISTS_DEFAULT into older rows.
        return Set.of(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT,
                TableCatalogCapability.SUPPORT_COLUMN_DEFAULT_VALUE);
    }

    @Override
    public String name() {
        return name;
    }

    // -- namespaces (scopes) -------------------------------------------------------------------


    private static String tablePath(Identifier ident) {
        return CatalogRestClient.tablePath(ident.namespace()[0], ident.name());
    }

    @Override
    public String[][] listNamespaces() {
        List<JsonNode> scopes = client.pages(CatalogRestClient.scopesPath(), "scopes");
        String[][] out = new String[scopes.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = new String[] {scopes.get(i).path("scopeName").asText()};
        }
        return out;
    }

    @Override
    public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length == 0) {
            return listNamespaces();
        }
        loadNamespaceMetadata(namespace);
        return new String[0][];  // scopes do not nest
    }

    @Override
    public boolean namespaceExists(String[] namespace) {
        if (namespace.length != 1) {
            return false;
        }
        try {
            client.get(CatalogRestClient.scopePath(namespace[0]));
            return true;
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        JsonNode scope;
        try {
            scope = client.get(CatalogRestClient.scopePath(namespace[0]));
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchNamespaceException(namespace);
            }
            throw e;
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        scope.path("properties").fields().forEachRemaining(e -> metadata.put(e.getKey(), e.getValue().asText()));
        String comment = scope.path("comment").asText("");
        if (!comment.isEmpty()) {
            metadata.put(SupportsNamespaces.PROP_COMMENT, comment);
        }
        return metadata;
    }

    @Override
    public void createNamespace(String[] namespace, Map<String, String> metadata)
            throws NamespaceAlreadyExistsException {
        if (namespace.length != 1) {
            throw Refusal.invalid("streamcat namespaces (scopes) have one level, not "
                    + String.join(".", namespace));
        }
        Map<String, String> properties = new HashMap<>(metadata);
        String comment = properties.remove(SupportsNamespaces.PROP_COMMENT);
        ObjectNode body = CatalogRestClient.object().put("scopeName", namespace[0]);
        body.put("comment", comment == null ? "" : comment);
        body.set("properties", CatalogRestClient.stringMap(properties));
        try {
            client.call("POST", CatalogRestClient.scopesPath(), body);
        } catch (CatalogApiException e) {
            if (e.isConflict()) {
                throw new NamespaceAlreadyExistsException(namespace);
            }
            throw e;
        }
    }

    @Override
    public void alterNamespace(String[] namespace, NamespaceChange... changes) throws NoSuchNamespaceException {
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        ObjectNode set = CatalogRestClient.object();
        List<String> remove = new ArrayList<>();
        String comment = null;
        for (NamespaceChange change : changes) {
            if (change instanceof NamespaceChange.SetProperty p) {
                if (SupportsNamespaces.PROP_COMMENT.equals(p.property())) {
                    comment = p.value();
                } else {
                    set.put(p.property(), p.value());
                }
            } else if (change instanceof NamespaceChange.RemoveProperty p) {
                if (SupportsNamespaces.PROP_COMMENT.equals(p.property())) {
                    comment = "";
                } else {
                    remove.add(p.property());
                }
            } else {
                throw Refusal.unsupported("streamcat scopes do not support " + change);
            }
        }
        ObjectNode body = CatalogRestClient.object();
        body.set("properties", set);
        body.set("removeProperties", CatalogRestClient.JSON.valueToTree(remove));
        if (comment != null) {
            body.put("comment", comment);
        }
        try {
            client.call("PUT", CatalogRestClient.scopePath(namespace[0]), body);
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchNamespaceException(namespace);
            }
            throw e;
        }
    }

    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade)
            throws NoSuchNamespaceException, NonEmptyNamespaceException {
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        // CASCADE drops the tables as DROP TABLE would: their files go too.
        String query = "?cascade=" + cascade + "&purge=" + cascade;
        try {
            client.call("DELETE", CatalogRestClient.scopePath(namespace[0]) + query, null);
            return true;
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchNamespaceException(namespace);
            }
            if ("ScopeNotEmpty".equals(e.code)) {
                throw new NonEmptyNamespaceException(namespace);
            }
            throw e;
        }
    }

    // -- tables ------------------------------------------------------------------------------------

    @Override
    public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        List<JsonNode> tables;
        try {
            tables = client.pages(CatalogRestClient.tablesPath(namespace[0]), "tables");
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchNamespaceException(namespace);
            }
            throw e;
        }
        Identifier[] out = new Identifier[tables.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Identifier.of(namespace, tables.get(i).path("tableName").asText());
        }
        return out;
    }

    private JsonNode getTable(Identifier ident) throws NoSuchTableException {
        if (ident.namespace().length != 1) {
            throw new NoSuchTableException(ident);
        }
        try {
            return client.get(tablePath(ident));
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchTableException(ident);
            }
            throw e;
        }
    }

    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        StreamcatTable table = toTable(ident, getTable(ident));
        // A materialized table's refresh reads its sources at the cuts it records (StreamcatMaterialized).
        Long pinned = StreamcatMaterialized.loaded(name, ident);
        return pinned == null ? table : table.at(OptionKeys.CUT, Long.toString(pinned));
    }

    /** {@code VERSION AS OF n}: the table as of commit n (a stream cut), one its stream still retains. */
    @Override
    public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
        JsonNode table = getTable(ident);
        long cut = version(ident, "VERSION AS OF", version, table);
        return toTable(ident, table).at(OptionKeys.CUT, Long.toString(cut));
    }

    /** {@code version} as a cut of the table that its stream still retains, or a refusal naming the table. */
    private long version(Identifier ident, String clause, String version, JsonNode table) {
        long cut;
        try {
            cut = Long.parseLong(version.trim());
        } catch (NumberFormatException e) {
            throw Refusal.invalid(clause + " '" + version + "' of " + qualified(ident)
                    + ": a version is a commit number of the table's stream");
        }
        JsonNode stream = table.path("stream");
        long last = stream.path("lastCommit").asLong(0);
        long retained = stream.path("retainedFrom").asLong(0);
        if (cut > last || cut < 0) {
            throw Refusal.invalid(clause + " " + cut + " of " + qualified(ident) + ": the table's versions are "
                    + (last == 0 ? "0 only (nothing committed yet)" : retained + " to " + last + " (its latest commit)"));
        }
        if (cut < retained) {
            throw Refusal.invalid(clause + " " + cut + " of " + qualified(ident) + ": version " + cut
                    + " has expired; the table keeps versions " + retained + " to " + last);
        }
        return cut;
    }

    /** The table as SQL names it in this catalog: {@code streamcat.shop.orders}. */
    private String qualified(Identifier ident) {
        return name + "." + String.join(".", ident.namespace()) + "." + ident.name();
    }

    /** {@code TIMESTAMP AS OF t}: the table as of its last commit at or before t (microseconds). */
    @Override
    public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
        return toTable(ident, getTable(ident)).at(OptionKeys.AS_OF_TIME, Long.toString(Math.floorDiv(timestamp, 1000L)));
    }

    private StreamcatTable toTable(Identifier ident, JsonNode json) {
        // A schema made before its table's first column change has no field ids yet: it gets the ones that
        // change will give it, so that Spark's writers put them in every file from the first on.
        StructType schema = FieldIds.withPositionalIds((StructType) DataType.fromJson(json.path("schema").toString()));
        JsonNode stream = json.path("stream");
        JsonNode version = json.path("schemaVersion");
        Map<String, String> properties = properties(json);
        if (AggregationState.loadsWithState(ident)) {
            schema = AggregationState.withState(schema, properties);
        }
        properties.put(TableCatalog.PROP_PROVIDER, json.path("format").asText());
        properties.put(TableCatalog.PROP_LOCATION, stream.path("location").asText());
        String comment = json.path("comment").asText("");
        if (!comment.isEmpty()) {
            properties.put(TableCatalog.PROP_COMMENT, comment);
        }
        JsonNode compatibility = json.path("compatibility");
        properties.put("compatibility", "Advanced".equals(compatibility.path("policy").asText())
                ? compatibility.toString() : compatibility.path("policy").asText());
        properties.put(SEGMENTS, stream.path("scalingPolicy").path("minSegments").asText("1"));
        properties.put(OptionKeys.SCHEMA_VERSION, version.path("version").asText());
        properties.put(OptionKeys.SCHEMA_ID, version.path("id").asText());
        properties.put("streamcat.table.version", json.path("version").asText());
        Constraints.putChecks(json, properties);
        if (StreamcatMaterialized.isMaterialized(properties)) {
            properties.putAll(materialized.describe(ident.namespace()[0], ident.name()));
        }

        Map<String, String> options = new HashMap<>();
        options.put("uri", client.uri());
        options.put("scope", ident.namespace()[0]);
        options.put("stream", ident.name());
        options.put("location", stream.path("location").asText());
        options.put("format", json.path("format").asText());
        options.put(OptionKeys.SCHEMA_TYPE, version.path("type").asText());
        options.put(OptionKeys.SCHEMA_VERSION, version.path("version").asText());
        options.put(OptionKeys.SCHEMA_ID, version.path("id").asText());
        // Credentials go to the Python source's options only, never into the properties DESCRIBE shows.
        options.putAll(credentials.sourceOptions());
        if (!nativeScan) {
            options.put(OptionKeys.NATIVE_SCAN, "false");
        }
        if (!nativeWrite) {
            options.put(OptionKeys.NATIVE_WRITE, "false");
        }
        String qualified = name + "." + ident.namespace()[0] + "." + ident.name();
        List<String> key = primaryKeyOf(json);
        String constraint = json.path("properties").path(PRIMARY_KEY_NAME).asText(ident.name() + "_pk");
        TableState state = new TableState(key, constraint, stream.path("lastCommit").asLong(0), client,
                CatalogRestClient.streamPath(ident.namespace()[0], ident.name()),
                tablePath(ident), json.path("partitionSpec"));
        return new StreamcatTable(qualified, schema, properties, options, state);
    }

    /** The properties of a table answer of the server, as set (without those the catalog adds for Spark). */
    static Map<String, String> properties(JsonNode table) {
        Map<String, String> properties = new LinkedHashMap<>();
        table.path("properties").fields().forEachRemaining(e -> properties.put(e.getKey(), e.getValue().asText()));
        return properties;
    }

    /** The key columns of a table answer of the server (empty for an append table). */
    static List<String> primaryKeyOf(JsonNode table) {
        List<String> key = new ArrayList<>();
        table.path("primaryKey").forEach(column -> key.add(column.asText()));
        if (key.isEmpty()) {
            for (String column : table.path("properties").path(PRIMARY_KEY).asText("").split(",")) {
                if (!column.isBlank()) {
                    key.add(column.trim());
                }
            }
        }
        return key;
    }

    private static StructType structOf(Column[] columns) {
        List<StructField> fields = new ArrayList<>();
        for (Column column : columns) {
            if (column.generationExpression() != null || column.identityColumnSpec() != null) {
                throw Refusal.unsupported(
                        "streamcat tables do not support generated or identity columns (column " + column.name() + ")");
            }
            MetadataBuilder metadata = new MetadataBuilder();
            if (column.metadataInJSON() != null) {
                metadata.withMetadata(Metadata.fromJson(column.metadataInJSON()));
                // A new table's columns are new: ids they carry from a query's source tables mean nothing here.
                metadata.remove(FieldIds.FIELD_ID);
            }
            if (column.comment() != null) {
                metadata.putString("comment", column.comment());
            }
            if (column.defaultValue() != null) {
                TableChanges.putDefaults(metadata, column);
            }
            fields.add(new StructField(column.name(), column.dataType(), column.nullable(), metadata.build()));
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    /**
     * CREATE TABLE with constraints: a PRIMARY KEY becomes the 'primary-key' property, a CHECK a property of
     * {@link Constraints}; others are refused.
     */
    @Override
    public Table createTable(Identifier ident, TableInfo info) throws TableAlreadyExistsException,
            NoSuchNamespaceException {
        Map<String, String> properties = new LinkedHashMap<>(info.properties());
        for (Constraint constraint : info.constraints()) {
            if (Constraints.put(constraint, properties)) {
                continue;
            }
            if (!(constraint instanceof PrimaryKey key)) {
                throw Refusal.unsupported("cannot create " + qualified(ident) + ": streamcat tables support "
                        + "PRIMARY KEY and CHECK constraints only, not " + constraint.toDDL());
            }
            List<String> columns = new ArrayList<>();
            for (NamedReference column : key.columns()) {
                columns.add(String.join(".", column.fieldNames()));
            }
            String declared = properties.get(PRIMARY_KEY);
            if (declared != null && !declared.replace(" ", "").equals(String.join(",", columns))) {
                throw Refusal.invalid(qualified(ident) + " declares two different primary keys: CONSTRAINT "
                        + key.name() + " PRIMARY KEY (" + String.join(", ", columns) + ") and TBLPROPERTIES '"
                        + PRIMARY_KEY + "' = '" + declared + "'");
            }
            properties.put(PRIMARY_KEY, String.join(",", columns));
            if (key.name() != null && !key.name().isBlank()) {
                properties.put(PRIMARY_KEY_NAME, key.name());
            }
        }
        return createTable(ident, info.columns(), info.partitions(), properties);
    }

    @Override
    public Table createTable(Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        if (ident.namespace().length != 1) {
            throw new NoSuchNamespaceException(ident.namespace());
        }
        if (views.exists(ident)) {
            // Tables and views share one name space per scope (StreamcatViews).
            throw new TableAlreadyExistsException(ident);
        }
        Map<String, String> props = new LinkedHashMap<>(properties);
        String provider = props.remove(TableCatalog.PROP_PROVIDER);
        String format = provider == null ? "avro" : provider.toLowerCase(Locale.ROOT);
        if (!FORMATS.contains(format)) {
            throw Refusal.invalid("cannot create " + qualified(ident) + " USING " + provider + ": streamcat "
                    + "tables are USING avro (the default), protobuf or json (DataFrameWriter.saveAsTable names spark.sql.sources.default when it is given no "
                    + "format: add .format(\"avro\"), or use df.writeTo(...))");
        }
        String location = props.remove(TableCatalog.PROP_LOCATION);
        String path = props.remove(TableCatalog.OPTION_PREFIX + "path");
        if (location == null) {
            location = path;
        }
        String comment = props.remove(TableCatalog.PROP_COMMENT);
        props.remove(TableCatalog.PROP_EXTERNAL);
        props.remove(TableCatalog.PROP_IS_MANAGED_LOCATION);
        String segments = props.remove(SEGMENTS);
        if (location != null) {
            props.put(EXTERNAL, "true");
        }
        ObjectNode body = CatalogRestClient.object().put("tableName", ident.name());
        body.set("schema", CatalogRestClient.parse(structOf(columns).json()));
        body.put("format", format);
        body.put("comment", comment == null ? "" : comment);
        body.set("properties", CatalogRestClient.stringMap(props));
        if (partitions.length > 0) {
            // PARTITIONED BY as Spark describes it (days(ts), bucket(8, id), region): the server parses and checks it.
            body.put("partitioning", Partitioning.text(partitions));
        }
        if (segments != null) {
            int count;
            try {
                count = Integer.parseInt(segments.trim());
            } catch (NumberFormatException e) {
                throw Refusal.invalid("cannot create " + qualified(ident) + ": TBLPROPERTIES 'segments' must be a "
                        + "number, not '" + segments + "'");
            }
            body.set("scalingPolicy", CatalogRestClient.object().put("minSegments", count));
        }
        if (location != null) {
            body.put("location", location);
        }
        try {
            return toTable(ident, client.call("POST", CatalogRestClient.tablesPath(ident.namespace()[0]), body));
        } catch (CatalogApiException e) {
            if (e.isConflict() && "AlreadyExists".equals(e.code)) {
                throw new TableAlreadyExistsException(ident);
            }
            if (e.isNotFound()) {
                throw new NoSuchNamespaceException(ident.namespace());
            }
            throw e;
        }
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
        if (ident.namespace().length != 1) {
            throw new NoSuchTableException(ident);
        }
        ObjectNode body = CatalogRestClient.object();
        body.set("changes", TableChanges.toJson(changes));
        try {
            return toTable(ident, client.call("PATCH", tablePath(ident), body));
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchTableException(ident);
            }
            throw e;
        }
    }

    @Override
    public boolean dropTable(Identifier ident) {
        JsonNode table;
        try {
            table = getTable(ident);
        } catch (NoSuchTableException e) {
            return false;
        }
        // Like a managed table, a table stored at the catalog's own location takes its files along.
        boolean external = "true".equals(table.path("properties").path(EXTERNAL).asText());
        return drop(ident, !external);
    }

    @Override
    public boolean purgeTable(Identifier ident) {
        return drop(ident, true);
    }

    private boolean drop(Identifier ident, boolean purge) {
        if (ident.namespace().length != 1) {
            return false;
        }
        try {
            client.call("DELETE", tablePath(ident) + "?purge=" + purge, null);
            return true;
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                return false;
            }
            throw e;
        }
    }

    /**
     * The change feed of a table between two versions or times ({@link StreamcatChangelog}); a range that
     * is reversed, empty, or reaches past the latest commit is refused with the table's versions.
     */
    @Override
    public Changelog loadChangelog(Identifier ident, ChangelogContext context, CaseInsensitiveStringMap options)
            throws NoSuchTableException {
        JsonNode table = getTable(ident);
        ChangelogRange range = context.range();
        if (range instanceof ChangelogRange.VersionRange v) {
            long from = version(ident, "CHANGES FROM VERSION", v.startingVersion(), table);
            if (v.endingVersion().isPresent()) {
                long to = version(ident, "CHANGES TO VERSION", v.endingVersion().get(), table);
                checkRange(ident, "VERSION " + from, "VERSION " + to, Long.compare(from, to), range);
            }
        } else if (range instanceof ChangelogRange.TimestampRange t && t.endingTimestamp().isPresent()) {
            checkRange(ident, "TIMESTAMP " + Instant.EPOCH.plus(t.startingTimestamp(), ChronoUnit.MICROS),
                    "TIMESTAMP " + Instant.EPOCH.plus(t.endingTimestamp().get(), ChronoUnit.MICROS),
                    Long.compare(t.startingTimestamp(), t.endingTimestamp().get()), range);
        }
        return new StreamcatChangelog(toTable(ident, table), context);
    }

    /** Refuses a change feed range whose start ({@code order} against its end) leaves nothing in it. */
    private void checkRange(Identifier ident, String from, String to, int order, ChangelogRange range) {
        boolean bothInclusive = range.startingBoundInclusive() && range.endingBoundInclusive();
        if (order > 0 || (order == 0 && !bothInclusive)) {
            throw Refusal.invalid("CHANGES FROM " + from + " TO " + to + " of " + qualified(ident) + (order > 0
                    ? " is a reversed range: it starts after it ends" : " is an empty range: its one version is a "
                    + "bound it excludes") + ", so it holds no change");
        }
    }

    @Override
    public UnboundProcedure loadProcedure(Identifier ident) {
        return procedures.load(ident);
    }

    @Override
    public Identifier[] listProcedures(String[] namespace) {
        return procedures.list(namespace);
    }

    // -- views ({@link StreamcatViews}) ----------------------------------------------------------------

    /**
     * A table or else a view of that name (Spark 4.3 wants a catalog of both to be a RelationCatalog,
     * and resolves names through this): tables cost one request, views two.
     */
    @Override
    public Relation loadRelation(Identifier ident) throws NoSuchTableException {
        try {
            return loadTable(ident);
        } catch (NoSuchTableException notATable) {
            try {
                return views.load(ident);
            } catch (NoSuchViewException notAView) {
                throw notATable;
            }
        }
    }

    @Override
    public Identifier[] listViews(String[] namespace) throws NoSuchNamespaceException {
        return views.list(namespace);
    }

    @Override
    public View loadView(Identifier ident) throws NoSuchViewException {
        return views.load(ident);
    }

    @Override
    public View createView(Identifier ident, View view) throws ViewAlreadyExistsException, NoSuchNamespaceException {
        try {
            return views.put(ident, view, "create");
        } catch (NoSuchViewException e) {
            throw new IllegalStateException(e);  // a create never looks for an existing view
        }
    }

    @Override
    public View replaceView(Identifier ident, View view) throws NoSuchViewException {
        try {
            return views.put(ident, view, "replace");
        } catch (ViewAlreadyExistsException | NoSuchNamespaceException e) {
            throw new NoSuchViewException(ident);
        }
    }

    /** One request, so that a concurrent CREATE cannot slip between a check and the create. */
    @Override
    public View createOrReplaceView(Identifier ident, View view)
            throws ViewAlreadyExistsException, NoSuchNamespaceException {
        try {
            return views.put(ident, view, "createOrReplace");
        } catch (NoSuchViewException e) {
            throw new IllegalStateException(e);  // createOrReplace never needs an existing view
        }
    }

    @Override
    public boolean dropView(Identifier ident) {
        return views.drop(ident);
    }

    @Override
    public void renameView(Identifier oldIdent, Identifier newIdent)
            throws NoSuchViewException, ViewAlreadyExistsException {
        views.rename(oldIdent, newIdent);
    }

    @Override
    public void renameTable(Identifier oldIdent, Identifier newIdent) {
        throw Refusal.unsupported("cannot rename " + qualified(oldIdent) + ": a table's name is also the name of "
                + "its stream and of its schema group, which producers and readers use. Copy it instead: "
                + "CREATE TABLE " + (newIdent.namespace().length == 1 ? qualified(newIdent) : newIdent) + " AS SELECT * FROM " + qualified(oldIdent)
                + ", then DROP TABLE " + qualified(oldIdent));
    }
}
