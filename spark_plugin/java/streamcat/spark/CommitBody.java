package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Map;

/**
 * A commit request as the catalog takes it ({@code POST .../commits}: the wire models {@code CommitRequest},
 * {@code ChunkInfo} and {@code ChunkPartition} of catalog_api/api/models.py), built in this one place, and
 * its sending: a commit whose answer is lost (no answer, or a 5xx) is resolved from the catalog by its
 * writer id and sequence ({@code GET .../commits/find}) before it is sent again or given up, the contract of
 * catalog_api/streams/committing.py. tests/architecture/test_commit_fields.py checks that the member names
 * below are the wire models' own.
 */
final class CommitBody {
    // CommitRequest's members
    static final String CHUNKS = "chunks";
    static final String OVERWRITE = "overwrite";
    static final String WRITER_ID = "writerId";
    static final String WRITER_SEQUENCE = "writerSequence";
    static final String PROPERTIES = "properties";
    static final String KIND = "kind";
    static final String READ_CUT = "readCut";
    static final String BASE_CUT = "baseCut";
    static final String EXPECTED_LAST_COMMIT = "expectedLastCommit";
    static final String REMOVES = "removes";
    // ChunkInfo's members that a request gives (commit, sequence and removedAt are the server's)
    static final String PATH = "path";
    static final String SEGMENT = "segment";
    static final String EVENT_COUNT = "eventCount";
    static final String BYTES = "bytes";
    static final String ENCODING_IDS = "encodingIds";
    static final String MIN_EVENT_TIME = "minEventTime";
    static final String MAX_EVENT_TIME = "maxEventTime";
    static final String STATS = "stats";
    static final String PARTITION = "partition";
    // ChunkPartition's members
    static final String SPEC_ID = "specId";
    static final String VALUES = "values";

    /** How often a commit is sent before its outcome is left in doubt (committing.py's DEFAULT_ATTEMPTS). */
    static final int ATTEMPTS = 3;

    private final ObjectNode body = CatalogRestClient.object();
    private String writerId;
    private long writerSequence;

    /** A commit of {@code chunks} (each built by {@link #columnarChunk}, or none). */
    CommitBody(List<? extends JsonNode> chunks) {
        ArrayNode array = body.putArray(CHUNKS);
        chunks.forEach(array::add);
        body.putObject(PROPERTIES);
    }

    /**
     * A columnar chunk of {@code eventCount} rows at {@code path} (relative to the table's location), in
     * segment 0, of one encoding id, with the statistics of {@code catalog_api.streams.chunks.column_stats},
     * written under spec 0 (said, so that the catalog still takes it if the table is partitioned before the
     * write commits).
     */
    static ObjectNode columnarChunk(String path, long eventCount, long bytes, int encodingId, JsonNode stats) {
        ObjectNode chunk = CatalogRestClient.object();
        chunk.put(PATH, path);
        chunk.put(KIND, "columnar"); // catalog_api/model.py CHUNK_KINDS
        chunk.put(SEGMENT, 0);
        chunk.put(EVENT_COUNT, eventCount);
        chunk.put(BYTES, bytes);
        chunk.putArray(ENCODING_IDS).add(encodingId);
        chunk.set(STATS, stats);
        ObjectNode partition = chunk.putObject(PARTITION);
        partition.put(SPEC_ID, 0);
        partition.putArray(VALUES);
        return chunk;
    }

    /** An overwrite (the commit kind of its own: every older chunk is removed). */
    CommitBody overwrite(boolean overwrite) {
        body.put(OVERWRITE, overwrite);
        return this;
    }

    /** Made at most once for this pair: a repeat is acknowledged, and a lost answer can be looked up. */
    CommitBody writer(String id, long sequence) {
        writerId = id;
        writerSequence = sequence;
        body.put(WRITER_ID, id);
        body.put(WRITER_SEQUENCE, sequence);
        return this;
    }

