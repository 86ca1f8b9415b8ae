package streamcat.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Row-level writes (DELETE, UPDATE, MERGE) handed to the Python data source.
 *
 * Spark drives a delta write row by row ({@code delete(id)}, {@code update(id, row)},
 * {@code insert(row)}); the Python source's writer only consumes a whole iterator of rows. So each
 * change becomes one row of a wider schema, {@code _op} (0 insert, 1 delete, 2 update, 3 reinsert),
 * one {@code _id_<name>} column per row-id column, then the table's columns, and
 * {@link BridgedDeltaWriter} feeds those rows to the Python writer as its iterator. Which files to
 * write and the commit (with its conflict check) are the Python writer's: see
 * {@code docs/changelog-tables.md}.
 */
final class DeltaWrites {
    static final byte INSERT = 0;
    static final byte DELETE = 1;
    static final byte UPDATE = 2;
    static final byte REINSERT = 3;
    static final String OP = "_op";
    static final String ID_PREFIX = "_id_";

    private DeltaWrites() {
    }

    /** The schema of the rows the Python writer receives. */
    static StructType changeSchema(StructType rowIds, StructType data) {
        List<StructField> fields = new ArrayList<>();
        fields.add(new StructField(OP, DataTypes.ByteType, false, Metadata.empty()));
        for (StructField id : rowIds.fields()) {
            fields.add(new StructField(ID_PREFIX + id.name(), id.dataType(), true, Metadata.empty()));
        }
        for (StructField field : data.fields()) {
            fields.add(new StructField(field.name(), field.dataType(), true, field.metadata()));
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    /** Builds the delta write of one row-level statement. */
    static final class Builder implements DeltaWriteBuilder {
        private final LogicalWriteInfo info;
        private final Map<String, String> options;

        Builder(LogicalWriteInfo info, Map<String, String> options) {
            this.info = info;
            this.options = options;
        }

        @Override
        public DeltaWrite build() {
            StructType rowIds = info.rowIdSchema().orElseGet(StructType::new);
            StructType schema = changeSchema(rowIds, info.schema());
            WriteInfo python = new WriteInfo(info, new CaseInsensitiveStringMap(options), schema);
            return new Write(python, rowIds, info.schema());
        }
    }

    private static final class Write implements DeltaWrite {
        private final LogicalWriteInfo python;
        private final StructType rowIds;
        private final StructType data;

        Write(LogicalWriteInfo python, StructType rowIds, StructType data) {
            this.python = python;
            this.rowIds = rowIds;
            this.data = data;
        }

        @Override
        public String description() {
            return "streamcat row-level write";
        }

        @Override
        public DeltaBatchWrite toBatch() {
            BatchWrite batch = PythonSourceBridge.writeBuilder(python).build().toBatch();
            return new Batch(batch, types(rowIds), types(data));
        }

        private static DataType[] types(StructType struct) {
            DataType[] out = new DataType[struct.fields().length];
            for (int i = 0; i < out.length; i++) {
                out[i] = struct.fields()[i].dataType();
            }
            return out;
        }
    }

    private static final class Batch implements DeltaBatchWrite {
        private final BatchWrite python;
        private final DataType[] idTypes;
        private final DataType[] dataTypes;

        Batch(BatchWrite python, DataType[] idTypes, DataType[] dataTypes) {
            this.python = python;
            this.idTypes = idTypes;
            this.dataTypes = dataTypes;
        }

        @Override
        public DeltaWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
            return new Factory(python.createBatchWriterFactory(info), idTypes, dataTypes);
        }

        @Override
        public boolean useCommitCoordinator() {
            return python.useCommitCoordinator();
        }

        @Override
        public void onDataWriterCommit(WriterCommitMessage message) {
            python.onDataWriterCommit(message);
        }

        @Override
        public void commit(WriterCommitMessage[] messages) {
            python.commit(messages);
        }

        @Override
        public void abort(WriterCommitMessage[] messages) {
            python.abort(messages);
        }
    }

    private static final class Factory implements DeltaWriterFactory {
        private static final long serialVersionUID = 1L;
        private final DataWriterFactory python;
        private final DataType[] idTypes;
        private final DataType[] dataTypes;

        Factory(DataWriterFactory python, DataType[] idTypes, DataType[] dataTypes) {
            this.python = python;
            this.idTypes = idTypes;
            this.dataTypes = dataTypes;
        }

        @Override
        public DeltaWriter<InternalRow> createWriter(int partitionId, long taskId) {
            return new BridgedDeltaWriter(python.createWriter(partitionId, taskId), idTypes, dataTypes);
        }
    }

    /** A failure of the Python writer as the IOException a DataWriter's callers expect. */
    static IOException io(Throwable failure) {
        return failure instanceof IOException e ? e : new IOException(failure.getMessage(), failure);
    }
}
