package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * What a loaded table knows beyond its schema: its primary key (empty for an append table), its
 * newest commit at load time, its current partition spec ({@code partitionSpec} of the table's JSON:
 * {@code specId}, {@code fields}; see {@link Partitioning}), and how to reach its stream
 * ({@code streamPath}) and table ({@code tablePath}) on the server.
 */
record TableState(List<String> primaryKey, String constraintName, long lastCommit, CatalogRestClient client,
                  String streamPath, String tablePath, JsonNode partitionSpec) {
    /** The chunks visible at {@code cut}, with their statistics. */
    JsonNode chunks(long cut) {
        return client.get(streamPath + "/chunks?streamCut=" + cut).path("chunks");
    }

    /**
     * The non-compaction commits in ({@code after}, {@code to}] ({@code to} null: the latest), oldest first,
     * each with the chunks it added ({@code chunks}) and removed ({@code removed}).
     */
    JsonNode changes(long after, Long to) {
        return client.get(streamPath + "/changes?after=" + after + (to == null ? "" : "&to=" + to)).path("changes");
    }

    /** The current spec's id (0: unpartitioned). */
    long specId() {
        return partitionSpec.path("specId").asLong(0);
    }

    /** The current spec's fields (an empty array when the table is unpartitioned). */
    JsonNode partitionFields() {
        JsonNode fields = partitionSpec.path("fields");
        return fields.isArray() ? fields : CatalogRestClient.array();
    }

    /** Whether the table's current spec partitions it. */
    boolean partitioned() {
        return !partitionFields().isEmpty();
    }

    /**
     * {@code planChunks}: the chunks of the snapshot {@code selectors} names ({@code cut} or {@code asOfTime},
     * none: the latest) that may hold a row passing every one of {@code filters} (filter JSON, {@link FilterJson}).
     */
    JsonNode planChunks(ObjectNode selectors, ArrayNode filters) {
        ObjectNode body = selectors.deepCopy();
        body.set("filters", filters);
        return client.call("POST", streamPath + "/chunks/plan", body);
    }

    /** {@code listPartitions}: the partitions of the current spec that live chunks are in. */
    JsonNode partitions() {
        return client.get(tablePath + "/partitions");
    }

    /** A metadata-only DELETE: one row-level commit removing whole chunks, read at {@code readCut}. */
    void removeChunks(List<String> paths, long readCut) {
        removeChunks(paths, readCut, "DELETE");
    }

    /** One row-level commit removing whole chunks, read at {@code readCut}, recording {@code operation}. */
    void removeChunks(List<String> paths, long readCut, String operation) {
        CommitBody body = new CommitBody(List.of()).rowLevel(readCut, paths).property("operation", operation);
        client.call("POST", streamPath + "/commits", body.json());
    }

    /** TRUNCATE TABLE: one overwrite commit with no chunks (every row is gone at the next cut). */
    void truncate() {
        CommitBody body = new CommitBody(List.of()).overwrite(true).property("operation", "TRUNCATE");
        client.call("POST", streamPath + "/commits", body.json());
    }
}
