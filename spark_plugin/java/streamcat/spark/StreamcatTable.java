package streamcat.spark;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A streamcat table as Spark sees it: the catalog's metadata, with reads and writes handed to
 * the Python data source through {@link PythonSourceBridge} (a new Python source per scan and
 * per write).
 */
final class StreamcatTable implements Table, SupportsRead, SupportsWrite {
    private static final Set<TableCapability> CAPABILITIES = Collections.unmodifiableSet(EnumSet.of(
            TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.MICRO_BATCH_READ,
            TableCapability.STREAMING_WRITE, TableCapability.TRUNCATE));

    private final String name;
    private final StructType schema;
    private final Map<String, String> properties;
    private final Map<String, String> sourceOptions;

    /**
     * @param sourceOptions what the Python source needs to find the table (uri, scope, stream,
     *     location, schema version, time travel), merged over every scan's and write's options
     */
    StreamcatTable(String name, StructType schema, Map<String, String> properties, Map<String, String> sourceOptions) {
        this.name = name;
        this.schema = schema;
        this.properties = Collections.unmodifiableMap(properties);
        this.sourceOptions = Collections.unmodifiableMap(sourceOptions);
    }

    /** The same table read at another point of its history. */
    StreamcatTable at(String key, String value) {
        Map<String, String> options = new HashMap<>(sourceOptions);
        options.put(key, value);
        return new StreamcatTable(name, schema, properties, options);
    }

    Map<String, String> sourceOptions() {
        return sourceOptions;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return schema;
    }

    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return CAPABILITIES;
    }

    /** The scan's or write's own options, with the table's (which win) on top; keys lower-cased. */
    private Map<String, String> merge(CaseInsensitiveStringMap options) {
        Map<String, String> merged = new HashMap<>();
        options.asCaseSensitiveMap().forEach((k, v) -> merged.put(k.toLowerCase(Locale.ROOT), v));
        sourceOptions.forEach((k, v) -> merged.put(k.toLowerCase(Locale.ROOT), v));
        return merged;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new StreamcatScanBuilder(schema, merge(options));
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        Map<String, String> merged = merge(info.options());
        merged.put("streamcat.queryid", info.queryId());
        return PythonSourceBridge.writeBuilder(new MergedWriteInfo(info, new CaseInsensitiveStringMap(merged)));
    }

    /** A LogicalWriteInfo with other options. */
    private static final class MergedWriteInfo implements LogicalWriteInfo {
        private final LogicalWriteInfo info;
        private final CaseInsensitiveStringMap options;

        MergedWriteInfo(LogicalWriteInfo info, CaseInsensitiveStringMap options) {
            this.info = info;
            this.options = options;
        }

        @Override
        public CaseInsensitiveStringMap options() {
            return options;
        }

        @Override
        public String queryId() {
            return info.queryId();
        }

        @Override
        public StructType schema() {
            return info.schema();
        }

        @Override
        public Optional<StructType> rowIdSchema() {
            return info.rowIdSchema();
        }

        @Override
        public Optional<StructType> metadataSchema() {
            return info.metadataSchema();
        }
    }
}
