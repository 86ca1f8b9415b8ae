package streamcat.spark;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import javax.net.ssl.SSLContext;

/**
 * What the catalog presents to the server, from its Spark options:
 *
 * <pre>
 * spark.sql.catalog.NAME.token        an API token or OIDC access token (Authorization: Bearer)
 * spark.sql.catalog.NAME.user         with .password: HTTP Basic
 * spark.sql.catalog.NAME.password
 * spark.sql.catalog.NAME.ca-bundle    PEM file of the CAs that signed the server's certificate
 * spark.sql.catalog.NAME.client-cert  PEM certificate (and key, or .client-key) for mutual TLS
 * spark.sql.catalog.NAME.client-key
 * </pre>
 *
 * The same values reach the Python data source under the same names, so its reads, writes and
 * commits carry them too. Spark redacts settings whose names contain "token" or "password" in
 * its UI and logs; {@link #toString()} never shows a secret.
 */
final class CatalogCredentials {
    static final String TOKEN = "token";
    static final String USER = "user";
    static final String PASSWORD = "password";
    static final String CA_BUNDLE = "ca-bundle";
    static final String CLIENT_CERT = "client-cert";
    static final String CLIENT_KEY = "client-key";

    private final String token;
    private final String user;
    private final String password;
    private final String caBundle;
    private final String clientCert;
    private final String clientKey;

    private CatalogCredentials(String token, String user, String password, String caBundle, String clientCert,
                               String clientKey) {
        this.token = token;
        this.user = user;
        this.password = password;
        this.caBundle = caBundle;
        this.clientCert = clientCert;
        this.clientKey = clientKey;
    }

    private static String option(CaseInsensitiveStringMap options, String key) {
        String value = options.get(key);
        return value == null || value.isBlank() ? null : value.trim();
    }

    /** The credentials of catalog {@code catalog}; IllegalArgumentException names the setting that is wrong. */
    static CatalogCredentials from(String catalog, CaseInsensitiveStringMap options) {
        String prefix = "spark.sql.catalog." + catalog + ".";
        String token = option(options, TOKEN);
        String user = option(options, USER);
        String password = options.get(PASSWORD);  // not trimmed: blanks may be part of a password
        if (password != null && password.isEmpty()) {
            password = null;
        }
        if (token != null && (user != null || password != null)) {
            throw new IllegalArgumentException("give " + prefix + TOKEN + " or " + prefix + USER + " and "
                    + prefix + PASSWORD + ", not both");
        }
        if ((user == null) != (password == null)) {
            throw new IllegalArgumentException(prefix + USER + " and " + prefix + PASSWORD + " go together");
        }
        if (token != null && (token.contains("\r") || token.contains("\n"))) {
            throw new IllegalArgumentException(prefix + TOKEN + " must be a single line");
        }
        String caBundle = file(prefix + CA_BUNDLE, option(options, CA_BUNDLE));
        String clientCert = file(prefix + CLIENT_CERT, option(options, CLIENT_CERT));
        String clientKey = file(prefix + CLIENT_KEY, option(options, CLIENT_KEY));
        if (clientKey != null && clientCert == null) {
            throw new IllegalArgumentException(prefix + CLIENT_KEY + " needs " + prefix + CLIENT_CERT);
        }
        return new CatalogCredentials(token, user, password, caBundle, clientCert, clientKey);
    }

    private static String file(String setting, String path) {
        if (path != null && !Files.isRegularFile(Path.of(path))) {
            throw new IllegalArgumentException(setting + " names " + path + ", which is not a file");
        }
        return path;
    }

    /** The Authorization header's value, if the catalog was given credentials. */
    Optional<String> authorization() {
        if (token != null) {
            return Optional.of("Bearer " + token);
        }
        if (user != null) {
            String pair = user + ":" + password;
            return Optional.of("Basic " + Base64.getEncoder().encodeToString(pair.getBytes(StandardCharsets.UTF_8)));
        }
        return Optional.empty();
    }

    /** The TLS context to use instead of the JVM's default, when a CA bundle or client certificate was given. */
    Optional<SSLContext> sslContext() {
        if (caBundle == null && clientCert == null) {
            return Optional.empty();
        }
        return Optional.of(PemTls.context(caBundle, clientCert, clientKey));
    }

    /** The options that hand these credentials to the Python data source (pyspark_streamcat's names). */
    Map<String, String> sourceOptions() {
        Map<String, String> options = new LinkedHashMap<>();
        put(options, TOKEN, token);
        put(options, USER, user);
        put(options, PASSWORD, password);
        put(options, CA_BUNDLE, caBundle);
        put(options, CLIENT_CERT, clientCert);
        put(options, CLIENT_KEY, clientKey);
        return options;
    }

    private static void put(Map<String, String> options, String key, String value) {
        if (value != null) {
            options.put(key, value);
        }
    }

    @Override
    public String toString() {
        String who = token != null ? "token=***" : user != null ? "user=" + user + ", password=***" : "anonymous";
        return "CatalogCredentials(" + who + (caBundle == null ? "" : ", ca-bundle=" + caBundle) + ")";
    }
}
