package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The native path of batch change-feed scans of append tables: when every commit of the range only adds
 * columnar chunks (appends, and row-level commits that only insert), its feed is every row of those chunks
 * as an {@code insert} of its commit, and Spark's Parquet scan reads it, with {@code _change_type},
 * {@code _commit_version} and {@code _commit_timestamp} as per-commit constants (the way Spark adds Hive
 * partition values). This is what the Python source computes for such commits
 * ({@code catalog_api/streams/changelog.py}, {@code _append_feed}); anything else (a primary key, deletes,
 * removed chunks, event chunks, timestamp bounds, a file the native scan cannot read as the table) is left
 * to it, as is a streaming read ({@link NativeScan.Native}).
 */
final class NativeFeed {
    private static final String COLUMNAR = "columnar";
    private static final UTF8String INSERT = UTF8String.fromString("insert");
    private static final StructType FEED_COLUMNS = StreamcatChangelog.FEED_COLUMNS;

    private NativeFeed() {
    }

    /**
     * Spark's Parquet scan of the feed the scan's options name ({@code streamcat.changes.*}), or empty when the
     * Python source must compute it.
     *
     * @param tableSchema the table's columns (the feed's rows without the feed columns)
     * @param options the scan's options merged with the table's (lower-case keys)
     * @param required the pruned feed schema the scan must answer with
     * @param filters every filter Spark offered (those over table columns go to the Parquet reader)
     */
    static Optional<Scan> plan(TableState state, StructType tableSchema, Map<String, String> options,
                               StructType required, Filter[] filters, Supplier<Scan> python) {
        if (!options.containsKey(OptionKeys.CHANGES_FROM) || !state.primaryKey().isEmpty() || NativeScan.disabled(options)) {
            return Optional.empty();
        }
        Set<String> columns = NativeScan.lowerNames(tableSchema);
        Set<String> feedColumns = NativeScan.lowerNames(FEED_COLUMNS);
        for (StructField field : required.fields()) {
            String name = field.name().toLowerCase(Locale.ROOT);
            if (!columns.contains(name) && !feedColumns.contains(name)) {
                return Optional.empty();
            }
        }
        String location = NativeScan.nativeLocation(options.get("location"));
        Long after = bound(options.get(OptionKeys.CHANGES_FROM), inclusive(options, OptionKeys.CHANGES_FROM_INCLUSIVE), true);
        Long to = options.containsKey(OptionKeys.CHANGES_TO) && !options.get(OptionKeys.CHANGES_TO).isBlank()
                ? bound(options.get(OptionKeys.CHANGES_TO), inclusive(options, OptionKeys.CHANGES_TO_INCLUSIVE), false) : null;
        if (location == null || after == null || (options.containsKey(OptionKeys.CHANGES_TO) && to == null)) {
            return Optional.empty();
        }
        JsonNode commits;
        try {
            commits = to != null && to <= after ? CatalogRestClient.array() : state.changes(after, to);
        } catch (RuntimeException e) {
            return Optional.empty();  // an expired cut, say: the Python source asks again and reports it
        }
        List<JsonNode> chunks = new ArrayList<>();
        for (JsonNode commit : commits) {
            if (commit.path("removed").size() > 0) {
                return Optional.empty();  // rows deleted: the Python source finds which
            }
            for (JsonNode chunk : commit.path("chunks")) {
                if (!COLUMNAR.equals(chunk.path("kind").asText())) {
                    return Optional.empty();  // events (decoded by the Python source), position deletes
                }
                chunks.add(chunk);
            }
        }
        NativeScan.Files files = NativeScan.files(state, options, tableSchema, location, chunks);
        if (files == null) {
            return Optional.empty();
        }
        List<Map.Entry<InternalRow, List<FileStatus>>> groups = new ArrayList<>();
        int next = 0;
        for (JsonNode commit : commits) {
            int count = commit.path("chunks").size();
            // The Python feed's values: the commit's number, and its time (epoch ms) as a timestamp (micros).
            InternalRow values = new GenericInternalRow(new Object[] {INSERT, commit.path("number").asLong(),
                commit.path("createdAt").asLong() * 1000});
            groups.add(new AbstractMap.SimpleImmutableEntry<>(values, files.statuses().subList(next, next + count)));
            next += count;
        }
        List<Filter> dataFilters = new ArrayList<>();
        for (Filter filter : filters) {
            if (columns.containsAll(lower(filter.references()))) {
                dataFilters.add(filter);
            }
        }
        return Optional.of(new NativeScan.Native(PythonSourceBridge.parquetScan(groups, tableSchema, FEED_COLUMNS,
                required, dataFilters.toArray(new Filter[0]), files.readOptions()), python));
    }

    private static Set<String> lower(String[] references) {
        Set<String> out = new HashSet<>();
        for (String reference : references) {
            out.add(reference.toLowerCase(Locale.ROOT));
        }
        return out;
    }

    private static boolean inclusive(Map<String, String> options, String key) {
        return !"false".equalsIgnoreCase(options.getOrDefault(key, "true").trim());
    }

    /**
     * A commit-number bound as the commit range (after, to] it makes, as the Python source reads it
     * ({@code pyspark_streamcat/reader.py}, {@code _bound}); null for a time bound or a value it refuses.
     */
    private static Long bound(String raw, boolean inclusive, boolean lower) {
        long version;
        try {
            version = Long.parseLong(raw.trim());
        } catch (NumberFormatException e) {
            return null;
        }
        if (version < 0) {
            return null;
        }
        if (lower) {
            return inclusive ? Math.max(0, version - 1) : version;
        }
        return inclusive ? version : version - 1;
    }
}
