#!/usr/bin/env python3
"""Drives the daemon's stellar-rpc compatible JSON-RPC endpoint with the real
Python client, stellar-sdk's SorobanServer, and checks every answer against
the independent oracle of the 20 real pubnet ledgers 63092982..=63093001
(../shared/data/stellar/FC3D4709--63092982-63093001.oracle.json).

Usage: PYTHON rpc_python.py ENDPOINT_URL ORACLE_JSON_PATH [--inner-hash]
  PYTHON is the venv interpreter that scripts/sdk-clients.sh prints
  (`python=...`). The daemon must already hold exactly those 20 ledgers.
  --inner-hash also looks a fee-bump transaction up by its inner hash.

Prints one PASS/FAIL line per check group (with up to 10 problems under a
FAIL), then `N passed, M failed`; exits 1 if M > 0.

The SDK keeps every XDR field of these responses as the server's base64
string, so the checks hash the decoded bytes and compare them with the
oracle's sha256 of each XDR value.
"""
import base64
import hashlib
import json
import secrets
import sys

from stellar_sdk import FeeBumpTransactionEnvelope, SorobanServer, TransactionBuilder

PASSPHRASE = "Public Global Stellar Network ; September 2015"
PROTOCOL = 26
TX_PAGE = 200  # getTransactions limit per page
LEDGER_PAGE = 7  # getLedgers limit per page
MAX_PAGES = 100


def sha(b64):
    """sha256 hex of the bytes behind a base64 XDR string."""
    return hashlib.sha256(base64.b64decode(b64)).hexdigest()


def value(x):
    """Enum members (GetTransactionStatus) as their plain value."""
    return getattr(x, "value", x)


class Group:
    """The problems found by one check group."""

    def __init__(self):
        self.problems = []

    def expect(self, what, got, want):
        if got != want:
            self.problems.append(f"{what}: got {got!r}, want {want!r}")

    def fail(self, message):
        self.problems.append(message)


results = []


