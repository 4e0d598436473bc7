"""Client quota rules without a broker: Kafka's sampled Rate and throttle time, the lookup order
of user / client-id / default entities, and AlterClientQuotas / DescribeClientQuotas checks."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.services import ServiceError
from kafkette.broker.services.client_quota_store import (
    ClientQuotaStore,
    FilterComponent,
    QuotaOp,
)
from kafkette.broker.services.client_quotas import ClientQuotas, Rate, user_of


def test_rate_is_measured_over_at_least_samples_minus_one_windows() -> None:
    rate = Rate(11, 1000)
    rate.record(10_000, 0)
    # one sample only: the rate is over 10 windows (Kafka's Rate.windowSize)
    assert rate.window_ms(0) == 10_000
    assert rate.measure(0) == pytest.approx(1000)
    rate.record(10_000, 12_500)  # the first sample is older than 11 windows: purged
    assert rate.measure(12_500) == pytest.approx(1000)


def _quotas(tmp_path, samples: int = 11) -> ClientQuotas:
    return ClientQuotas(ClientQuotaStore(tmp_path), samples, 1)


def _set(quotas: ClientQuotas, entity: list[tuple[str, str | None]], **values: float) -> None:
    ops = [QuotaOp(k, v, False) for k, v in values.items()]
    results = asyncio.run(quotas.store.alter([(entity, ops)], validate_only=False))
    assert results == [None]


def test_throttle_time_is_kafkas(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", "app")], producer_byte_rate=1000)
    assert quotas.active
    # 10 windows at 1000 B/s: 10,000 bytes at once are within the quota, 20,000 are not
    assert quotas.produce.record("ANONYMOUS", "app", 10_000, 0) == 0
    # rate 20,000 / 10 s = 2000 B/s: (2000 - 1000) / 1000 * 10,000 ms
    assert quotas.produce.record("ANONYMOUS", "app", 10_000, 0) == 10_000
    assert quotas.produce.record("ANONYMOUS", "other", 50_000, 0) == 0  # no quota for it
    [measured] = quotas.view()["produce"]
    assert (measured["user"], measured["client_id"], measured["limit"],
            measured["last_throttle_ms"]) == ("", "app", 1000, 10_000)


def test_lookup_order_and_shared_rates(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", None)], producer_byte_rate=100)
    _set(quotas, [("user", "alice")], producer_byte_rate=200)
    _set(quotas, [("user", "alice"), ("client-id", "app")], producer_byte_rate=300)
    assert quotas.produce.limit("alice", "app") == (300, ("alice", "app"))
    assert quotas.produce.limit("alice", "other") == (200, ("alice", ""))
    assert quotas.produce.limit("bob", "x") == (100, ("", "x"))
    _set(quotas, [("user", None)], producer_byte_rate=50)
    assert quotas.produce.limit("bob", "x") == (50, ("bob", ""))
    assert not quotas.fetch.enabled and quotas.fetch.limit("bob", "x") is None
    assert user_of("User:alice") == "alice"


def test_removing_every_quota_turns_enforcement_off(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", "app")], consumer_byte_rate=10)
    assert quotas.active and quotas.fetch.enabled
    asyncio.run(quotas.store.alter([([("client-id", "app")],
                                     [QuotaOp("consumer_byte_rate", 0, True)])],
                                   validate_only=False))
    assert not quotas.active and quotas.store.entities == {}


def test_quotas_are_kept_across_a_restart(tmp_path) -> None:
    _set(_quotas(tmp_path), [("user", "alice"), ("client-id", None)], request_percentage=12.5)
    again = _quotas(tmp_path)
    again.store.load()
    assert again.request.limit("alice", "any") == (12.5, ("alice", "any"))


@pytest.mark.parametrize(("entity", "ops", "code", "message"), [
    ([], [("producer_byte_rate", 1)], ErrorCode.invalid_request,
     "Invalid empty client quota entity"),
    ([("user", "a"), ("user", "b")], [("producer_byte_rate", 1)], ErrorCode.invalid_request,
     "Invalid empty client quota entity, duplicate entity entry user"),
    ([("group", "a")], [("producer_byte_rate", 1)], ErrorCode.unsupported_version,
     "Unhandled client quota entity type: group"),
    ([("user", "")], [("producer_byte_rate", 1)], ErrorCode.invalid_request,
     "Empty user not supported"),
    ([("ip", "1.2.3.4"), ("user", "a")], [("connection_creation_rate", 1)],
     ErrorCode.invalid_request,
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ([("client-id", "a")], [("connection_creation_rate", 1)], ErrorCode.invalid_request,
     "Invalid configuration key connection_creation_rate"),
    ([("client-id", "a")], [("producer_byte_rate", 0)], ErrorCode.invalid_request,
     "Quota producer_byte_rate must be greater than 0"),
    ([("client-id", "a")], [("producer_byte_rate", 1.5)], ErrorCode.invalid_request,
     "producer_byte_rate cannot be a fractional value."),
])
def test_alter_refusals_are_kafkas(tmp_path, entity, ops, code, message) -> None:
    store = ClientQuotaStore(tmp_path)
    [error] = asyncio.run(store.alter([(entity, [QuotaOp(k, v, False) for k, v in ops])],
                                      validate_only=False))
    assert isinstance(error, ServiceError)
    assert (error.code, error.message) == (code, message)
    assert store.entities == {}


def test_describe_matches_as_kafka(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", None)], producer_byte_rate=100)
    _set(quotas, [("client-id", "app")], producer_byte_rate=200)
    _set(quotas, [("user", "alice"), ("client-id", "app")], consumer_byte_rate=300)
    store = quotas.store

    def names(*components: FilterComponent, strict: bool = False) -> set:
        return {entity for entity, _ in store.describe(list(components), strict)}

    assert names(FilterComponent("client-id", 0, "app")) == {
        (("client-id", "app"),), (("client-id", "app"), ("user", "alice"))}
    assert names(FilterComponent("client-id", 0, "app"), strict=True) == {(("client-id", "app"),)}
    assert names(FilterComponent("client-id", 1, None), strict=True) == {(("client-id", None),)}
    assert len(names(FilterComponent("client-id", 2, None))) == 3
    assert names(FilterComponent("user", 2, None)) == {(("client-id", "app"), ("user", "alice"))}
    with pytest.raises(ServiceError, match="MATCH_TYPE_EXACT, but set match string to null"):
        store.describe([FilterComponent("user", 0, None)], False)
    with pytest.raises(ServiceError, match="cannot appear more than once"):
        store.describe([FilterComponent("user", 2, None), FilterComponent("user", 1, None)],
                       False)
