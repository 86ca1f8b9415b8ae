package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * What a loaded table knows beyond its schema: its primary key (empty for an append table), its
 * newest commit at load time, and how to reach its commits on the server.
 */
record TableState(List<String> primaryKey, String constraintName, long lastCommit, CatalogRestClient client,
                  String streamPath) {
    /** The chunks visible at {@code cut}, with their statistics. */
    JsonNode chunks(long cut) {
        return client.get(streamPath + "/chunks?streamCut=" + cut).path("chunks");
    }

    /** A metadata-only DELETE: one row-level commit removing whole chunks, read at {@code readCut}. */
    void removeChunks(List<String> paths, long readCut) {
        ObjectNode body = CatalogRestClient.object();
        body.set("chunks", CatalogRestClient.array());
        ArrayNode removes = body.putArray("removes");
        paths.forEach(removes::add);
        body.put("kind", "row-level");
        body.put("readCut", readCut);
        body.set("properties", CatalogRestClient.object().put("operation", "DELETE"));
        client.call("POST", streamPath + "/commits", body);
    }

    /** TRUNCATE TABLE: one overwrite commit with no chunks (every row is gone at the next cut). */
    void truncate() {
        ObjectNode body = CatalogRestClient.object();
        body.set("chunks", CatalogRestClient.array());
        body.put("overwrite", true);
        body.put("kind", "overwrite");
        body.set("properties", CatalogRestClient.object().put("operation", "TRUNCATE"));
        client.call("POST", streamPath + "/commits", body);
    }
}
