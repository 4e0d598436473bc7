"""Fuzzed SASL frames against a SASL listener: mutated SaslHandshake / SaslAuthenticate
requests, random mechanism tokens (PLAIN, SCRAM, OAUTHBEARER, legacy raw tokens) and other APIs
at every stage. The broker never logs a traceback, closes only the fuzzed connections, and a
well-behaved client still logs in afterwards."""

from __future__ import annotations

import logging
import os
import random
import socket
import struct

import pytest

from kafkette.protocol.build import make
from kafkette.protocol.codec import encode_request, request_type
from tests.hostile.fuzz import mutate
from tests.wire import WireClient

from .conftest import metadata, plain_login

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


@pytest.fixture
def broker(plain_sasl_broker):
    return plain_sasl_broker("alice", config={
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "scram.credentials": "SCRAM-SHA-256=[name=alice,password=alice-secret]",
        "connection.failed.authentication.delay.ms": "0",
    })


def frame(api_key: int, version: int, corr: int, **fields) -> bytes:
    return encode_request(api_key, version, corr, "fuzz",
                          make(request_type(api_key, version), **fields))


def random_token(rng: random.Random) -> bytes:
    pieces = [b"n,,n=alice,r=" + rng.randbytes(rng.randint(0, 12)),
              b"\0alice\0" + rng.randbytes(rng.randint(0, 8)),
              b"n,,\x01auth=Bearer " + rng.randbytes(rng.randint(0, 40)) + b"\x01\x01",
              b"c=biws,r=" + rng.randbytes(8) + b",p=" + rng.randbytes(8),
              rng.randbytes(rng.randint(0, 64)), b"\x01", b""]
    return rng.choice(pieces)


def one_case(rng: random.Random, host: str, port: int) -> None:
    frames = []
    mechanism = rng.choice((*MECHANISMS, "GSSAPI", "", "x" * 300))
    version = rng.choice((0, 1, 1, 1))
    if rng.random() < 0.3:
        frames.append(frame(18, rng.randint(0, 4), 1, client_software_name="fuzz",
                            client_software_version="1") if rng.random() < 0.8
                      else rng.randbytes(rng.randint(0, 20)))
    handshake = frame(17, version, 2, mechanism=mechanism)
    frames.append(mutate(rng, handshake) if rng.random() < 0.3 else handshake)
    for corr in range(3, 3 + rng.randint(1, 3)):
        token = random_token(rng)
        if version == 0 and rng.random() < 0.7:
            frames.append(struct.pack(">i", len(token)) + token)  # legacy raw token
            continue
        auth = frame(36, rng.randint(0, 2), corr, auth_bytes=token)
        frames.append(mutate(rng, auth) if rng.random() < 0.4 else auth)
    if rng.random() < 0.3:
        frames.append(frame(3, 12, 9, topics=(), allow_auto_topic_creation=True,
                            include_topic_authorized_operations=False))
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.settimeout(0.3)
        try:
            for data in frames:
                sock.sendall(data)
            sock.recv(65536)
        except (TimeoutError, ConnectionError):
            pass


def test_fuzzed_sasl_frames_never_break_the_listener(broker, caplog):
    caplog.set_level(logging.INFO)
    rng = random.Random(int(os.environ.get("KAFKETTE_FUZZ_SEED", "7")))
    host, port = broker.bootstrap.rsplit(":", 1)
    for _ in range(int(os.environ.get("KAFKETTE_SASL_FUZZ_CASES", "300"))):
        one_case(rng, host, int(port))
    with WireClient(broker.bootstrap) as client:
        assert plain_login(client, "alice", "alice-secret").error_code == 0
        assert metadata(client).brokers
    broken = [r for r in caplog.records if r.name.startswith("kafkette")
              and (r.exc_info or r.levelno >= logging.ERROR)]
    assert broken == [], [r.getMessage() for r in broken[:5]]
    assert "alice-secret" not in caplog.text
