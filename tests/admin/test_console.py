"""The web console in real headless Chromium: what a person sees after the page's scripts ran."""

from __future__ import annotations

import asyncio
from pathlib import Path

from .browser import dump_dom, parse
from .conftest import GROUP, TOPIC, LiveGroup, get_json
from .screenshot import take


async def test_group_page_shows_state_members_lag_and_live_timeline(live_group: LiveGroup):
    member_id = get_json(f"{live_group.url}/v1/groups/{GROUP}")["members"][0]["member_id"]
    page = parse(await asyncio.to_thread(dump_dom, f"{live_group.url}/groups/{GROUP}"))

    assert page.find(id="group-id").text == GROUP
    assert page.find(id="group-state").text == "Stable"
    members = page.find("table", id="members").find_all("tr", cls="member")
    assert [m.find("td").text.replace(" leader", "") for m in members] == [member_id]
    assert "audit-client" in members[0].text and f"{TOPIC}-0, {TOPIC}-1" in members[0].text
    for partition, end in live_group.end_offsets.items():
        row = page.find("tr", cls="offset", data_topic=TOPIC, data_partition=str(partition))
        cells = [td.text for td in row.find_all("td")]
        committed = live_group.committed[partition]
        assert cells[2:5] == [str(committed), str(end), str(end - committed)], cells
    # The timeline is filled only by the page's script, from the coordinator's own events.
    assert page.find("body").attrs.get("data-live") == "on"
    kinds = [row.find("td", cls="kind").text
             for row in page.find("table", id="timeline").find_all("tr", cls="event")]
    # newest first: the one member joined, its rebalance formed generation 1 and completed
    assert kinds == ["rebalance-completed", "generation", "rebalance-started", "member-joined"]


async def test_message_browser_shows_a_produced_record(live_group: LiveGroup):
    page = parse(await asyncio.to_thread(
        dump_dom, f"{live_group.url}/topics/{TOPIC}?partition=0&limit=3"))
    records = page.find("table", id="records").find_all("tr", cls="record")
    assert len(records) == 3
    newest = [td.text for td in records[0].find_all("td")]
    assert newest[0] == str(live_group.end_offsets[0] - 1)
    assert newest[3] == live_group.produced_value.decode()
    assert "source: checkout" in newest[4] and "raw: 0x00ff" in newest[4]


async def test_overview_lists_the_group_and_topic(live_group: LiveGroup):
    page = parse(await asyncio.to_thread(dump_dom, f"{live_group.url}/"))
    row = page.find("table", id="groups").find("tr", data_group=GROUP)
    assert "Stable" in row.text and "consumer" in row.text
    topics = page.find("table", id="topics").text
    assert TOPIC in topics and str(sum(live_group.end_offsets.values())) in topics


async def test_readme_screenshot_script(tmp_path: Path):
    """tests/admin/screenshot.py (which made docs/console-group.png) still works."""
    out = await asyncio.to_thread(take, tmp_path / "group.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
