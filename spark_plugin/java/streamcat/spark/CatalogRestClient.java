package streamcat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import javax.net.ssl.SSLException;

/**
 * The catalog REST API over java.net.http, with Jackson for JSON.
 *
 * Every non-2xx answer becomes a {@link CatalogApiException} carrying the server's error code,
 * message and (for refused schemas) the reasons, so that the catalog can map them onto Spark's
 * exception types.
 */
final class CatalogRestClient {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final int PAGE = 500;

    private final String base;
    private final HttpClient http;
    private final Duration timeout;
    private final Optional<String> authorization;

    CatalogRestClient(String uri, Duration timeout, CatalogCredentials credentials) {
        this.base = uri.endsWith("/") ? uri.substring(0, uri.length() - 1) : uri;
        this.timeout = timeout;
        this.authorization = credentials.authorization();
        HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(timeout)
                .version(HttpClient.Version.HTTP_1_1);
        credentials.sslContext().ifPresent(builder::sslContext);
        this.http = builder.build();
    }

    String uri() {
        return base;
    }

    static String segment(String name) {
        return URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** The server path of the scopes (the catalog's namespaces). */
    static String scopesPath() {
        return "/v1/scopes";
    }

    /** The server path of scope {@code scope}. */
    static String scopePath(String scope) {
        return scopesPath() + "/" + segment(scope);
    }

    /** The server path of the tables of scope {@code scope}. */
    static String tablesPath(String scope) {
        return scopePath(scope) + "/tables";
    }

    /** The server path of table {@code name} of scope {@code scope}. */
    static String tablePath(String scope, String name) {
        return tablesPath(scope) + "/" + segment(name);
    }

    /** The server path of the views of scope {@code scope}. */
    static String viewsPath(String scope) {
        return scopePath(scope) + "/views";
    }

    /** The server path of the materialized tables of scope {@code scope}. */
    static String materializedTablesPath(String scope) {
        return scopePath(scope) + "/materializedTables";
    }

    /** The server path of materialized table {@code name} of scope {@code scope}. */
    static String materializedTablePath(String scope, String name) {
        return materializedTablesPath(scope) + "/" + segment(name);
    }

    /** The registry's path of the encodings of the group of table {@code name} of scope {@code scope}
     *  (the group is named like the table, in the namespace named like the scope). */
    static String encodingsPath(String scope, String name) {
        return "/v1/groups/" + segment(name) + "/encodings?namespace=" + segment(scope);
    }

    /** The registry's path of encoding id {@code id} of that group. */
    static String encodingPath(String scope, String name, long id) {
        return "/v1/groups/" + segment(name) + "/encodings/" + id + "?namespace=" + segment(scope);
    }

    /** The server path of the stream of table {@code name} of scope {@code scope}. */
    static String streamPath(String scope, String name) {
        return scopePath(scope) + "/streams/" + segment(name);
    }

    static ObjectNode object() {
        return JSON.createObjectNode();
    }

    static ArrayNode array() {
        return JSON.createArrayNode();
    }

    static JsonNode parse(String text) {
        try {
            return JSON.readTree(text);
        } catch (IOException e) {
            throw new UncheckedIOException("not JSON: " + text, e);
        }
    }

    /** One request; the parsed answer (a missing node for 204). */
    JsonNode call(String method, String path, JsonNode body) {
        HttpRequest.BodyPublisher publisher = body == null
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body.toString(), StandardCharsets.UTF_8);
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .method(method, publisher);
        authorization.ifPresent(value -> request.header("Authorization", value));
        HttpResponse<String> response;
        try {
            response = http.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (SSLException e) {
            throw CatalogAccessException.raise(new CatalogAccessException(0, "TLS with the streamcat catalog at "
                    + base + " failed: " + e.getMessage() + " (is the catalog's ca-bundle the CA that signed the "
                    + "server's certificate? does the server want a client-cert?)"));
        } catch (IOException e) {
            throw CatalogAccessException.raise(new CatalogAccessException(0, "streamcat catalog at " + base
                    + " is unreachable: " + e.getMessage()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while calling the streamcat catalog", e);
        }
        int status = response.statusCode();
        String text = response.body();
        if (status >= 200 && status < 300) {
            return text == null || text.isEmpty() ? JSON.missingNode() : parse(text);
        }
        CatalogApiException refused = CatalogApiException.from(method + " " + path, status, text);
        if (status == 401 || status == 403) {
            throw CatalogAccessException.raise(new CatalogAccessException(status, refused.text()));
        }
        throw refused;
    }

    JsonNode get(String path) {
        return call("GET", path, null);
    }

    /** Every item under {@code key} of a paginated list. */
    List<JsonNode> pages(String path, String key) {
        List<JsonNode> out = new ArrayList<>();
        String token = null;
        while (true) {
            String query = "?limit=" + PAGE + (token == null ? "" : "&continuationToken=" + segment(token));
            JsonNode body = get(path + query);
            JsonNode items = body.path(key);
            items.forEach(out::add);
            if (items.size() < PAGE || !body.hasNonNull("continuationToken")) {
                return out;
            }
            token = body.path("continuationToken").asText();
        }
    }

    static ObjectNode stringMap(Map<String, String> values) {
        ObjectNode node = object();
        values.forEach(node::put);
        return node;
    }
}
