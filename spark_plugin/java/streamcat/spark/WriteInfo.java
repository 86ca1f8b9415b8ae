package streamcat.spark;

import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.Optional;

/** A LogicalWriteInfo with other options and, for row-level writes, another schema. */
final class WriteInfo implements LogicalWriteInfo {
    private final LogicalWriteInfo info;
    private final CaseInsensitiveStringMap options;
    private final StructType schema;

    WriteInfo(LogicalWriteInfo info, CaseInsensitiveStringMap options, StructType schema) {
        this.info = info;
        this.options = options;
        this.schema = schema;
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
        return schema;
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
