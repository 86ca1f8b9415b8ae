package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A non-2xx answer of the catalog REST API: status, error code, message and reasons. */
final class CatalogApiException extends RuntimeException {
    final int status;
    final String code;
    final List<String> reasons;

    CatalogApiException(int status, String code, String message, List<String> reasons) {
        super(message);
        this.status = status;
        this.code = code;
        this.reasons = Collections.unmodifiableList(reasons);
    }

    static CatalogApiException from(String what, int status, String body) {
        String code = "";
        String message = body == null ? "" : body;
        List<String> reasons = new ArrayList<>();
        try {
            JsonNode error = CatalogRestClient.parse(body).path("error");
            if (error.isObject()) {
                code = error.path("code").asText("");
                message = error.path("message").asText(message);
                for (JsonNode reason : error.path("reasons")) {
                    String path = reason.path("path").asText("");
                    String text = reason.path("message").asText("");
                    reasons.add(path.isEmpty() ? text : path + ": " + text);
                }
            }
        } catch (RuntimeException notJson) {
            // keep the raw body as the message
        }
        // The server's message usually spells the reasons out already; add them only when it does not.
        boolean told = reasons.stream().allMatch(message::contains);
        String full = "streamcat catalog refused " + what + " (" + status + (code.isEmpty() ? "" : " " + code) + "): "
                + message + (told ? "" : "; reasons: " + String.join("; ", reasons));
        return new CatalogApiException(status, code, full, reasons);
    }

    boolean isNotFound() {
        return status == 404;
    }

    boolean isConflict() {
        return status == 409;
    }
}
