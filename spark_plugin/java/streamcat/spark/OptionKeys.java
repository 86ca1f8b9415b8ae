package streamcat.spark;

/**
 * The option keys the catalog shim and the Python data source exchange (Spark lower-cases them), each spelled
 * once per language: {@code spark_plugin/pyspark_streamcat/options.py}'s {@code OptionKeys} holds the same
 * names and values (tests/architecture/test_option_keys.py checks it).
 */
final class OptionKeys {
    /** Where the table is: the server, its scope and stream ({@code table} for users of the source by name). */
    static final String URI = "uri";
    static final String SCOPE = "scope";
    static final String STREAM = "stream";
    static final String TABLE = "table";
    static final String LOCATION = "location";
    static final String FORMAT = "format";
    /** The schema version Spark planned with. */
    static final String SCHEMA_TYPE = "streamcat.schema.type";
    static final String SCHEMA_VERSION = "streamcat.schema.version";
    static final String SCHEMA_ID = "streamcat.schema.id";
    /** The point of the table's history a scan reads: a commit number, or a time (ms since the epoch). */
    static final String CUT = "streamcat.cut";
    static final String VERSION_AS_OF = "versionasof";
    static final String AS_OF_TIME = "streamcat.asoftime";
    /** Pushed filters (JSON) and the streaming query a scan or write belongs to. */
    static final String FILTERS = "streamcat.filters";
    static final String QUERY_ID = "streamcat.queryid";
    /** Streaming reads: where to start and how much per trigger. */
    static final String STARTING_COMMIT = "startingcommit";
    static final String MAX_COMMITS_PER_TRIGGER = "maxcommitspertrigger";
    static final String MAX_ROWS_PER_TRIGGER = "maxrowspertrigger";
    /** How work is split: rows per written chunk, rows per read partition. */
    static final String ROWS_PER_CHUNK = "rowsperchunk";
    static final String ROWS_PER_PARTITION = "rowsperpartition";
    /** A row-level write (DELETE/UPDATE/MERGE) and the cut its scan read. */
    static final String ROW_LEVEL = "streamcat.rowlevel";
    static final String READ_CUT = "streamcat.readcut";
    /** A compaction written by Spark: the base cut whose merged rows it holds. */
    static final String COMPACT_BASE = "streamcat.compact.base";
    /** A batch write's commit: its properties (this prefix, then the property) and the commit it expects last. */
    static final String COMMIT_PROPERTY = "streamcat.commit.property.";
    static final String EXPECTED_LAST_COMMIT = "streamcat.expectedlastcommit";
    /** A batch write that replaces live chunks (a JSON list of their paths): one row-level commit removes them. */
    static final String REPLACES = "streamcat.replaces";
    /** A change-feed scan: the range ({@code from}, {@code to} and whether each end is included) under this prefix. */
    static final String CHANGES = "streamcat.changes.";
    static final String CHANGES_FROM = "streamcat.changes.from";
    static final String CHANGES_FROM_INCLUSIVE = "streamcat.changes.frominclusive";
    static final String CHANGES_TO = "streamcat.changes.to";
    static final String CHANGES_TO_INCLUSIVE = "streamcat.changes.toinclusive";
    /** The shim's own switches (table options the catalog sets): the native Parquet scan and write. */
    static final String NATIVE_SCAN = "streamcat.nativescan";
    static final String NATIVE_WRITE = "streamcat.nativewrite";

    private OptionKeys() {
    }
}
