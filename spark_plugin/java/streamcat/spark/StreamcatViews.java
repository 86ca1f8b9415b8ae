package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The catalog's views ({@code ViewCatalog}), stored by the server at {@code /v1/scopes/{scope}/views}.
 * Spark 4.3 wants a catalog of tables and views to be a {@code RelationCatalog}: {@link StreamcatCatalog}
 * is one, and delegates its view methods here (docs/views.md).
 *
 * Spark does the rest: it checks name clashes with tables before it creates a view, resolves a
 * view's query with the catalog and namespace captured at creation, and plans the result like any
 * query. The server stores what Spark hands over (query text, captured catalog and namespace,
 * columns with comments, query column names, SQL configs, schema mode, comment, properties,
 * owner) and refuses a view where a table of that name exists (tables and views share one name
 * space per scope). {@code streamcat.view.version}, shown among a view's properties, is the
 * version an ALTER VIEW read: the replace it makes fails if the view changed meanwhile.
 */
final class StreamcatViews {
    /** The property that carries a loaded view's version into a replace of it. */
    static final String VERSION = "streamcat.view.version";
    /** Properties Spark's View keeps that the server stores as fields of their own (or not at all). */
    private static final String COMMENT = "comment";
    private static final String OWNER = "owner";
    private static final String TABLE_TYPE = "table_type";

    private final CatalogRestClient client;

    StreamcatViews(CatalogRestClient client) {
        this.client = client;
    }


    private static String viewPath(Identifier ident) {
        return CatalogRestClient.viewsPath(ident.namespace()[0]) + "/" + CatalogRestClient.segment(ident.name());
    }

