package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Field ids of a table's columns as the shim sees them (the twin of catalog_api/schema/fieldids.py): the ids a
 * schema without any gets, the ids of a schema version's Avro record, and whether Spark's Parquet reader, matching
 * columns by name or by id, reads a chunk file's columns as the Python reader does (catalog_api/schema/resolution.py).
 * The catalog, partitioning and the native scan all ask here.
 */
final class FieldIds {
    private FieldIds() {
    }

    /** StructField metadata key of a column's field id (Spark's own). */
    static final String FIELD_ID = "parquet.field.id";
    /** Spark's metadata key of the value a column's older rows read, which Spark's Parquet reader fills in. */
    static final String EXISTS_DEFAULT = "EXISTS_DEFAULT";

    /**
     * {@code schema} itself if some column has a field id; otherwise {@code schema} with the ids the
     * server gives a schema without ids at its first column change: 1, 2, ... in schema order, depth
     * first (a column, then the fields of the structs in its type, in array elements, map keys and values).
     * This mirrors {@code assign_field_ids} in catalog_api/schema/fieldids.py: change both together.
     */
    static StructType withPositionalIds(StructType schema) {
        return hasFieldIds(schema) ? schema : (StructType) positional(schema, new long[] {0});
    }

    private static DataType positional(DataType type, long[] counter) {
        if (type instanceof StructType struct) {
            StructField[] fields = struct.fields();
            StructField[] out = new StructField[fields.length];
            for (int i = 0; i < fields.length; i++) {
                StructField field = fields[i];
                org.apache.spark.sql.types.Metadata metadata = new org.apache.spark.sql.types.MetadataBuilder()
                        .withMetadata(field.metadata()).putLong(FIELD_ID, ++counter[0]).build();
                out[i] = new StructField(field.name(), positional(field.dataType(), counter), field.nullable(), metadata);
            }
            return new StructType(out);
        }
        if (type instanceof ArrayType array) {
            return new ArrayType(positional(array.elementType(), counter), array.containsNull());
        }
        if (type instanceof MapType map) {
            DataType key = positional(map.keyType(), counter);
            return new MapType(key, positional(map.valueType(), counter), map.valueContainsNull());
        }
        return type;
    }

    /** Whether some column of {@code schema}, top-level or in a nested struct, has a field id. */
    static boolean hasFieldIds(StructType schema) {
        for (StructField field : schema.fields()) {
            if (field.metadata().contains(FIELD_ID)) {
                return true;
            }
            if (field.dataType() instanceof StructType nested && hasFieldIds(nested)) {
                return true;
            }
        }
        return false;
    }

    /** A column's id in a schema version, and the ids of the fields of the struct it is (or holds). */
    record VersionField(long id, Map<String, VersionField> children) {
    }

