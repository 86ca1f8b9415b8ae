package streamcat.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Column pruning and filter pushdown in front of the Python data source.
 *
 * Spark pushes filters before it prunes columns, while the Python source fixes its output
 * schema when it is created; so this builder collects both and creates the Python scan only
 * in {@link #build()}, with the pruned schema. Filters are pushed the way Parquet pushes them:
 * the reader uses them to skip whole chunks by their min/max statistics, and Spark still
 * evaluates every filter on the rows that are read (all are returned as post-scan filters).
 * The filters travel to Python as JSON in the {@code streamcat.filters} option.
 *
 * A scan may instead be Spark's Parquet scan over chunk files, when the snapshot ({@link NativeScan})
 * or the change feed's range ({@link NativeFeed}) needs nothing the Python source does; it gets the
 * same pruned schema and every filter.
 */
final class StreamcatScanBuilder implements SupportsPushDownFilters, SupportsPushDownRequiredColumns {
    static final String FILTERS_OPTION = OptionKeys.FILTERS;

    private final Map<String, String> options;
    private StructType required;
    private Filter[] pushed = new Filter[0];
    private Filter[] offered = new Filter[0];
    private ArrayNode filterJson = CatalogRestClient.array();
    /** The table's state (a native path may apply). */
    private final TableState table;
    /** The rows the scan reads, before pruning: the table's, or its change feed's. */
    private final StructType tableSchema;
    /** The table's columns, when this scans its change feed; else null. */
    private final StructType feedOf;

    StreamcatScanBuilder(StructType tableSchema, Map<String, String> options, TableState table) {
        this(tableSchema, options, table, null);
    }

    StreamcatScanBuilder(StructType readSchema, Map<String, String> options, TableState table, StructType feedOf) {
        this.required = readSchema;
        this.tableSchema = readSchema;
        this.options = options;
        this.table = table;
        this.feedOf = feedOf;
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
        List<Filter> usable = new ArrayList<>();
        ArrayNode json = CatalogRestClient.array();
        for (Filter filter : filters) {
            FilterJson.toJson(filter).ifPresent(node -> {
                usable.add(filter);
                json.add(node);
            });
        }
        pushed = usable.toArray(new Filter[0]);
        offered = filters.clone();
        filterJson = json;
        return filters;
    }

    @Override
    public Filter[] pushedFilters() {
        return pushed;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        // The scan answers with exactly these columns, in this order (none at all for COUNT(*)).
        required = requiredSchema;
    }

    @Override
    public Scan build() {
        Optional<Scan> scan = feedOf != null
                ? NativeFeed.plan(table, feedOf, options, required, offered, this::pythonScan)
                : NativeScan.plan(table, tableSchema, options, required, offered, filterJson, this::pythonScan);
        return scan.orElseGet(this::pythonScan);
    }

    /** The Python data source's scan of the pruned columns, with the filters it can use. */
    private Scan pythonScan() {
        Map<String, String> merged = new HashMap<>(options);
        if (!filterJson.isEmpty()) {
            merged.put(FILTERS_OPTION, filterJson.toString());
        }
        return PythonSourceBridge.scanBuilder(required, new CaseInsensitiveStringMap(merged)).build();
    }
}
