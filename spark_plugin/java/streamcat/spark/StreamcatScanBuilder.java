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

/**
 * Column pruning and filter pushdown in front of the Python data source.
 *
 * Spark pushes filters before it prunes columns, while the Python source fixes its output
 * schema when it is created; so this builder collects both and creates the Python scan only
 * in {@link #build()}, with the pruned schema. Filters are pushed the way Parquet pushes them:
 * the reader uses them to skip whole chunks by their min/max statistics, and Spark still
 * evaluates every filter on the rows that are read (all are returned as post-scan filters).
 * The filters travel to Python as JSON in the {@code streamcat.filters} option.
 */
final class StreamcatScanBuilder implements SupportsPushDownFilters, SupportsPushDownRequiredColumns {
    static final String FILTERS_OPTION = "streamcat.filters";

    private final Map<String, String> options;
    private StructType required;
    private Filter[] pushed = new Filter[0];
    private ArrayNode filterJson = CatalogRestClient.array();

    StreamcatScanBuilder(StructType tableSchema, Map<String, String> options) {
        this.required = tableSchema;
        this.options = options;
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
        Map<String, String> merged = new HashMap<>(options);
        if (!filterJson.isEmpty()) {
            merged.put(FILTERS_OPTION, filterJson.toString());
        }
        return PythonSourceBridge.scanBuilder(required, new CaseInsensitiveStringMap(merged)).build();
    }
}
