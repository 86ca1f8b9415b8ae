package streamcat.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;

/** Spark's TableChange objects as the catalog API's {@code changes} JSON (one object per change). */
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

    private static ArrayNode path(String[] names) {
        ArrayNode path = CatalogRestClient.array();
        for (String name : names) {
            path.add(name);
        }
        return path;
    }

    private static ObjectNode column(String op, String[] names) {
        ObjectNode node = CatalogRestClient.object().put("op", op);
        node.set("path", path(names));
        return node;
    }

    private static ObjectNode type(DataType type) {
        return (ObjectNode) CatalogRestClient.object().set("t", CatalogRestClient.parse(type.json()));
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

    static ObjectNode toJson(TableChange change) {
        if (change instanceof TableChange.SetProperty set) {
            if (TableCatalog.PROP_COMMENT.equals(set.property())) {
                return CatalogRestClient.object().put("op", "setComment").put("comment", set.value());
            }
            refuseReserved(set.property());
            return CatalogRestClient.object().put("op", "setProperty").put("key", set.property()).put("value", set.value());
        }
        if (change instanceof TableChange.RemoveProperty remove) {
            if (TableCatalog.PROP_COMMENT.equals(remove.property())) {
                return CatalogRestClient.object().put("op", "setComment").put("comment", "");
            }
            refuseReserved(remove.property());
            return CatalogRestClient.object().put("op", "removeProperty").put("key", remove.property());
        }
        if (change instanceof TableChange.AddColumn add) {
            ObjectNode node = column("addColumn", add.fieldNames());
            node.set("type", type(add.dataType()).get("t"));
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
        if (change instanceof TableChange.DeleteColumn delete) {
            return column("dropColumn", delete.fieldNames());
        }
        if (change instanceof TableChange.RenameColumn rename) {
            return column("renameColumn", rename.fieldNames()).put("newName", rename.newName());
        }
        if (change instanceof TableChange.UpdateColumnType update) {
            ObjectNode node = column("updateColumnType", update.fieldNames());
            node.set("type", type(update.newDataType()).get("t"));
            return node;
        }
        if (change instanceof TableChange.UpdateColumnNullability update) {
            return column("updateColumnNullability", update.fieldNames()).put("nullable", update.nullable());
        }
        if (change instanceof TableChange.UpdateColumnComment update) {
            return column("updateColumnComment", update.fieldNames()).put("comment", update.newComment());
        }
        if (change instanceof TableChange.UpdateColumnDefaultValue update) {
            // Empty: DROP DEFAULT. Only what new rows get changes; older rows keep their EXISTS_DEFAULT.
            return column("updateColumnDefault", update.fieldNames()).put("default", update.newDefaultValue());
        }
        if (change instanceof TableChange.UpdateColumnPosition update) {
            ObjectNode node = column("updateColumnPosition", update.fieldNames());
            node.set("position", position(update.position()));
            return node;
        }
        throw new UnsupportedOperationException("streamcat tables do not support this change: " + change);
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
            throw new UnsupportedOperationException(
                    "the " + property + " of a streamcat table is fixed when the table is created");
        }
    }
}