def run(name, check, *args):
    g = Group()
    try:
        check(g, *args)
    except Exception as e:  # a client-side parse error is a failure too
        g.fail(f"raised {type(e).__name__}: {' '.join(str(e).split())[:500]}")
    results.append(not g.problems)
    if not g.problems:
        print(f"PASS {name}")
        return
    print(f"FAIL {name}: {len(g.problems)} problem(s)")
    for p in g.problems[:10]:
        print(f"    {p}")
    if len(g.problems) > 10:
        print(f"    ... and {len(g.problems) - 10} more")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    if len(args) != 2 or flags - {"--inner-hash"}:
        sys.exit("usage: rpc_python.py ENDPOINT_URL ORACLE_JSON_PATH [--inner-hash]")
    endpoint, oracle_path = args
    with open(oracle_path) as f:
        oracle = json.load(f)
    ledgers = oracle["ledgers"]
    txs = oracle["txs"]
    first, last = ledgers[0], ledgers[-1]
    close_time = {l["seq"]: l["close_time"] for l in ledgers}

    def expect_range(g, what, resp, close_fields):
        """The latest/oldest ledger (and their close times) of a response."""
        g.expect(f"{what} latestLedger", resp.latest_ledger, last["seq"])
        g.expect(f"{what} oldestLedger", resp.oldest_ledger, first["seq"])
        latest_ct, oldest_ct = close_fields
        g.expect(f"{what} latest close time", getattr(resp, latest_ct), last["close_time"])
        g.expect(f"{what} oldest close time", getattr(resp, oldest_ct), first["close_time"])

    def expect_tx(g, what, got, want, created_at):
        """One transaction of getTransaction(s) against its oracle entry."""
        g.expect(f"{what} status", value(got.status), want["status"])
        g.expect(f"{what} ledger", got.ledger, want["ledger"])
        g.expect(f"{what} applicationOrder", got.application_order, want["application_order"])
        g.expect(f"{what} feeBump", got.fee_bump, want["fee_bump"])
        g.expect(f"{what} createdAt", created_at, close_time[want["ledger"]])
        g.expect(f"{what} envelope sha256", sha(got.envelope_xdr), want["envelope_sha256"])
        g.expect(f"{what} result sha256", sha(got.result_xdr), want["result_sha256"])
        g.expect(f"{what} meta sha256", sha(got.result_meta_xdr), want["meta_sha256"])

    with SorobanServer(endpoint) as server:

        def health(g):
            r = server.get_health()
            g.expect("status", r.status, "healthy")
            g.expect("latestLedger", r.latest_ledger, last["seq"])
            g.expect("oldestLedger", r.oldest_ledger, first["seq"])
            g.expect("ledgerRetentionWindow", r.ledger_retention_window, len(ledgers))

        def network(g):
            r = server.get_network()
            g.expect("passphrase", r.passphrase, PASSPHRASE)
            g.expect("protocolVersion", r.protocol_version, PROTOCOL)

        def latest_ledger(g):
            r = server.get_latest_ledger()
            g.expect("sequence", r.sequence, last["seq"])
            g.expect("id", r.id, last["hash"])
            g.expect("protocolVersion", r.protocol_version, PROTOCOL)
            g.expect("closeTime", r.close_time, last["close_time"])
            # A ledger's hash is the sha256 of its LedgerHeader XDR.
            g.expect("sha256(headerXdr)", sha(r.header_xdr), last["hash"])
            g.expect("sha256(metadataXdr)", sha(r.metadata_xdr), last["lcm_sha256"])

        def version_info(g):
            r = server.get_version_info()  # the model requires all five fields
            if not r.version:
                g.fail("version is empty")
            g.expect("protocolVersion", r.protocol_version, PROTOCOL)

        def transaction(g, want, lookup_hash):
            r = server.get_transaction(lookup_hash)
            # stellar-rpc echoes the hash it was asked for, the inner one included.
            g.expect("txHash", r.transaction_hash, lookup_hash)
            expect_range(g, "response", r, ("latest_ledger_close_time", "oldest_ledger_close_time"))
            expect_tx(g, "tx", r, want, r.create_at)  # sic: the SDK names it create_at
            env = TransactionBuilder.from_xdr(r.envelope_xdr, PASSPHRASE)
            g.expect("hash of the returned envelope", env.hash_hex(), want["hash"])
            if want["fee_bump"]:
                if not isinstance(env, FeeBumpTransactionEnvelope):
                    g.fail("envelope is not a fee bump")
                else:
                    inner = env.transaction.inner_transaction_envelope.hash_hex()
                    g.expect("inner hash of the envelope", inner, want["inner_hash"])

        def not_found(g):
            h = secrets.token_hex(32)
            r = server.get_transaction(h)
            g.expect("status", value(r.status), "NOT_FOUND")
            g.expect("txHash", r.transaction_hash, h)
            expect_range(g, "response", r, ("latest_ledger_close_time", "oldest_ledger_close_time"))
            # stellar-rpc leaves these out or sends them zero-valued (ledger 0).
            for field in ("ledger", "envelope_xdr", "result_xdr", "result_meta_xdr"):
                if getattr(r, field):
                    g.fail(f"{field} is set: {getattr(r, field)!r}")

        def pages(g, fetch, items_of, limit, at_end):
            """Pages from the first ledger, then by cursor, until an empty page,
            the end of the range, or a cursor that stops moving. A short page is
            not the end: ledgerstore ends a page early at its byte budget."""
            cursor = None
            for n in range(MAX_PAGES):
                r = fetch(cursor, limit)
                items = items_of(r)
                yield n, r, items
                if not items or at_end(r, items) or r.cursor == cursor:
                    return
                cursor = r.cursor
            g.fail(f"still paging after {MAX_PAGES} pages")

        def transactions(g):
            want = {t["hash"]: t for t in txs}
            seen, prev = set(), None
            fetch = lambda c, n: (
                server.get_transactions(cursor=c, limit=n) if c
                else server.get_transactions(start_ledger=first["seq"], limit=n))
            at_end = lambda r, items: False  # an empty page ends it
            for n, r, page in pages(g, fetch, lambda r: r.transactions, TX_PAGE, at_end):
                expect_range(g, f"page {n}", r,
                             ("latest_ledger_close_timestamp", "oldest_ledger_close_timestamp"))
                for t in page:
                    h = t.transaction_hash
                    if h not in want:
                        g.fail(f"tx {h}: not in the oracle")
                        continue
                    if h in seen:
                        g.fail(f"tx {h}: seen twice")
                    seen.add(h)
                    key = (t.ledger, t.application_order)
                    if prev is not None and key <= prev:
                        g.fail(f"tx {h}: {key} comes after {prev}")
                    prev = key
                    expect_tx(g, f"tx {h}", t, want[h], t.created_at)
            missing = len(want) - len(seen)
            if missing:
                g.fail(f"{missing} of the oracle's {len(want)} txs never came")

        def ledger_pages(g):
            want = {l["seq"]: l for l in ledgers}
            seen = []
            fetch = lambda c, n: (
                server.get_ledgers(cursor=c, limit=n) if c
                else server.get_ledgers(start_ledger=first["seq"], limit=n))
            at_end = lambda r, items: items[-1].sequence >= r.latest_ledger
            for n, r, page in pages(g, fetch, lambda r: r.ledgers, LEDGER_PAGE, at_end):
                expect_range(g, f"page {n}", r,
                             ("latest_ledger_close_time", "oldest_ledger_close_time"))
                for l in page:
                    w = want.get(l.sequence)
                    if w is None:
                        g.fail(f"ledger {l.sequence}: not in the oracle")
                        continue
                    if seen and l.sequence != seen[-1] + 1:
                        g.fail(f"ledger {l.sequence} follows {seen[-1]}")
                    seen.append(l.sequence)
                    what = f"ledger {l.sequence}"
                    g.expect(f"{what} hash", l.hash, w["hash"])
                    g.expect(f"{what} ledgerCloseTime", l.ledger_close_time, w["close_time"])
                    g.expect(f"{what} sha256(headerXdr)", sha(l.header_xdr),
                             w["header_history_entry_sha256"])
                    g.expect(f"{what} sha256(metadataXdr)", sha(l.metadata_xdr), w["lcm_sha256"])
            g.expect("ledgers seen", seen, sorted(want))

        success = next(t for t in txs if t["status"] == "SUCCESS" and not t["fee_bump"])
        failed = next(t for t in txs if t["status"] == "FAILED" and not t["fee_bump"])
        bump = next(t for t in txs if t["fee_bump"])

        run("getHealth", health)
        run("getNetwork", network)
        run("getLatestLedger", latest_ledger)
        run("getVersionInfo", version_info)
        run(f"getTransaction SUCCESS {success['hash']}", transaction, success, success["hash"])
        run(f"getTransaction FAILED {failed['hash']}", transaction, failed, failed["hash"])
        run(f"getTransaction fee bump {bump['hash']}", transaction, bump, bump["hash"])
        if "--inner-hash" in flags:
            run(f"getTransaction fee bump by inner hash {bump['inner_hash']}",
                transaction, bump, bump["inner_hash"])
        run("getTransaction NOT_FOUND", not_found)
        run(f"getTransactions ({len(txs)} txs, limit {TX_PAGE})", transactions)
        run(f"getLedgers ({len(ledgers)} ledgers, limit {LEDGER_PAGE})", ledger_pages)

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(1 if passed < len(results) else 0)


if __name__ == "__main__":
    main()