    /**
     * The field ids of an Avro record schema, by column name: its {@code field-id} attributes, or, for a
     * version made before ids existed (none has one), the ids its first column change gave it, in schema
     * order (catalog_api/schema/fieldids.py, {@code assign_field_ids}; the Python reader's rule is in
     * catalog_api/schema/resolution.py: change both together). Null for a schema whose order is not
     * that simple (unions of several types, named type references).
     */
    static Map<String, VersionField> versionIds(JsonNode record) {
        boolean positional = !record.toString().contains("\"field-id\"");
        try {
            return versionIds(record, positional, new long[] {0});
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static Map<String, VersionField> versionIds(JsonNode record, boolean positional, long[] counter) {
        Map<String, VersionField> out = new HashMap<>();
        for (JsonNode field : record.path("fields")) {
            long id = positional ? ++counter[0] : field.path("field-id").asLong(-1);
            JsonNode nested = nestedRecord(field.path("type"));
            out.put(field.path("name").asText(), new VersionField(id,
                    nested == null ? Map.of() : versionIds(nested, positional, counter)));
        }
        return out;
    }

    /** The record inside an Avro type (itself, a nullable union's branch, array items, map values), if any. */
    private static JsonNode nestedRecord(JsonNode type) {
        if (type.isTextual()) {
            String name = type.asText();
            if (!Set.of("null", "boolean", "int", "long", "float", "double", "bytes", "string").contains(name)) {
                throw new IllegalArgumentException("a named type reference: " + name);
            }
            return null;
        }
        if (type.isArray()) {
            JsonNode branch = null;
            for (JsonNode member : type) {
                if (!"null".equals(member.asText(""))) {
                    if (branch != null) {
                        throw new IllegalArgumentException("a union of several types");
                    }
                    branch = member;
                }
            }
            return branch == null ? null : nestedRecord(branch);
        }
        return switch (type.path("type").asText()) {
            case "record" -> type;
            case "array" -> nestedRecord(type.path("items"));
            case "map" -> nestedRecord(type.path("values"));
            default -> null;
        };
    }

    /** {@code footer} (a file's schema, without Parquet field ids) with the ids of its schema version, by name. */
    static StructType withVersionIds(StructType footer, Map<String, VersionField> ids) {
        StructField[] fields = footer.fields();
        StructField[] out = new StructField[fields.length];
        for (int i = 0; i < fields.length; i++) {
            StructField field = fields[i];
            VersionField known = ids.get(field.name());
            if (known == null || known.id() < 0) {
                out[i] = field;
                continue;
            }
            DataType type = field.dataType() instanceof StructType nested && !known.children().isEmpty()
                    ? withVersionIds(nested, known.children()) : field.dataType();
            out[i] = new StructField(field.name(), type, field.nullable(),
                    new org.apache.spark.sql.types.MetadataBuilder().withMetadata(field.metadata())
                            .putLong(FIELD_ID, known.id()).build());
        }
        return new StructType(out);
    }

    private static long fieldId(StructField field) {
        return field.metadata().contains(FIELD_ID) ? field.metadata().getLong(FIELD_ID) : -1;
    }

    /**
     * Whether Spark's Parquet reader, matching columns by name, reads a file of schema {@code file}
     * (with the field ids of its footer) under {@code table} (with the table's field ids) as the Python
     * reader does, matching them by id: the file column with a table column's id has the same spelling
     * and type (nested struct fields alike); a table column whose id the file lacks is nullable or has an
     * EXISTS_DEFAULT (which Spark's reader fills in, as the Python reader does), and its name is not in the
     * file (or Spark would read that other column's data).
     */
    static boolean readsAsTable(StructType file, StructType table) {
        Map<Long, StructField> byId = new HashMap<>();
        Set<String> names = new HashSet<>();
        for (StructField field : file.fields()) {
            names.add(field.name().toLowerCase(Locale.ROOT));
            long id = fieldId(field);
            if (id >= 0 && byId.put(id, field) != null) {
                return false;
            }
        }
        for (StructField column : table.fields()) {
            long id = fieldId(column);
            StructField found = id >= 0 ? byId.get(id) : null;
            if (found == null) {
                if (id < 0 || names.contains(column.name().toLowerCase(Locale.ROOT))
                        || (!column.nullable() && !column.metadata().contains(EXISTS_DEFAULT))) {
                    return false;
                }
            } else if (!found.name().equals(column.name()) || !sameTypeById(found.dataType(), column.dataType())) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether Spark's Parquet reader, matching columns by field id, reads a file of schema {@code file} (with
     * the ids of its footer) under {@code table} as the Python reader does: the file column with a table
     * column's id has the table column's type (its name does not matter: a renamed column), nested
     * structs alike; a table column whose id the file lacks is nullable or has an EXISTS_DEFAULT (Spark's
     * reader fills it in, as the Python reader does).
     */
    static boolean readsById(StructType file, StructType table) {
        Map<Long, StructField> byId = new HashMap<>();
        for (StructField field : file.fields()) {
            long id = fieldId(field);
            if (id >= 0 && byId.put(id, field) != null) {
                return false;
            }
        }
        for (StructField column : table.fields()) {
            long id = fieldId(column);
            if (id < 0) {
                return false;
            }
            StructField found = byId.get(id);
            if (found == null) {
                // Spark's Parquet reader fills a column a file lacks with its EXISTS_DEFAULT, else null.
                if (!column.nullable() && !column.metadata().contains(EXISTS_DEFAULT)) {
                    return false;
                }
            } else if (!typeById(found.dataType(), column.dataType())) {
                return false;
            }
        }
        return true;
    }

    private static boolean typeById(DataType file, DataType table) {
        if (file instanceof StructType sf && table instanceof StructType st) {
            return readsById(sf, st);
        }
        if (file instanceof ArrayType af && table instanceof ArrayType at) {
            return typeById(af.elementType(), at.elementType());
        }
        if (file instanceof MapType mf && table instanceof MapType mt) {
            return typeById(mf.keyType(), mt.keyType()) && typeById(mf.valueType(), mt.valueType());
        }
        return sameType(file, table);
    }

    /** {@link #sameType}, and nested struct fields that have ids have the same ones. */
    private static boolean sameTypeById(DataType file, DataType table) {
        if (file instanceof StructType sf && table instanceof StructType st) {
            if (sf.fields().length != st.fields().length) {
                return false;
            }
            for (int i = 0; i < sf.fields().length; i++) {
                long a = fieldId(sf.fields()[i]);
                long b = fieldId(st.fields()[i]);
                if ((a >= 0 && b >= 0 && a != b) || !sf.fields()[i].name().equals(st.fields()[i].name())
                        || !sameTypeById(sf.fields()[i].dataType(), st.fields()[i].dataType())) {
                    return false;
                }
            }
            return true;
        }
        return sameType(file, table);
    }

    /**
     * Whether Spark's Parquet reader, matching columns by name, reads a file of schema {@code file}
     * under {@code table} as the Python reader does: every table column the file has (compared
     * ignoring case, as the Python reader does) is spelled the same and has the same type (ignoring
     * nullability); every table column it lacks is nullable and has no default value.
     */
    static boolean readsByName(StructType file, StructType table) {
        Map<String, StructField> byName = new HashMap<>();
        for (StructField field : file.fields()) {
            if (byName.put(field.name().toLowerCase(Locale.ROOT), field) != null) {
                return false; // two columns that differ only in case
            }
        }
        for (StructField column : table.fields()) {
            StructField found = byName.get(column.name().toLowerCase(Locale.ROOT));
            if (found == null) {
                if (!column.nullable() || column.metadata().contains("CURRENT_DEFAULT")
                        || column.metadata().contains("EXISTS_DEFAULT")) {
                    return false;
                }
            } else if (!found.name().equals(column.name()) || !sameType(found.dataType(), column.dataType())) {
                return false;
            }
        }
        return true;
    }

    /** Equal types, ignoring nullability (of fields, elements and values), with struct fields equal by name and order. */
    static boolean sameType(DataType a, DataType b) {
        if (a instanceof StructType sa && b instanceof StructType sb) {
            if (sa.fields().length != sb.fields().length) {
                return false;
            }
            for (int i = 0; i < sa.fields().length; i++) {
                if (!sa.fields()[i].name().equals(sb.fields()[i].name())
                        || !sameType(sa.fields()[i].dataType(), sb.fields()[i].dataType())) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof ArrayType aa && b instanceof ArrayType ab) {
            return sameType(aa.elementType(), ab.elementType());
        }
        if (a instanceof MapType ma && b instanceof MapType mb) {
            return sameType(ma.keyType(), mb.keyType()) && sameType(ma.valueType(), mb.valueType());
        }
        return a.equals(b);
    }
}
