package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;

/**
 * Spark's TableChange objects as the catalog API's {@code changes} JSON (one object per change). Each change the
 * shim sends is written by one method named for its {@code op}, which writes its members and nothing else:
 * tests/architecture/test_table_changes.py checks them against the API's OpenAPI document.
 */
final class TableChanges {
    private TableChanges() {
    }

    static ArrayNode toJson(TableChange... changes) {
        ArrayNode out = CatalogRestClient.array();
        for (TableChange change : changes) {
            out.add(toJson(change));
        }
        return out;
    }

    static ObjectNode toJson(TableChange change) {
        if (change instanceof TableChange.SetProperty set) {
            if (TableCatalog.PROP_COMMENT.equals(set.property())) {
                return setComment(set.value());
            }
            refuseReserved(set.property());
            return setProperty(set.property(), set.value());
        }
        if (change instanceof TableChange.RemoveProperty remove) {
            if (TableCatalog.PROP_COMMENT.equals(remove.property())) {
                return setComment("");
            }
            refuseReserved(remove.property());
            return removeProperty(remove.property());
        }
        if (change instanceof TableChange.AddColumn add) {
            return addColumn(add);
        }
        if (change instanceof TableChange.DeleteColumn delete) {
            return dropColumn(delete.fieldNames());
        }
        if (change instanceof TableChange.RenameColumn rename) {
            return renameColumn(rename.fieldNames(), rename.newName());
        }
        if (change instanceof TableChange.UpdateColumnType update) {
            return updateColumnType(update.fieldNames(), update.newDataType());
        }
        if (change instanceof TableChange.UpdateColumnNullability update) {
            return updateColumnNullability(update.fieldNames(), update.nullable());
        }
        if (change instanceof TableChange.UpdateColumnComment update) {
            return updateColumnComment(update.fieldNames(), update.newComment());
        }
        if (change instanceof TableChange.UpdateColumnDefaultValue update) {
            return updateColumnDefault(update.fieldNames(), update.newDefaultValue());
        }
        if (change instanceof TableChange.UpdateColumnPosition update) {
            return updateColumnPosition(update.fieldNames(), update.position());
        }
        ObjectNode constraint = Constraints.change(change);
        if (constraint != null) {
            return constraint;
        }
        throw new UnsupportedOperationException("streamcat tables do not support this change: " + change);
    }

    // -- one method per op ----------------------------------------------------------------------------------

    static ObjectNode setProperty(String key, String value) {
        return change("setProperty").put("key", key).put("value", value);
    }

    static ObjectNode removeProperty(String key) {
        return change("removeProperty").put("key", key);
    }

    static ObjectNode setComment(String comment) {
        return change("setComment").put("comment", comment);
    }

    /** The table's partition spec, in the text form of PARTITIONED BY ({@code ''}: unpartitioned). */
    static ObjectNode setPartitioning(String partitioning) {
        return change("setPartitioning").put("partitioning", partitioning);
    }

    static ObjectNode addColumn(TableChange.AddColumn add) {
        ObjectNode node = column("addColumn", add.fieldNames());
        node.set("type", type(add.dataType()));
        node.put("nullable", add.isNullable());
        if (add.comment() != null) {
            node.put("comment", add.comment());
        }
        if (add.defaultValue() != null) {
            String[] names = add.fieldNames();
            Column column = Column.create(names[names.length - 1], add.dataType(), add.isNullable(), add.comment(),
                    add.defaultValue(), null);
            MetadataBuilder metadata = new MetadataBuilder();
            putDefaults(metadata, column);
            Metadata built = metadata.build();
            node.set("default", CatalogRestClient.object().put("current", built.getString(CURRENT_DEFAULT))
                    .put("exists", built.getString(EXISTS_DEFAULT)));
        }
        ObjectNode position = position(add.position());
        if (position != null) {
            node.set("position", position);
        }
        return node;
    }

    static ObjectNode dropColumn(String[] path) {
        return column("dropColumn", path);
    }

    static ObjectNode renameColumn(String[] path, String newName) {
        return column("renameColumn", path).put("newName", newName);
    }

    static ObjectNode updateColumnType(String[] path, DataType type) {
        ObjectNode node = column("updateColumnType", path);
        node.set("type", type(type));
        return node;
    }

    static ObjectNode updateColumnNullability(String[] path, boolean nullable) {
        return column("updateColumnNullability", path).put("nullable", nullable);
    }

    static ObjectNode updateColumnComment(String[] path, String comment) {
        return column("updateColumnComment", path).put("comment", comment);
    }

    /** Empty: DROP DEFAULT. Only what new rows get changes; older rows keep their EXISTS_DEFAULT. */
    static ObjectNode updateColumnDefault(String[] path, String sql) {
        return column("updateColumnDefault", path).put("default", sql);
    }

    static ObjectNode updateColumnPosition(String[] path, TableChange.ColumnPosition position) {
        ObjectNode node = column("updateColumnPosition", path);
        node.set("position", position(position));
        return node;
    }

    // -- their parts ---------------------------------------------------------------------------------------

    private static ObjectNode change(String op) {
        return CatalogRestClient.object().put("op", op);
    }

    private static ObjectNode column(String op, String[] names) {
        ArrayNode path = CatalogRestClient.array();
        for (String name : names) {
            path.add(name);
        }
        ObjectNode node = change(op);
        node.set("path", path);
        return node;
    }

    private static JsonNode type(DataType type) {
        return CatalogRestClient.parse(type.json());
    }

    private static ObjectNode position(TableChange.ColumnPosition position) {
        if (position == null) {
            return null;
        }
        if (position instanceof TableChange.After after) {
            return CatalogRestClient.object().put("after", after.column());
        }
        return CatalogRestClient.object().put("first", true);
    }

    /** Spark's metadata key of the SQL an INSERT that omits the column writes. */
    static final String CURRENT_DEFAULT = "CURRENT_DEFAULT";
    /** Spark's metadata key of the literal rows written before the column existed read. */
    static final String EXISTS_DEFAULT = "EXISTS_DEFAULT";

    /**
     * Put {@code column}'s DEFAULT into {@code metadata} as Spark's own catalogs keep it: {@code CURRENT_DEFAULT}
     * (the SQL written) and {@code EXISTS_DEFAULT} (the constant Spark folded it to). The server refuses a
     * default that is not a literal.
     */
    static void putDefaults(MetadataBuilder metadata, Column column) {
        Metadata converted = PythonSourceBridge.columnsToStruct(new Column[] {column}).fields()[0].metadata();
        for (String key : new String[] {CURRENT_DEFAULT, EXISTS_DEFAULT}) {
            if (converted.contains(key)) {
                metadata.putString(key, converted.getString(key));
            }
        }
    }

    private static void refuseReserved(String property) {
        if (TableCatalog.PROP_LOCATION.equals(property) || TableCatalog.PROP_PROVIDER.equals(property)) {
            throw Refusal.unsupported(
                    "the " + property + " of a streamcat table is fixed when the table is created");
        }
    }
}
