"""Kafka's ``sasl.jaas.config`` value: one login module with its options.

Grammar (``org.apache.kafka.common.security.JaasConfig``): ``<class> <flag> key="value" ...;``
with flag one of required, requisite, sufficient, optional; values quoted with ``"`` or ``'``
(or bare words); ``//`` and ``/* */`` comments. Kafka's messages for the errors it names.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class JaasError(ValueError):
    pass


class LoginModule(NamedTuple):
    name: str
    flag: str
    options: dict[str, str]


_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r"""\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<punct>[=;])|"""
                    r"""(?P<word>[^\s=;"']+))""")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = _COMMENTS.sub(" ", text).rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise JaasError(f"Unexpected character in JAAS config at {pos}")
        pos = match.end()
        if match.group("quoted") is not None:
            raw = match.group("quoted")[1:-1]
            out.append(("value", re.sub(r"\\(.)", r"\1", raw)))
        elif match.group("punct") is not None:
            out.append((match.group("punct"), match.group("punct")))
        else:
            out.append(("word", match.group("word")))
    return out


def parse_jaas(text: str) -> LoginModule:
    """The single login module of a ``sasl.jaas.config`` value; JaasError with Kafka's words."""
    tokens = _tokens(text)
    if not tokens:
        raise JaasError("Login module not specified in JAAS config")
    if tokens[-1][0] != ";":
        raise JaasError("JAAS config entry not terminated by semi-colon")
    if len(tokens) < 2 or tokens[0][0] != "word":
        raise JaasError("Login module not specified in JAAS config")
    name = tokens[0][1]
    if len(tokens) < 3 or tokens[1][1].lower() not in _FLAGS:
        raise JaasError(f"Invalid JAAS config: control flag not specified for {name}")
    flag = tokens[1][1].lower()
    options: dict[str, str] = {}
    body = tokens[2:-1]
    i = 0
    while i < len(body):
        kind, key = body[i]
        if kind == ";":
            raise JaasError("Multiple JAAS login modules are not supported in sasl.jaas.config")
        if kind != "word":
            raise JaasError(f"Invalid JAAS config: unexpected {key!r}")
        if i + 1 >= len(body) or body[i + 1][0] != "=" or i + 2 >= len(body) or body[i + 2][0] not in ("value", "word"):
            raise JaasError(f"Value not specified for key '{key}' in JAAS config")
        options[key] = body[i + 2][1]
        i += 3
    return LoginModule(name, flag, options)


def plain_users(module: LoginModule) -> dict[str, str]:
    """PLAIN's users from ``user_<name>="<password>"`` options (PlainServerCallbackHandler)."""
    return {key[len("user_"):]: value for key, value in module.options.items()
            if key.startswith("user_")}
