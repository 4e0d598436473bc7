"""The console, ``/v1/groups`` and ``/metrics`` with a KIP-848 consumer group beside a classic one.

A consumer group (``group.protocol=consumer``) is joined and commits over the wire
(ConsumerGroupHeartbeat, OffsetCommit with its member epoch); every admin page answers 200 and
shows both groups with their type, state, members, assignments and lag.
"""

from __future__ import annotations

import asyncio
import urllib.error
import uuid
from datetime import timedelta

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.groups.helpers import wait_until
from tests.wire import WireClient, entity

from .browser import dump_dom, parse
from .conftest import GROUP, TOPIC, LiveGroup, get, get_json
from .test_metrics import parse_metrics, series

NEW_GROUP = "kip848-audit"


def join_and_commit(bootstrap: str, offset: int) -> str:
    """One KIP-848 member of NEW_GROUP on TOPIC, reconciled; it commits ``offset`` on partition 0."""
    member_id = str(uuid.uuid4())
    with WireClient(bootstrap) as w:
        epoch, assigned = 0, set()
        for _ in range(50):
            answer = w.request(68, 1, group_id=NEW_GROUP, member_id=member_id, member_epoch=epoch,
                               instance_id=None, rack_id=None,
                               rebalance_timeout=timedelta(seconds=30),
                               subscribed_topic_names=(TOPIC,) if epoch == 0 else None,
                               subscribed_topic_regex=None, server_assignor=None,
                               topic_partitions=None if epoch else ())
            assert answer.error_code == 0, answer
            epoch = answer.member_epoch
            if answer.assignment is not None:
                assigned = {p for t in answer.assignment.topic_partitions for p in t.partitions}
            if len(assigned) == 2:
                break
        assert assigned == {0, 1}
        commit = request_type(8, 9)
        partition = make(item_type(item_type(commit, "topics"), "partitions"),
                         partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                         committed_metadata="")
        committed = w.request(8, 9, group_id=NEW_GROUP, generation_id_or_member_epoch=epoch,
                              member_id=member_id, group_instance_id=None,
                              topics=(entity(commit, "topics", name=TOPIC,
                                             partitions=(partition,)),))
        assert committed.topics[0].partitions[0].error_code == 0, committed
    return member_id


async def test_admin_pages_answer_with_a_kip848_group(live_group: LiveGroup):
    url = live_group.url
    member_id = await asyncio.to_thread(join_and_commit, live_group.broker.bootstrap, 3)

    listed = {g["group_id"]: g for g in get_json(f"{url}/v1/groups")}
    assert listed[GROUP]["type"] == "classic" and listed[GROUP]["state"] == "Stable"
    assert listed[NEW_GROUP]["type"] == "consumer"
    assert listed[NEW_GROUP]["protocol_type"] == "consumer"
    assert listed[NEW_GROUP]["members"] == 1

    group = get_json(f"{url}/v1/groups/{NEW_GROUP}")
    assert group["type"] == "consumer" and group["state"] == "Stable"
    assert [m["member_id"] for m in group["members"]] == [member_id]
    assert sorted((a["topic"], a["partition"]) for a in group["members"][0]["assignment"]) == [
        (TOPIC, 0), (TOPIC, 1)]
    lag = {row["partition"]: row for row in group["offsets"]}
    assert lag[0]["committed_offset"] == 3 and lag[0]["lag"] == live_group.end_offsets[0] - 3
    assert lag[1]["member_id"] == member_id

    m = parse_metrics(get(f"{url}/metrics").decode())
    assert series(m, "kafka_consumergroup_members", consumergroup=NEW_GROUP) == 1
    assert series(m, "kafka_consumergroup_members", consumergroup=GROUP) == 1
    assert series(m, "kafka_consumergroup_current_offset", consumergroup=NEW_GROUP, topic=TOPIC,
                  partition="0") == 3
    assert series(m, "kafkette_groups", state="Stable", protocol_type="consumer") == 2

    for path in ("/", f"/groups/{NEW_GROUP}", f"/groups/{GROUP}"):
        get(f"{url}{path}")  # 200, or urllib raises
    page = parse(await asyncio.to_thread(dump_dom, f"{url}/groups/{NEW_GROUP}"))
    assert page.find(id="group-id").text == NEW_GROUP
    assert page.find(id="group-state").text == "Stable"
    members = page.find("table", id="members").find_all("tr", cls="member")
    assert member_id in members[0].text and f"{TOPIC}-0, {TOPIC}-1" in members[0].text
    overview = parse(await asyncio.to_thread(dump_dom, f"{url}/"))
    assert "Stable" in overview.find("table", id="groups").find("tr", data_group=NEW_GROUP).text


async def test_unknown_group_is_404(live_group: LiveGroup):
    await wait_until(lambda: True)
    try:
        get(f"{live_group.url}/v1/groups/nobody")
    except urllib.error.HTTPError as exc:
        assert exc.code == 404
    else:
        raise AssertionError("expected 404")
