"""Development TLS material for the SASL_SSL example (docker compose --profile secure): a
self-signed CA, a broker certificate for $CERT_HOSTS, and a client properties file.

    python dev_certs.py DIRECTORY

writes into DIRECTORY (kept if there already, so a restart keeps its CA):

- ``ca.pem``: the CA certificate, what clients trust (ssl.truststore.location / ssl.ca.location);
- ``broker-keystore.pem``: the broker's key (PKCS#8) and certificate, a PEM keystore
  (ssl.keystore.type=PEM, ssl.keystore.location);
- ``client.properties``: SASL_SSL client settings for $CLIENT_USER / $CLIENT_PASSWORD with
  $SASL_MECHANISM, for Kafka's tools and kafkette's (``--command-config``).

For development only: the CA key is not kept, certificates last a year. Needs ``cryptography``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE = "ca.pem"
KEYSTORE_FILE = "broker-keystore.pem"
CLIENT_PROPERTIES = "client.properties"
VALID_FOR = datetime.timedelta(days=365)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkette dev"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _subject_alt_names(hosts: list[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def write_certificates(directory: Path, hosts: list[str]) -> None:
    """A CA and a broker certificate for ``hosts``, signed by it."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("kafkette dev CA")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + VALID_FOR)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(hosts[0])).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(_subject_alt_names(hosts), critical=False)
            .sign(ca_key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    keystore = directory / KEYSTORE_FILE
    keystore.write_bytes(key_pem + cert.public_bytes(serialization.Encoding.PEM))
    keystore.chmod(0o600)
    (directory / CA_FILE).write_bytes(ca.public_bytes(serialization.Encoding.PEM))


def client_properties(directory: Path, mechanism: str, user: str, password: str) -> str:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    return (f"security.protocol=SASL_SSL\n"
            f"sasl.mechanism={mechanism}\n"
            f'sasl.jaas.config={module} required username="{user}" password="{password}";\n'
            f"ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={directory / CA_FILE}\n")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    directory = Path(argv[0]).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    hosts = [h.strip() for h in os.environ.get("CERT_HOSTS", "localhost,127.0.0.1").split(",")
             if h.strip()]
    if (directory / CA_FILE).exists() and (directory / KEYSTORE_FILE).exists():
        print(f"keeping the certificates in {directory}", flush=True)
    else:
        write_certificates(directory, hosts)
        print(f"wrote a CA and a broker certificate for {', '.join(hosts)} to {directory}",
              flush=True)
    properties = directory / CLIENT_PROPERTIES
    properties.write_text(client_properties(
        directory, os.environ.get("SASL_MECHANISM", "SCRAM-SHA-512"),
        os.environ.get("CLIENT_USER", "app"), os.environ.get("CLIENT_PASSWORD", "app-secret")))
    properties.chmod(0o600)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
