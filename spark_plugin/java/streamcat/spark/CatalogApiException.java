package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A non-2xx answer of the catalog REST API: status, error code, message and reasons. A {@link Refusal} whose
 * condition is the server's code ({@code STREAMCAT_TABLE_NOT_FOUND}) and whose SQLSTATE follows the status,
 * so that a refusal the catalog passes on reaches the user as one line.
 */
final class CatalogApiException extends Refusal {
    final int status;
    final String code;
    final List<String> reasons;

    CatalogApiException(int status, String code, String message, List<String> reasons) {
        super(condition(code), sqlState(status, code), message, null);
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

    /** 22023 bad input, 42704 missing, 42710 exists, 42K09 incompatible schema, 40001 conflict (retry), 58000. */
    static String sqlState(int status, String code) {
        if (status == 404) {
            return UNDEFINED;
        }
        if (status == 409) {
            return switch (code) {
                case "AlreadyExists" -> "42710";
                case "IncompatibleSchema" -> "42K09";
                default -> "40001";
            };
        }
        return status >= 500 ? "58000" : INVALID;
    }

    boolean isNotFound() {
        return status == 404;
    }

    boolean isConflict() {
        return status == 409;
    }
}
