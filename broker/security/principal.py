"""The principal of a TLS client certificate: its subject as Java's X500Principal.getName()
(RFC 2253: most specific RDN first) mapped by ``ssl.principal.mapping.rules``
(Kafka's SslPrincipalMapper).

Rules: a comma list of ``RULE:<regex>/<replacement>/[L|U]`` and ``DEFAULT``; the first rule
whose regex matches the whole name wins (``$1`` back-references; L/U lower or upper case the
result); ``DEFAULT`` is the name itself; no rule matching fails the authentication.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple


class NoMatchingRule(ValueError):
    pass


class _Rule(NamedTuple):
    default: bool
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    case: str = ""


_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,]*?)"
                   r"\s*(?:,\s*|$)")


def parse_rules(text: str) -> list[_Rule]:
    """The rules of ``ssl.principal.mapping.rules``; ValueError naming a bad one."""
    rules: list[_Rule] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _RULE.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"Invalid rule: {text[pos:]}")
        pos = match.end()
        if match.group(1):
            rules.append(_Rule(True))
            continue
        pattern = match.group(2).replace("\\/", "/")
        replacement = re.sub(r"\$(\d+)", r"\\\1", match.group(3).replace("\\/", "/"))
        rules.append(_Rule(False, re.compile(pattern), replacement, match.group(4)))
    return rules or [_Rule(True)]


def map_name(rules: list[_Rule], name: str) -> str:
    for rule in rules:
        if rule.default:
            return name
        assert rule.pattern is not None
        if rule.pattern.fullmatch(name):
            out = rule.pattern.sub(rule.replacement, name)
            return out.lower() if rule.case == "L" else out.upper() if rule.case == "U" else out
    raise NoMatchingRule(f"No rules apply to {name}, rules {rules_text(rules)}")


def rules_text(rules: list[_Rule]) -> str:
    return "[" + ", ".join("DEFAULT" if r.default else f"RULE:{r.pattern.pattern if r.pattern else ''}"
                           for r in rules) + "]"


# Subject attributes as Java names them; others are written OID=#<DER hex> as Java does.
_SHORT_NAMES = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O",
                "localityName": "L", "stateOrProvinceName": "ST", "countryName": "C",
                "domainComponent": "DC", "userId": "UID", "streetAddress": "STREET"}
_OIDS = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16), "serialNumber": ("2.5.4.5", 0x13),
         "title": ("2.5.4.12", 0x0C), "surname": ("2.5.4.4", 0x0C),
         "givenName": ("2.5.4.42", 0x0C)}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _attribute(name: str, value: str) -> str:
    short = _SHORT_NAMES.get(name)
    if short is not None:
        return f"{short}={_escape(value)}"
    oid, tag = _OIDS.get(name, (name, 0x0C))
    data = value.encode()
    return f"{oid}=#{tag:02x}{len(data):02x}{data.hex()}"


def subject_name(peer_cert: dict[str, Any]) -> str:
    """RFC 2253 name of ``SSLSocket.getpeercert()``'s subject, most specific RDN first."""
    rdns = peer_cert.get("subject", ())
    return ",".join("+".join(_attribute(name, value) for name, value in rdn)
                    for rdn in reversed(rdns))