    Identifier[] list(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        List<JsonNode> views;
        try {
            views = client.pages(CatalogRestClient.viewsPath(namespace[0]), "views");
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchNamespaceException(namespace);
            }
            throw e;
        }
        Identifier[] out = new Identifier[views.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Identifier.of(namespace, views.get(i).path("viewName").asText());
        }
        return out;
    }

    View load(Identifier ident) throws NoSuchViewException {
        if (ident.namespace().length != 1) {
            throw new NoSuchViewException(ident);
        }
        try {
            return toView(client.get(viewPath(ident)));
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                throw new NoSuchViewException(ident);
            }
            throw e;
        }
    }

    boolean exists(Identifier ident) {
        try {
            load(ident);
            return true;
        } catch (NoSuchViewException e) {
            return false;
        }
    }

    /** CREATE VIEW (mode create), CREATE OR REPLACE VIEW (createOrReplace), ALTER VIEW (replace). */
    View put(Identifier ident, View view, String mode)
            throws ViewAlreadyExistsException, NoSuchNamespaceException, NoSuchViewException {
        if (ident.namespace().length != 1) {
            throw new NoSuchNamespaceException(ident.namespace());
        }
        ObjectNode body = toJson(view, mode);
        try {
            return toView(client.call("PUT", viewPath(ident), body));
        } catch (CatalogApiException e) {
            if (e.isConflict() && e.code.endsWith("AlreadyExists")) {
                throw new ViewAlreadyExistsException(ident);
            }
            if ("ViewNotFound".equals(e.code)) {
                throw new NoSuchViewException(ident);
            }
            if (e.isNotFound()) {
                throw new NoSuchNamespaceException(ident.namespace());
            }
            throw e;
        }
    }

    boolean drop(Identifier ident) {
        if (ident.namespace().length != 1) {
            return false;
        }
        try {
            client.call("DELETE", viewPath(ident), null);
            return true;
        } catch (CatalogApiException e) {
            if (e.isNotFound()) {
                return false;
            }
            throw e;
        }
    }

    /** ALTER VIEW ... RENAME TO: views are only metadata, so unlike tables they can be renamed. */
    void rename(Identifier from, Identifier to) throws NoSuchViewException, ViewAlreadyExistsException {
        if (from.namespace().length != 1) {
            throw new NoSuchViewException(from);
        }
        if (to.namespace().length != 1) {
            throw Refusal.invalid("streamcat namespaces (scopes) have one level, not "
                    + String.join(".", to.namespace()));
        }
        ObjectNode body = CatalogRestClient.object().put("viewName", to.name()).put("scopeName", to.namespace()[0]);
        try {
            client.call("POST", viewPath(from) + "/rename", body);
        } catch (CatalogApiException e) {
            if (e.isConflict() && e.code.endsWith("AlreadyExists")) {
                throw new ViewAlreadyExistsException(to);
            }
            if ("ViewNotFound".equals(e.code)) {
                throw new NoSuchViewException(from);
            }
            throw e;
        }
    }

    private static ObjectNode toJson(View view, String mode) {
        Map<String, String> properties = new LinkedHashMap<>(view.properties());
        String comment = properties.remove(COMMENT);
        String owner = properties.remove(OWNER);
        properties.remove(TABLE_TYPE);
        String version = properties.remove(VERSION);
        ObjectNode body = CatalogRestClient.object().put("mode", mode).put("queryText", view.queryText());
        body.set("schema", CatalogRestClient.parse(view.schema().json()));
        if (view.currentCatalog() != null) {
            body.put("currentCatalog", view.currentCatalog());
        }
        body.set("currentNamespace", CatalogRestClient.JSON.valueToTree(
                view.currentNamespace() == null ? new String[0] : view.currentNamespace()));
        body.set("queryColumnNames", CatalogRestClient.JSON.valueToTree(
                view.queryColumnNames() == null ? new String[0] : view.queryColumnNames()));
        body.set("sqlConfigs", CatalogRestClient.stringMap(
                view.sqlConfigs() == null ? Map.of() : view.sqlConfigs()));
        if (view.schemaMode() != null) {
            body.put("schemaMode", view.schemaMode());
        }
        body.put("comment", comment == null ? "" : comment);
        body.set("properties", CatalogRestClient.stringMap(properties));
        if (owner != null) {
            body.put("owner", owner);
        }
        // Only a replace of the view that was read says which version it read (ALTER VIEW keeps the
        // loaded view's properties); a new view never inherits one from copied TBLPROPERTIES.
        if ("replace".equals(mode) && version != null) {
            try {
                body.put("expectedVersion", Long.parseLong(version.trim()));
            } catch (NumberFormatException ignored) {
                // not one of ours: ignore it, as the property is never stored
            }
        }
        return body;
    }

    private static String[] strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(item -> out.add(item.asText()));
        return out.toArray(new String[0]);
    }

    private static View toView(JsonNode json) {
        Map<String, String> properties = new HashMap<>();
        json.path("properties").fields().forEachRemaining(e -> properties.put(e.getKey(), e.getValue().asText()));
        properties.put(VERSION, json.path("version").asText());
        Map<String, String> configs = new LinkedHashMap<>();
        json.path("sqlConfigs").fields().forEachRemaining(e -> configs.put(e.getKey(), e.getValue().asText()));
        View.Builder builder = new View.Builder()
                .withQueryText(json.path("queryText").asText())
                .withCurrentNamespace(strings(json.path("currentNamespace")))
                .withQueryColumnNames(strings(json.path("queryColumnNames")))
                .withSqlConfigs(configs);
        if (json.hasNonNull("currentCatalog")) {
            builder = builder.withCurrentCatalog(json.path("currentCatalog").asText());
        }
        if (json.hasNonNull("schemaMode")) {
            builder = builder.withSchemaMode(json.path("schemaMode").asText());
        }
        builder = builder.withSchema((StructType) DataType.fromJson(json.path("schema").toString()))
                .withProperties(properties);
        String comment = json.path("comment").asText("");
        if (!comment.isEmpty()) {
            builder = builder.withComment(comment);
        }
        if (json.hasNonNull("owner")) {
            builder = builder.withOwner(json.path("owner").asText());
        }
        return builder.build();
    }
}
