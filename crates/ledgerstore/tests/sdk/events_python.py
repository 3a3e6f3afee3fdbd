#!/usr/bin/env python3
"""getEvents through the real Python client, stellar-sdk's SorobanServer,
against the independent event oracle of the 20 real pubnet ledgers
63092982..=63093001 (crates/stellar/testdata/events_oracle.py; the test
passes that corpus's events as a JSON list).

Usage: PYTHON events_python.py ENDPOINT_URL ORACLE_EVENTS_JSON
  The daemon must hold exactly those 20 ledgers with their events indexed.

Each check group pages to the end of the range with the SDK and compares
the events, field for field, with the oracle filtered the same way
(topics and values by the sha256 of their XDR, as the oracle lists them).
Prints one PASS/FAIL line per group, then `N passed, M failed`.
"""
import base64
import hashlib
import json
import sys
from collections import Counter

from stellar_sdk import SorobanServer
from stellar_sdk.exceptions import SorobanRpcErrorResponse
from stellar_sdk.soroban_rpc import EventFilter, EventFilterType

FIRST, LAST = 63092982, 63093001
MAX_PAGES = 400


def sha16(b64):
    return hashlib.sha256(base64.b64decode(b64)).hexdigest()[:16]


def record(e):
    """An SDK EventInfo in the oracle's shape."""
    return {
        "id": e.id,
        "ledger": e.ledger,
        "type": e.event_type,
        "contract": e.contract_id or None,
        "tx": e.transaction_hash,
        "op": e.operation_index,
        "txi": e.transaction_index,
        "ok": e.in_successful_contract_call,
        "topics": [sha16(t) for t in e.topic],
        "value": sha16(e.value),
    }


def strip(o):
    return {k: v for k, v in o.items() if k != "event"}


def page_all(server, filters, limit):
    """Every event of the range, paged with the SDK's cursor."""
    got, raw = [], []
    r = server.get_events(start_ledger=FIRST, filters=filters, limit=limit)
    for _ in range(MAX_PAGES):
        got.extend(record(e) for e in r.events)
        raw.extend(r.events)
        if r.latest_ledger != LAST:
            raise AssertionError(f"latestLedger {r.latest_ledger}, want {LAST}")
        if not r.events and r.cursor.startswith("%019d" % ((LAST << 32) | (0xFFFFF << 12) | 0xFFF)):
            return got, raw
        r = server.get_events(filters=filters, cursor=r.cursor, limit=limit)
    raise AssertionError("paging did not end")


results = []


def group(name, fn):
    try:
        problems = fn()
    except Exception as e:  # noqa: BLE001 - a failed group is reported, not raised
        problems = [f"{type(e).__name__}: {e}"]
    results.append(not problems)
    print(("PASS " if not problems else "FAIL ") + name)
    for p in problems[:10]:
        print("    " + p)


def compare(got, want):
    problems = []
    if len(got) != len(want):
        problems.append(f"{len(got)} events, the oracle has {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            problems.append(f"event {i}: got {g}, want {w}")
    return problems


def main():
    url, oracle_path = sys.argv[1], sys.argv[2]
    with open(oracle_path) as f:
        oracle = [strip(o) for o in json.load(f)]
    server = SorobanServer(url)
    everything = {}

    def all_events():
        got, raw = page_all(server, [], 1000)
        everything["raw"] = raw
        return compare(got, oracle)

    group("every event, unfiltered, pages of 1000", all_events)
    raw = everything.get("raw") or []

    busiest = [c for c, _ in Counter(o["contract"] for o in oracle if o["contract"]).most_common(2)]

    def by_contract():
        f = [EventFilter(contract_ids=busiest[:1])]
        got, _ = page_all(server, f, 200)
        return compare(got, [o for o in oracle if o["contract"] == busiest[0]])

    group("by contract id, pages of 200", by_contract)

    def two_contracts_two_filters():
        f = [EventFilter(contract_ids=[busiest[0]]), EventFilter(contract_ids=[busiest[1]])]
        got, _ = page_all(server, f, 97)
        return compare(got, [o for o in oracle if o["contract"] in busiest])

    group("two filters (OR), pages of 97", two_contracts_two_filters)

    def by_topic():
        t0 = raw[0].topic[0]
        h = sha16(t0)
        problems = []
        for topics, want in [
            ([t0, "**"], lambda o: o["topics"][:1] == [h]),
            ([t0, "*"], lambda o: len(o["topics"]) == 2 and o["topics"][0] == h),
            (["*", "*", "*"], lambda o: len(o["topics"]) == 3),
            (["*", "**"], lambda o: len(o["topics"]) >= 1),
        ]:
            got, _ = page_all(server, [EventFilter(topics=[topics])], 500)
            problems += [f"{topics}: {p}" for p in compare(got, [o for o in oracle if want(o)])]
        return problems

    group("by topic with * and ** wildcards", by_topic)

    def by_type_and_contract_and_topic():
        t1 = next(e for e in raw if e.contract_id == busiest[0] and len(e.topic) >= 2).topic[1]
        h = sha16(t1)
        f = [EventFilter(event_type=EventFilterType.CONTRACT, contract_ids=[busiest[0]],
                         topics=[["*", t1, "**"]])]
        got, _ = page_all(server, f, 50)
        want = [o for o in oracle if o["type"] == "contract" and o["contract"] == busiest[0]
                and o["topics"][1:2] == [h]]
        return compare(got, want) or ([] if want else ["the filter matched nothing"])

    group("type, contract and topic together", by_type_and_contract_and_topic)

    def by_type():
        problems = []
        for t in [EventFilterType.SYSTEM, EventFilterType.CONTRACT]:
            got, _ = page_all(server, [EventFilter(event_type=t)], 1000)
            problems += compare(got, [o for o in oracle if o["type"] == t.value])
        return problems

    group("by type", by_type)

    def refusals():
        problems = []
        for kwargs, want in [
            (dict(start_ledger=FIRST - 1), f"startLedger must be within the ledger range: {FIRST} - {LAST}"),
            (dict(start_ledger=FIRST, limit=10001), "limit must not exceed 10000"),
        ]:
            try:
                server.get_events(**kwargs)
                problems.append(f"{kwargs}: answered")
            except SorobanRpcErrorResponse as e:
                if want not in str(e.message):
                    problems.append(f"{kwargs}: {e.message!r}, want {want!r}")
        return problems

    group("refusals in stellar-rpc's words", refusals)

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


main()