    CommitBody property(String key, String value) {
        ((ObjectNode) body.get(PROPERTIES)).put(key, value);
        return this;
    }

    CommitBody properties(Map<String, String> values) {
        values.forEach(this::property);
        return this;
    }

    /** Made only if the stream's newest commit is {@code commit} (409 CommitConflict otherwise). */
    CommitBody expectedLastCommit(long commit) {
        body.put(EXPECTED_LAST_COMMIT, commit);
        return this;
    }

    /** A row-level commit recording the cut its scan read, removing the live chunks {@code paths}. */
    CommitBody rowLevel(long readCut, List<String> paths) {
        body.put(KIND, "row-level"); // catalog_api/model.py COMMIT_KINDS
        body.put(READ_CUT, readCut);
        ArrayNode removes = body.putArray(REMOVES);
        paths.forEach(removes::add);
        return this;
    }

    /** The request body. */
    JsonNode json() {
        return body;
    }

    /** Whether the body has no chunks. */
    boolean empty() {
        return body.get(CHUNKS).isEmpty();
    }

    /**
     * Send the commit to the stream at {@code streamPath}; its answer (the Commit). A try that gets no answer
     * (the request may have been carried out) is resolved from the catalog before the commit is sent again,
     * at most {@link #ATTEMPTS} sends: found, the commit was made and that commit is answered. The server's
     * refusal (a 4xx: nothing committed) is thrown as it is.
     *
     * @throws InDoubt when whether the commit was made stays unknown (or it has no writer id to tell): the
     *         caller must keep its files
     */
    JsonNode send(CatalogRestClient client, String streamPath) {
        boolean inDoubt = false;
        Exception failure = null;
        for (int sends = 0; sends < ATTEMPTS; sends++) {
            if (inDoubt) {
                if (writerId == null) {
                    break;
                }
                JsonNode found = find(client, streamPath);
                if (found != null && !found.isNull()) {
                    return found.path("commit");
                }
                inDoubt = found == null; // null: the catalog could not be asked; a JSON null: not made
            }
            try {
                return client.call("POST", streamPath + "/commits", body);
            } catch (Exception e) {
                if (!unanswered(e)) {
                    if (inDoubt && writerId != null) {
                        JsonNode found = find(client, streamPath);
                        if (found == null) {
                            throw new InDoubt(message(e), e);
                        }
                        if (!found.isNull()) {
                            return found.path("commit");
                        }
                    }
                    throw CatalogAccessException.raise(e); // refused: nothing was committed
                }
                failure = e;
                inDoubt = true;
            }
        }
        throw new InDoubt(message(failure), failure);
    }

    private String message(Exception cause) {
        return "the commit " + (writerId == null ? "" : "of writer " + writerId + " (" + writerSequence + ") ")
                + "was sent but no answer came (" + (cause == null ? "" : cause.getMessage())
                + "); it may or may not have been made";
    }

    /** Whether a failed call may have been carried out: no answer (status 0), or a server-side failure. */
    private static boolean unanswered(Exception e) {
        if (e instanceof CatalogAccessException access) {
            return access.status == 0;
        }
        return e instanceof CatalogApiException api && api.status >= 500;
    }

    /** The commit of this writer id and sequence with its paths; a JSON null when not made; null when unknown. */
    private JsonNode find(CatalogRestClient client, String streamPath) {
        String path = streamPath + "/commits/find?writerId=" + CatalogRestClient.segment(writerId)
                + "&writerSequence=" + writerSequence;
        try {
            return client.get(path);
        } catch (Exception e) {
            if (e instanceof CatalogApiException api && api.isNotFound() && "CommitNotFound".equals(api.code)) {
                return CatalogRestClient.JSON.nullNode();
            }
            if (unanswered(e)) {
                return null;
            }
            throw CatalogAccessException.raise(e);
        }
    }

    /** Whether a commit was made is unknown: its files must stay (gc removes them if it was not). */
    static final class InDoubt extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InDoubt(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
