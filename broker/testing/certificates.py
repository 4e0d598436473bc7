"""Throw-away TLS material for tests: a CA, a broker certificate for 127.0.0.1 / localhost and
client certificates for mutual TLS, written as PEM files (keys PKCS#8, as Kafka's PEM
keystores and the Java client require). Needs the ``cryptography`` package (the ``test`` extra).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CertificateFiles:
    """PEM files of one certificate: the certificate, its key (PKCS#8), and both in one."""

    cert: Path
    key: Path
    combined: Path  # key + certificate (a Kafka PEM keystore file)
    subject: str  # RFC 2253, as Kafka prints it: "CN=alice,OU=dev,O=kafkette test"


class TestCA:
    """A certificate authority that issues broker and client certificates into ``directory``."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: str | Path, organization: str = "kafkette test") -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.organization = organization
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                          x509.NameAttribute(NameOID.COMMON_NAME, "kafkette test CA")])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(self._key, hashes.SHA256()))
        self.cert_path = self.directory / "ca.pem"
        self.cert_path.write_bytes(self.cert_pem)

    @property
    def cert_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, name: str, *, common_name: str | None = None,
              organizational_unit: str | None = None,
              hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> CertificateFiles:
        """A certificate signed by this CA, for ``hosts`` (server) and as a client; files
        ``<name>.pem``, ``<name>-key.pem``, ``<name>-keystore.pem``."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, self.organization)]
        if organizational_unit:
            attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME,
                                                 organizational_unit))
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name or name))
        alt_names: list[Any] = []
        for host in hosts:
            try:
                alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                alt_names.append(x509.DNSName(host))
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder().subject_name(x509.Name(attributes))
            .issuer_name(self._cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False))
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names),
                                            critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        paths = CertificateFiles(self.directory / f"{name}.pem",
                                 self.directory / f"{name}-key.pem",
                                 self.directory / f"{name}-keystore.pem",
                                 ",".join(reversed([f"{_SHORT[a.oid]}={a.value}"
                                                    for a in attributes])))
        paths.cert.write_bytes(cert_pem)
        paths.key.write_bytes(key_pem)
        paths.combined.write_bytes(key_pem + cert_pem)
        for path in (paths.key, paths.combined):
            path.chmod(0o600)
        return paths


def _short_names() -> dict[Any, str]:
    from cryptography.x509.oid import NameOID

    return {NameOID.ORGANIZATION_NAME: "O", NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
            NameOID.COMMON_NAME: "CN"}


class _LazyShort(dict):
    def __missing__(self, key: Any) -> str:
        self.update(_short_names())
        return dict.__getitem__(self, key)


_SHORT: dict[Any, str] = _LazyShort()
