"""The request quota on every API and the controller mutation quota, without a broker: which
APIs are metered, the throttle time a response gets and the mute that goes with it, handler time
that excludes waits, and KIP-599's token bucket with its strict and permissive quotas."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker import request_quota
from kafkette.broker.context import RequestContext
from kafkette.broker.responses import ParkedResponse
from kafkette.broker.services import ServiceError
from kafkette.broker.services.client_quota_store import ClientQuotaStore, QuotaOp
from kafkette.broker.services.client_quotas import ClientQuotas
from kafkette.protocol.codec import response_type


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


def _quotas(tmp_path, clock: Clock | None = None, samples: int = 2) -> ClientQuotas:
    quotas = ClientQuotas(ClientQuotaStore(tmp_path), samples, 1)
    if clock is not None:
        quotas.now_ms = clock  # type: ignore[method-assign]
    return quotas


def _set(quotas: ClientQuotas, entity: list[tuple[str, str | None]], **values: float) -> None:
    ops = [QuotaOp(k, v, False) for k, v in values.items()]
    assert asyncio.run(quotas.store.alter([(entity, ops)], validate_only=False)) == [None]


def _ctx(quotas: ClientQuotas, api_key: int, version: int, client_id: str = "app",
         mutes: list[int] | None = None) -> RequestContext:
    services: Any = SimpleNamespace(quotas=quotas)
    return RequestContext(api_key, version, 7, client_id, "/127.0.0.1", services,
                          mute=None if mutes is None else mutes.append)


def _busy(ms: float) -> None:
    until = time.perf_counter() + ms / 1000
    while time.perf_counter() < until:
        pass


def _describe_configs(ctx: RequestContext, _body: Any) -> Any:
    """5 ms of handler time; a DescribeConfigs v4 answer (an ApiVersions v3 one for it) with
    no throttle time."""
    _busy(5)
    if ctx.api_key == 18:
        return ctx.respond(throttle_time=timedelta(0), error_code=ErrorCode.none, api_keys=())
    return response_type(32, 4)(throttle_time=timedelta(0), results=())


# Controller mutation quota ------------------------------------------------------------------

def test_strict_quota_accepts_until_the_bucket_is_below_zero_then_refuses(tmp_path) -> None:
    clock = Clock()
    quotas = _quotas(tmp_path, clock)
    assert quotas.mutation_quota("User:ANONYMOUS", "app", strict=True) is None  # none set
    _set(quotas, [("client-id", "app")], controller_mutation_rate=1)
    assert not quotas.active  # produce, fetch and requests stay on their fast paths
    quota = quotas.mutation_quota("User:ANONYMOUS", "app", strict=True)
    assert quota is not None
    # the bucket holds 11 windows of 1 s at 1 partition/s, and starts full
    quota.record(10)
    quota.record(10)  # 1 token left: accepted, whatever its size; the bucket is now at -9
    assert quota.throttle_ms() == 0  # a strict quota does not throttle what it accepted
    with pytest.raises(ServiceError) as refused:
        quota.record(1)
    assert refused.value.code == ErrorCode.throttling_quota_exceeded
    assert refused.value.message is None  # Kafka sends no message of its own
    assert quota.throttle_ms() == 9000  # the time the bucket needs to get back to zero
    clock.ms += 1500
    assert quota.throttle_ms() == 7500  # less the time since it was measured
    # another request of the same client shares the bucket: refused until it is back at zero
    later = quotas.mutation_quota("User:ANONYMOUS", "app", strict=True)
    assert later is not None
    with pytest.raises(ServiceError):
        later.record(1)
    assert later.throttle_ms() == 7500
    clock.ms += 7500
    later.record(5)
    assert quotas.mutation_quota("User:ANONYMOUS", "other", strict=True) is None


def test_permissive_quota_accepts_and_throttles(tmp_path) -> None:
    clock = Clock()
    quotas = _quotas(tmp_path, clock)
    _set(quotas, [("user", None)], controller_mutation_rate=2)
    quota = quotas.mutation_quota("User:alice", "any", strict=False)
    assert quota is not None
    quota.record(20)  # 22 tokens: 2 left
    assert quota.throttle_ms() == 0
    quota.record(5)  # -3 tokens at 2 a second: 1.5 s
    assert quota.throttle_ms() == 1500
    quota.record(1)
    assert quota.throttle_ms() == 2000
    # another user under the default user quota has a bucket of its own
    bob = quotas.mutation_quota("User:bob", "any", strict=False)
    assert bob is not None
    bob.record(22)
    assert bob.throttle_ms() == 0


def test_the_bucket_is_the_controller_quota_windows(tmp_path) -> None:
    clock = Clock()
    quotas = ClientQuotas(ClientQuotaStore(tmp_path), 11, 1, mutation_samples=2,
                          mutation_window_seconds=3)
    quotas.now_ms = clock  # type: ignore[method-assign]
    _set(quotas, [("client-id", "app")], controller_mutation_rate=1)
    quota = quotas.mutation_quota("User:ANONYMOUS", "app", strict=False)
    assert quota is not None
    quota.record(7)  # 2 windows of 3 s: 6 tokens
    assert quota.throttle_ms() == 1000


# Request quota --------------------------------------------------------------------------------

def test_every_api_but_the_exempt_ones_is_metered(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", "app")], request_percentage=0.01)
    assert quotas.request.enabled
    mutes: list[int] = []
    # DescribeConfigs v4: 5 ms of handler time is far over 0.01% of one second
    answer = request_quota.handle(_describe_configs, _ctx(quotas, 32, 4, mutes=mutes), None)
    throttle_ms = answer.throttle_time.total_seconds() * 1000
    assert throttle_ms > 0
    assert mutes == [throttle_ms]
    # Kafka throttles ApiVersions once it reaches KafkaApis as well
    api_versions = request_quota.handle(_describe_configs, _ctx(quotas, 18, 3, mutes=mutes),
                                        None)
    assert api_versions.throttle_time > timedelta(0) and len(mutes) == 2
    # a cluster action (UpdateMetadata), and Produce and Fetch (their handlers meter them), not
    for key in (6, 0, 1):
        assert request_quota.handle(_describe_configs, _ctx(quotas, key, 4, mutes=mutes),
                                    None).throttle_time == timedelta(0)
    # another client id has no quota
    other = request_quota.handle(_describe_configs, _ctx(quotas, 32, 4, "free", mutes), None)
    assert other.throttle_time == timedelta(0) and len(mutes) == 2


def test_a_response_without_throttle_time_still_mutes(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", "app")], request_percentage=0.01)
    mutes: list[int] = []

    def metadata_v0(ctx: RequestContext, _body: Any) -> Any:
        _busy(5)
        return ctx.respond(brokers=(), topics=())

    answer = request_quota.handle(metadata_v0, _ctx(quotas, 3, 0, mutes=mutes), None)
    assert not hasattr(answer, "throttle_time") and mutes and mutes[0] > 0


def test_a_coroutine_is_charged_its_steps_not_its_waits(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    # 1% of a second: 10 ms of handler time in the (at least one) second measured
    _set(quotas, [("client-id", "app")], request_percentage=1)

    async def waits(ctx: RequestContext, _body: Any) -> Any:
        await asyncio.sleep(0.1)
        return ctx.respond(throttle_time=timedelta(0), results=())

    async def works(ctx: RequestContext, _body: Any) -> Any:
        await asyncio.sleep(0)
        _busy(30)
        return ctx.respond(throttle_time=timedelta(0), results=())

    async def run(handler: Any, client_id: str) -> Any:
        return await request_quota.handle(handler, _ctx(quotas, 32, 4, client_id), None)

    assert asyncio.run(run(waits, "app")).throttle_time == timedelta(0)
    _set(quotas, [("client-id", "busy")], request_percentage=1)
    assert asyncio.run(run(works, "busy")).throttle_time > timedelta(0)


def test_a_future_answer_is_throttled_when_it_completes(tmp_path) -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", "app")], request_percentage=0.01)
    mutes: list[int] = []

    async def scenario() -> None:
        parked = ParkedResponse()
        ctx = _ctx(quotas, 11, 9, mutes=mutes)  # a parked JoinGroup

        def join(_ctx: RequestContext, _body: Any) -> Any:
            _busy(5)
            return parked

        answer = request_quota.handle(join, ctx, None)
        assert type(answer) is ParkedResponse and answer is not parked
        written: list[Any] = []
        answer.add_listener(lambda done: written.append(done.result()))
        assert not mutes
        parked.set_result(ctx.respond(throttle_time=timedelta(0), error_code=ErrorCode.none,
                                      generation_id=1, protocol_type="consumer",
                                      protocol_name="range", leader="m", skip_assignment=False,
                                      member_id="m", members=()))
        # completed inside the completer, as a parked answer is written
        assert written and written[0].throttle_time > timedelta(0) and mutes

    asyncio.run(scenario())


def test_the_larger_of_the_handlers_throttle_and_the_request_quotas_is_answered(tmp_path) \
        -> None:
    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", "app")], request_percentage=0.01)

    def create_topics(ctx: RequestContext, _body: Any) -> Any:  # a mutation quota's throttle
        return ctx.respond(throttle_time=timedelta(seconds=30), topics=())

    answer = request_quota.handle(create_topics, _ctx(quotas, 19, 7, mutes=[]), None)
    assert answer.throttle_time == timedelta(seconds=30)


def test_produce_with_acks_0_is_exempt_from_the_request_quota(tmp_path) -> None:
    from kafkette.broker.handlers._quota import produce_under_quota
    from kafkette.broker.responses import NO_RESPONSE

    quotas = _quotas(tmp_path)
    _set(quotas, [("client-id", "app")], request_percentage=0.01)
    mutes: list[int] = []

    def produce() -> Any:
        _busy(5)
        return NO_RESPONSE

    for acks, muted in ((0, False), (1, True)):
        request = SimpleNamespace(topic_data=(), acks=acks)
        assert produce_under_quota(_ctx(quotas, 0, 9, mutes=mutes), request, quotas,
                                   produce) is NO_RESPONSE
        assert bool(mutes) is muted
