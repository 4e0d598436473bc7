"""Kafka client properties (``--command-config``) as librdkafka settings for the tools built on
confluent-kafka."""

from __future__ import annotations

import pytest

from kafkette.broker.cli.client_security import librdkafka_settings

SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
         'username="app" password="s3cret";')


def test_jaas_login_and_pem_stores_become_librdkafka_names() -> None:
    assert librdkafka_settings({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/c/ca.pem", "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/c/me.pem", "ssl.endpoint.identification.algorithm": "",
    }) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
           "sasl.username": "app", "sasl.password": "s3cret", "ssl.ca.location": "/c/ca.pem",
           "ssl.certificate.location": "/c/me.pem", "ssl.key.location": "/c/me.pem",
           "ssl.endpoint.identification.algorithm": "none"}


def test_librdkafka_names_pass_and_unsecured_oauthbearer_maps_its_subject() -> None:
    native = {"sasl.username": "u", "sasl.password": "p", "ssl.ca.location": "ca.pem",
              "ssl.keystore.location": "me.p12", "ssl.keystore.password": "x"}
    assert librdkafka_settings(native) == native  # a PKCS#12 keystore librdkafka reads itself
    oauth = librdkafka_settings({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config":
                                 "org.apache.kafka.common.security.oauthbearer."
                                 "OAuthBearerLoginModule required "
                                 'unsecuredLoginStringClaim_sub="alice";'})
    assert oauth == {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": "principal=alice",
                     "enable.sasl.oauthbearer.unsecure.jwt": "true"}


def test_a_jks_truststore_is_refused_with_the_way_out() -> None:
    with pytest.raises(ValueError, match="librdkafka reads a PEM truststore"):
        librdkafka_settings({"ssl.truststore.type": "JKS", "ssl.truststore.location": "t.jks"})
