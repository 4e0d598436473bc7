"""Admin HTTP API fuzzer: hostile bodies and headers for the JSON endpoints.

Bodies: deep nesting, non-UTF-8 bytes, truncated JSON, huge and negative numbers in every fault
field, wrong types; headers: foreign Host names. Every answer must be a 4xx with a JSON error
(or a 2xx for the bodies that happen to be valid), never a 500, and the server keeps serving.
"""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

EXTREME_NUMBERS = [2**31, 2**31 - 1, 2**63, -1, -(2**31), 10**30, 1.5, float("1e308")]
FIELDS = ["api", "error", "count", "node", "delay_ms", "throttle_ms", "drop"]
PATHS = [("POST", "/v1/faults"), ("POST", "/v1/groups/g/move"), ("POST", "/v1/nodes/1/stop"),
         ("POST", "/v1/topics/t/partitions/0/move")]


def hostile_body(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        depth = rng.choice([100, 1000, 100_000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        return (opener * depth + "1" + closer * depth).encode()
    if kind == 1:
        return rng.randbytes(rng.randint(1, 64)) + b"\xff\xfe"
    if kind == 2:
        return json.dumps({"api": "Fetch", "delay_ms": 1})[: rng.randint(0, 20)].encode()
    if kind == 3:
        body: dict[str, Any] = {"api": rng.choice(["Fetch", "OffsetCommit", 1, -1, 2**40])}
        for name in rng.sample(FIELDS[1:], rng.randint(1, 4)):
            body[name] = rng.choice(EXTREME_NUMBERS)
        return json.dumps(body).encode()
    if kind == 4:
        return json.dumps(rng.choice([[], None, "x", 1, {"node": [1]}, {"node": 2**70}])).encode()
    return json.dumps({"api": "Fetch", "error": "x" * rng.choice([1, 10_000, 500_000])}).encode()


def run_admin_fuzz(url: str, cases: int, seed: int = 1) -> Counter[int]:
    """HTTP status -> how many answers; 0 counts requests that got no answer at all."""
    rng = random.Random(seed)
    statuses: Counter[int] = Counter()
    for _ in range(cases):
        method, path = rng.choice(PATHS)
        headers = {"Content-Type": "application/json"}
        if rng.random() < 0.1:
            headers["Host"] = rng.choice(["evil.example", "127.0.0.1.nip.io", "localhost.evil"])
        request = urllib.request.Request(url + path, data=hostile_body(rng), method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                statuses[response.status] += 1
        except urllib.error.HTTPError as exc:
            statuses[exc.code] += 1
            if exc.code != 404:
                json.loads(exc.read())["error"]  # a JSON error, or this raises
        except OSError:
            statuses[0] += 1
    return statuses
