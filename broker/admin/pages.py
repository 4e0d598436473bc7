"""The console's HTML, rendered on the server from the dicts of ``views``.

Plain HTML with one stylesheet and one small script (static/), no build step and nothing
loaded from elsewhere. The script keeps a group page live: it reloads the page's live part
(state, members, lag) and appends the coordinator's new events to the rebalance timeline.
"""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any
from urllib.parse import quote

_NAV = ('<nav><a href="/">kafkette</a> <a href="/#groups">Groups</a> '
        '<a href="/#topics">Topics</a> <a href="/clients">Clients</a> '
        '<a href="/config">Broker config</a> '
        '<a href="/metrics">/metrics</a></nav>')


def _page(title: str, body: str, script: bool = False) -> str:
    js = '<script src="/static/console.js" defer></script>' if script else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{escape(title)} · kafkette</title>'
            f'<link rel="stylesheet" href="/static/console.css">{js}</head>'
            f'<body>{_NAV}<main>{body}</main></body></html>')


def _cell(value: Any, cls: str = "") -> str:
    text = "–" if value is None else escape(str(value))
    return f'<td class="{cls}">{text}</td>' if cls else f"<td>{text}</td>"


def _table(headers: list[str], rows: list[str], table_id: str = "", empty: str = "none",
           attrs: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(rows) or f'<tr class="empty"><td colspan="{len(headers)}">{escape(empty)}</td></tr>'
    ident = f' id="{table_id}"' if table_id else ""
    return f"<table{ident}{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _group_link(group_id: str) -> str:
    return f'<a href="/groups/{quote(group_id, safe="")}">{escape(group_id)}</a>'


def _topic_link(name: str, partition: int | None = None) -> str:
    query = "" if partition is None else f"?partition={partition}"
    return f'<a href="/topics/{quote(name, safe="")}{query}">{escape(name)}</a>'


def _state(state: str) -> str:
    return f'<span class="state state-{escape(state)}">{escape(state)}</span>'


def _groups_table(groups: list[dict[str, Any]]) -> str:
    rows = [f'<tr data-group="{escape(g["group_id"])}"><td>{_group_link(g["group_id"])}</td>'
            f'<td>{_state(g["state"])}</td>{_cell(g["protocol_type"])}{_cell(g["protocol"])}'
            f'{_cell(g["generation"])}{_cell(g["members"])}</tr>' for g in groups]
    return _table(["Group", "State", "Protocol type", "Protocol", "Generation", "Members"],
                  rows, "groups", "no groups yet")


def _topics_table(topics: list[dict[str, Any]]) -> str:
    rows = []
    for t in topics:
        parts = t["partitions"]
        rows.append(f'<tr><td>{_topic_link(t["name"])}{" (internal)" if t["internal"] else ""}'
                    f'</td>{_cell(len(parts))}'
                    f'{_cell(sum(p["log_end_offset"] - p["log_start_offset"] for p in parts))}'
                    f'{_cell(_size(sum(p["size_bytes"] for p in parts)))}</tr>')
    return _table(["Topic", "Partitions", "Records", "Size"], rows, "topics", "no topics yet")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _node_row(node: dict[str, Any], controller: int) -> str:
    address = f'{node["host"]}:{node["port"]}'
    role = "controller" if node["id"] == controller else ""
    return (f'<tr class="node">{_cell(node["id"])}{_cell(address, "mono")}'
            f'{_cell(node["state"])}{_cell(role)}</tr>')


def index(info: dict[str, Any], groups: list[dict[str, Any]],
          topics: list[dict[str, Any]]) -> str:
    ready = "" if info["coordinator_ready"] else ' <span class="warn">(coordinator loading)</span>'
    nodes = info["nodes"]
    node_rows = [_node_row(n, info["controller"]) for n in nodes]
    body = (f'<h1>kafkette <small>{escape(info["bootstrap"])}</small></h1>'
            f'<p>cluster {escape(info["cluster_id"])} · {len(nodes)} '
            f'{"node" if len(nodes) == 1 else "nodes"} · '
            f'{info["connections"]} connections{ready}</p>'
            f'<h2 id="nodes">Nodes</h2>'
            + _table(["Node", "Address", "State", "Role"], node_rows, "nodes")
            + f'<h2 id="groups">Consumer groups</h2>{_groups_table(groups)}'
            f'<h2 id="topics">Topics</h2>{_topics_table(topics)}')
    return _page("overview", body)


def config(info: dict[str, Any]) -> str:
    rows = [f"<tr>{_cell(k)}{_cell(v, 'mono')}</tr>" for k, v in info["config"].items()]
    return _page("broker config", "<h1>Broker config</h1>" + _table(["Key", "Value"], rows))


def group(group_id: str, found: dict[str, Any] | None, since_ms: int) -> str:
    """``since_ms``: when the broker started, the timeline's first possible event."""
    gid = escape(group_id)
    body = (f'<h1>Group <span id="group-id">{gid}</span></h1>'
            f'<div id="live" data-src="/groups/{quote(group_id, safe="")}/live">'
            f'{group_live(group_id, found)}</div>'
            f'<h2>Rebalance timeline <small id="timeline-status">connecting…</small></h2>'
            f'<p class="hint" id="timeline-since">The coordinator\'s own events since the broker '
            f'started at {_timestamp(since_ms)}, newest first, updated live. They are kept in '
            f'memory: a restart of the broker starts the timeline afresh.</p>'
            + _table(["Time", "Event", "Details"], [], "timeline", "waiting for events…",
                     f' data-group="{gid}"'))
    return _page(f"group {group_id}", body, script=True)


def group_live(group_id: str, g: dict[str, Any] | None) -> str:
    """The part of the group page the script reloads: summary, members, offsets and lag."""
    if g is None:
        return f'<p class="warn" id="group-state">No group {escape(group_id)!s} (Dead or unknown).</p>'
    rebalances = g["rebalances"] or {}
    last = rebalances.get("last_ms")
    summary = (f'<dl class="summary"><dt>State</dt><dd id="group-state">{_state(g["state"])}</dd>'
               f'<dt>Protocol</dt><dd>{escape(g["protocol_type"] or "–")} / '
               f'{escape(g["protocol"] or "–")}</dd>'
               f'<dt>Generation</dt><dd id="group-generation">{g["generation"]}</dd>'
               f'<dt>Rebalances</dt><dd>{rebalances.get("count", 0)}'
               f'{"" if last is None else f" (last took {last} ms)"}'
               f'{" · in progress" if rebalances.get("in_progress") else ""}</dd></dl>')
    members = []
    for m in g["members"]:
        assignment = ", ".join(f'{escape(a["topic"])}-{a["partition"]}' for a in m["assignment"])
        leader = ' <span class="badge">leader</span>' if m["is_leader"] else ""
        members.append(f'<tr class="member"><td class="mono">{escape(m["member_id"])}{leader}</td>'
                       f'{_cell(m["instance_id"])}{_cell(m["client_id"])}{_cell(m["client_host"])}'
                       f'<td>{assignment or "–"}</td></tr>')
    offsets = []
    for o in g["offsets"]:
        lag = o["lag"]
        cls = "lag" if not lag else "lag behind"
        offsets.append(f'<tr class="offset" data-topic="{escape(o["topic"])}" '
                       f'data-partition="{o["partition"]}">'
                       f'<td>{_topic_link(o["topic"], o["partition"])}</td>{_cell(o["partition"])}'
                       f'{_cell(o["committed_offset"])}{_cell(o["log_end_offset"])}'
                       f'{_cell(lag, cls)}{_cell(o["member_id"], "mono")}</tr>')
    return (summary
            + f'<h2>Members ({len(g["members"])})</h2>'
            + _table(["Member", "Instance", "Client", "Host", "Assignment"], members, "members",
                     "no members")
            + "<h2>Offsets and lag</h2>"
            + _table(["Topic", "Partition", "Committed", "Log end", "Lag", "Owner"], offsets,
                     "offsets", "no committed offsets")
            + _share_partitions(g.get("share_partitions")))


def _share_partitions(rows: list[dict[str, Any]] | None) -> str:
    """A share group's share-partitions: start offset, in-flight records by state, lag."""
    if rows is None:
        return ""
    cells = []
    for r in rows:
        lag = r["lag"]
        cells.append(f'<tr class="share-partition" data-topic="{escape(r["topic"])}" '
                     f'data-partition="{r["partition"]}">'
                     f'<td>{_topic_link(r["topic"], r["partition"])}</td>{_cell(r["partition"])}'
                     f'{_cell(r["start_offset"])}{_cell(r["log_end_offset"])}'
                     f'{_cell(r["in_flight"])}{_cell(r["acquired"])}'
                     f'{_cell(r["acknowledged"])}{_cell(r["archived"])}'
                     f'{_cell(lag, "lag" if not lag else "lag behind")}</tr>')
    return ("<h2>Share-partitions</h2>"
            + _table(["Topic", "Partition", "Start offset", "Log end", "In flight", "Acquired",
                      "Acknowledged", "Archived", "Lag"], cells, "share-partitions",
                     "no share-partition state"))


def _shown(value: dict[str, Any] | None) -> str:
    if value is None:
        return '<span class="null">null</span>'
    cut = "…" if value["truncated"] else ""
    if value["text"] is not None:
        return f'<span class="text">{escape(value["text"])}{cut}</span>'
    return f'<span class="hex" title="hex">0x{value["hex"]}{cut}</span>'


def _timestamp(ms: int) -> str:
    if ms < 0:
        return "–"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")


def _transaction_cell(status: str | None) -> str:
    """A transactional record's state: committed, open (not yet visible to read_committed
    consumers) or aborted (never visible to them); empty for other records."""
    return _cell(status or "", f"txn {status}" if status else "")


def topic(t: dict[str, Any], partition: int, limit: int, found: dict[str, Any] | None) -> str:
    name = t["name"]
    parts = [f'<tr><td><a href="?partition={p["partition"]}&amp;limit={limit}">'
             f'{p["partition"]}</a></td>{_cell(p["log_start_offset"])}{_cell(p["log_end_offset"])}'
             f'{_cell(_size(p["size_bytes"]))}</tr>' for p in t["partitions"]]
    options = "".join(f'<option value="{p["partition"]}"{" selected" if p["partition"] == partition else ""}>'
                      f'{p["partition"]}</option>' for p in t["partitions"])
    committed = found is not None and found["isolation"] == "read_committed"
    checked = " checked" if committed else ""
    form = (f'<form method="get" class="browse">Partition <select name="partition">{options}'
            f'</select> latest <input name="limit" type="number" min="1" max="1000" '
            f'value="{limit}"> records <label><input type="checkbox" name="isolation" '
            f'value="read_committed"{checked}> read_committed</label> <button>Show</button></form>')
    if found is None:
        records = f'<p class="warn">No partition {escape(name)}-{partition}.</p>'
    else:
        rows = [f'<tr class="record">{_cell(r["offset"])}{_cell(_timestamp(r["timestamp"]))}'
                f'<td>{_shown(r["key"])}</td><td>{_shown(r["value"])}</td><td>'
                + "<br>".join(f'{escape(h["key"])}: {_shown(h["value"])}' for h in r["headers"])
                + f'</td>{_transaction_cell(r["transaction"])}</tr>'
                for r in reversed(found["records"])]
        error = f'<p class="warn">{escape(found["error"])}</p>' if found["error"] else ""
        records = error + _table(["Offset", "Timestamp", "Key", "Value", "Headers",
                                  "Transaction"], rows, "records", "no records")
    configs = "".join(f"<tr>{_cell(k)}{_cell(v, 'mono')}</tr>" for k, v in t["configs"].items())
    body = (f'<h1>Topic {escape(name)}</h1>'
            + _table(["Partition", "Log start", "Log end", "Size"], parts, "partitions")
            + f'<h2>Messages in partition {partition}</h2>{form}{records}'
            + (f"<h2>Topic config overrides</h2><table>{configs}</table>" if configs else ""))
    return _page(f"topic {name}", body)


def clients(found: list[dict[str, Any]]) -> str:
    """The clients pushing telemetry (KIP-714) and the latest value of each metric they pushed."""
    sections = []
    for c in found:
        rows = [f"<tr>{_cell(m['name'])}"
                f"{_cell(', '.join(f'{k}={v}' for k, v in sorted(m['attributes'].items())))}"
                f"{_cell(m['value'], 'num')}</tr>" for m in c["metrics"]]
        pushed = "never" if c["last_push_ms"] is None else _timestamp(int(c["last_push_ms"]))
        sections.append(
            f"<h2>{escape(c['client_id'] or '(no client id)')}</h2>"
            f"<p>instance {escape(c['client_instance_id'])} from "
            f"{escape(c['source_address'])} · every {c['push_interval_ms']} ms · "
            f"{c['pushes']} pushes, last {escape(pushed)}</p>"
            + _table(["Metric", "Attributes", "Value"], rows, empty="nothing pushed yet"))
    body = "<h1>Clients</h1>" + ("".join(sections) or
                                 "<p>No client has asked for a telemetry subscription. Add one "
                                 "with <code>kafkette client-metrics --alter</code>.</p>")
    return _page("clients", body)
