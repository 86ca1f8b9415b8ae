"""Real certificates for TLS tests: a CA, a server certificate for 127.0.0.1, a client certificate.

Made with ``cryptography`` (EC P-256 keys, fast to generate), written as PEM files: keys in
unencrypted PKCS#8, which Python's ssl module, gunicorn and the Java shim all read.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    """PEM files: the CA's certificate, a server's certificate and key, a client's certificate and key."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return path


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _builder(subject: str, issuer: x509.Name, key: ec.EllipticCurvePrivateKey,
             issuer_key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )


def _leaf(ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, subject: str,
          usage: x509.ObjectIdentifier, names: list[x509.GeneralName] | None = None
          ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(subject, ca.subject, key, ca_key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=True, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def make_ca(directory: Path, name: str = "Streamcat test CA") -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA, its certificate written to ``directory/ca.pem``."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(name, _name(name), key, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    _write_cert(cert, directory / "ca.pem")
    return cert, key


def make_pki(directory: Path) -> Pki:
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, under ``directory``."""
    ca, ca_key = make_ca(directory)
    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    server, server_key = _leaf(ca, ca_key, "127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH, names)
    client, client_key = _leaf(ca, ca_key, "streamcat-test-client", ExtendedKeyUsageOID.CLIENT_AUTH)
    return Pki(
        ca=directory / "ca.pem",
        server_cert=_write_cert(server, directory / "server.pem"),
        server_key=_write_key(server_key, directory / "server-key.pem"),
        client_cert=_write_cert(client, directory / "client.pem"),
        client_key=_write_key(client_key, directory / "client-key.pem"),
    )


def server_env(root: Path, pki: Pki | None = None, *, mutual: bool = False, **settings: str) -> dict[str, str]:
    """The environment of a ``streamcat serve`` on a new, migrated SQLite database under ``root``:
    HTTPS with ``pki``'s server certificate (clients must present one signed by its CA if
    ``mutual``); ``settings`` are more ``STREAMCAT_*`` variables."""
    from catalog_api.server import migrate

    url = f"sqlite:///{root / 'catalog.db'}"
    migrate.upgrade(url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMCAT_")}
    env.update(STREAMCAT_DATABASE_URL=url, STREAMCAT_WAREHOUSE=str(root / "warehouse"), **settings)
    if pki is not None:
        env.update(STREAMCAT_TLS_CERT=str(pki.server_cert), STREAMCAT_TLS_KEY=str(pki.server_key))
        if mutual:
            env["STREAMCAT_TLS_CLIENT_CA"] = str(pki.ca)
    return env
