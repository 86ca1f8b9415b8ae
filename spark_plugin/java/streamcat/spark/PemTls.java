package streamcat.spark;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * An SSLContext from PEM files, the format the Python clients and the server use: the CAs to
 * trust (instead of the JVM's) and, for mutual TLS, the client's certificate chain and its
 * PKCS#8 key. Hostname verification stays on: java.net.http checks the server's name itself.
 */
final class PemTls {
    private static final Pattern PKCS8 = Pattern.compile(
            "-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");
    private static final char[] NO_PASSWORD = new char[0];

    private PemTls() {
    }

    /**
     * @param caBundle PEM CA certificates to trust, or null for the JVM's defaults
     * @param clientCert PEM certificate chain to present, or null
     * @param clientKey PEM PKCS#8 key of {@code clientCert} (null when {@code clientCert} holds it too)
     */
    static SSLContext context(String caBundle, String clientCert, String clientKey) {
        try {
            TrustManager[] trust = caBundle == null ? null : trustManagers(caBundle);
            KeyManager[] keys = clientCert == null ? null
                    : keyManagers(clientCert, clientKey == null ? clientCert : clientKey);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys, trust, null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot set up TLS for the streamcat catalog: " + e.getMessage(), e);
        }
    }

    private static List<Certificate> certificates(String path, String what) throws GeneralSecurityException {
        try (InputStream in = Files.newInputStream(Path.of(path))) {
            Collection<? extends Certificate> found = CertificateFactory.getInstance("X.509").generateCertificates(in);
            if (found.isEmpty()) {
                throw new IllegalArgumentException(what + " " + path + " holds no PEM certificate");
            }
            return new ArrayList<>(found);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + what + " " + path + ": " + e.getMessage(), e);
        }
    }

    private static TrustManager[] trustManagers(String caBundle) throws GeneralSecurityException {
        KeyStore store = emptyStore();
        int i = 0;
        for (Certificate ca : certificates(caBundle, "the CA bundle")) {
            store.setCertificateEntry("ca-" + i++, ca);
        }
        TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(store);
        return factory.getTrustManagers();
    }

    private static KeyManager[] keyManagers(String certPath, String keyPath) throws GeneralSecurityException {
        List<Certificate> chain = certificates(certPath, "the client certificate");
        KeyStore store = emptyStore();
        store.setKeyEntry("client", privateKey(keyPath), NO_PASSWORD, chain.toArray(new Certificate[0]));
        KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        factory.init(store, NO_PASSWORD);
        return factory.getKeyManagers();
    }

    private static PrivateKey privateKey(String path) throws GeneralSecurityException {
        String pem;
        try {
            pem = Files.readString(Path.of(path), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the client key " + path + ": " + e.getMessage(), e);
        }
        Matcher matcher = PKCS8.matcher(pem);
        if (!matcher.find()) {
            // PKCS#1 ("RSA PRIVATE KEY") and SEC1 ("EC PRIVATE KEY") need a parser the JDK does not have.
            throw new IllegalArgumentException("the client key " + path + " is not an unencrypted PKCS#8 PEM key "
                    + "(BEGIN PRIVATE KEY); convert it with: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8");
        }
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getMimeDecoder().decode(matcher.group(1)));
        GeneralSecurityException last = null;
        for (String algorithm : new String[] {"RSA", "EC", "Ed25519", "Ed448"}) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            } catch (GeneralSecurityException e) {
                last = e;
            }
        }
        throw new IllegalArgumentException("the client key " + path + " is not an RSA, EC or EdDSA key", last);
    }

    private static KeyStore emptyStore() throws GeneralSecurityException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try {
            store.load(null, null);
        } catch (IOException e) {
            throw new IllegalStateException(e);  // an empty in-memory store reads nothing
        }
        return store;
    }
}
