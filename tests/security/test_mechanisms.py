"""The SASL mechanisms as pure state machines: SCRAM (a stdlib RFC 5802 client against the
server), OAUTHBEARER's unsecured JWS validation, the JAAS grammar and the principal mapper."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from kafkette.broker.security.jaas import JaasError, parse_jaas, plain_users
from kafkette.broker.security.mechanisms import AuthFailure
from kafkette.broker.security.oauthbearer import OAuthBearerExchange
from kafkette.broker.security.principal import NoMatchingRule, map_name, parse_rules, subject_name
from kafkette.broker.security.scram import (
    ScramCredential,
    ScramExchange,
    ScramFailure,
    new_credential,
    salted_password,
)

MECH = "SCRAM-SHA-512"


def client_exchange(server: ScramExchange, user: str, password: str, *,
                    first_extra: str = "", authzid: str = "") -> bytes:
    """Run a SCRAM client against ``server``; the server-final message."""
    digest = "sha512"
    nonce = "fyko+d2lbbFgONRv9qkxdawL\\]^{}"
    bare = f"n={user},r={nonce}{first_extra}"
    server_first = server.step(f"n,{'a=' + authzid if authzid else ''},{bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
    salted = salted_password(MECH, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return server.step(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())


def lookup_for(credentials: dict[str, ScramCredential]):
    return lambda user, mechanism: credentials.get(user) if mechanism == MECH else None


@pytest.fixture
def alice():
    return {"alice": new_credential(MECH, "alice-secret")}


def test_scram_login_and_server_signature(alice):
    server = ScramExchange(MECH, lookup_for(alice))
    final = client_exchange(server, "alice", "alice-secret")
    assert final.startswith(b"v=") and server.done and server.authorization_id == "alice"


def test_scram_accepts_kafka_extensions_and_an_equal_authzid(alice):
    server = ScramExchange(MECH, lookup_for(alice))
    client_exchange(server, "alice", "alice-secret", first_extra=",ext=1", authzid="alice")
    assert server.done


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("nobody", "alice-secret")])
def test_scram_failures_are_generic(alice, user, password):
    server = ScramExchange(MECH, lookup_for(alice))
    with pytest.raises(ScramFailure):
        client_exchange(server, user, password)
    assert not server.done


def test_scram_authzid_other_than_user_says_so(alice):
    server = ScramExchange(MECH, lookup_for(alice))
    with pytest.raises(AuthFailure) as failure:
        client_exchange(server, "alice", "alice-secret", authzid="bob")
    assert not isinstance(failure.value, ScramFailure)
    assert str(failure.value) == ("Authentication failed: Client requested an authorization id "
                                  "that is different from username")


def test_scram_refuses_too_few_iterations_and_bad_grammar(alice):
    weak = {"alice": new_credential(MECH, "alice-secret", iterations=1000)}
    with pytest.raises(ScramFailure):
        client_exchange(ScramExchange(MECH, lookup_for(weak)), "alice", "alice-secret")
    for bad in (b"y,,n=alice,r=abc", b"n,,n=al\xc3\xa9,r=abc", b"n,,n=alice", b""):
        with pytest.raises(ScramFailure):
            ScramExchange(MECH, lookup_for(alice)).step(bad)


def jwt(claims: dict, alg: str = "none") -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{part({'alg': alg})}.{part(claims)}."


def oauth_message(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()


NOW_MS = 1_800_000_000_000


def exchange(**options: str) -> OAuthBearerExchange:
    return OAuthBearerExchange(options, clock_ms=lambda: NOW_MS)


def test_oauthbearer_valid_token_sets_principal_and_expiry():
    server = exchange()
    exp = NOW_MS / 1000 + 60.5
    assert server.step(oauth_message(jwt({"sub": "alice", "exp": exp, "iat": exp - 100}))) == b""
    assert server.done and server.authorization_id == "alice"
    assert server.credential_expiry == exp


def test_oauthbearer_expired_token_is_json_then_58_with_it():
    server = exchange()
    reply = server.step(oauth_message(jwt({"sub": "alice", "exp": NOW_MS / 1000 - 1})))
    assert reply == b'{"status":"invalid_token"}'
    with pytest.raises(AuthFailure) as failure:
        server.step(b"\x01")
    assert str(failure.value) == '{"status":"invalid_token"}'


def test_oauthbearer_required_scope():
    server = exchange(unsecuredValidatorRequiredScope="write read")
    token = jwt({"sub": "alice", "exp": NOW_MS / 1000 + 60, "scope": ["read"]})
    assert server.step(oauth_message(token)) == (
        b'{"status":"insufficient_scope", "scope":"write"}')
    ok = exchange(unsecuredValidatorRequiredScope="read")
    ok.step(oauth_message(jwt({"sub": "alice", "exp": NOW_MS / 1000 + 60, "scope": "read"})))
    assert ok.done


@pytest.mark.parametrize("claims, alg", [
    ({"exp": NOW_MS / 1000 + 60}, "none"),  # no sub
    ({"sub": "alice"}, "none"),  # no exp
    ({"sub": "alice", "exp": NOW_MS / 1000 + 60}, "HS256"),  # signed: not for this validator
    ({"sub": "alice", "exp": NOW_MS / 1000 + 60, "iat": NOW_MS / 1000 + 30}, "none"),  # future
])
def test_oauthbearer_invalid_tokens(claims, alg):
    assert exchange().step(oauth_message(jwt(claims, alg))) == b'{"status":"invalid_token"}'


def test_oauthbearer_authzid_must_be_the_principal():
    with pytest.raises(AuthFailure) as failure:
        exchange().step(oauth_message(jwt({"sub": "alice", "exp": NOW_MS / 1000 + 9}), "bob"))
    assert str(failure.value) == ("Authentication failed: Client requested an authorization id "
                                  "(bob) that is different from the token's principal name "
                                  "(alice)")


def test_jaas_plain_users_and_errors():
    module = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required '
                        'username="admin" password="a" user_admin="a" user_alice=\'b;c\'; ')
    assert plain_users(module) == {"admin": "a", "alice": "b;c"}
    for text, message in [("", "Login module not specified in JAAS config"),
                          ("x required a=\"b\"", "JAAS config entry not terminated by semi-colon"),
                          ("x required a;", "Value not specified for key 'a' in JAAS config")]:
        with pytest.raises(JaasError, match=message):
            parse_jaas(text)


def test_principal_mapping_rules_as_kafka():
    rules = parse_rules("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L, RULE:^CN=([^,]*).*$/$1/,"
                        "DEFAULT")
    assert map_name(rules, "CN=Alice,OU=Dev,O=x") == "alice@dev"
    assert map_name(rules, "CN=bob,O=x") == "bob"
    assert map_name(rules, "O=x") == "O=x"
    with pytest.raises(NoMatchingRule):
        map_name(parse_rules("RULE:^CN=(.*)$/$1/"), "O=x")


def test_subject_name_is_rfc2253_most_specific_first():
    cert = {"subject": ((("countryName", "US"),), (("organizationName", "A, Inc."),),
                        (("commonName", "alice"),))}
    assert subject_name(cert) == "CN=alice,O=A\\, Inc.,C=US"
