#!/usr/bin/env python3
"""Independent oracle for getEvents: the contract events stellar-rpc v28
serves for the real ledgers of this folder, decoded with the Python
`stellar-sdk` (py-stellar-base) XDR types, not with this project's code.

Run it with the venv scripts/sdk-clients.sh makes (stellar-sdk 16.1.1):

    python=$(scripts/sdk-clients.sh | sed -n 's/^python=//p')
    "$python" crates/stellar/testdata/events_oracle.py

It needs the `zstd` command. It writes `events.oracle.json.zst` beside
itself (zstd -19; read it with `zstd -dc`).

The rules, from stellar-rpc (commit 41b2f0ff, Protocol 28 GA) and
go-stellar-sdk (the `ingest` and `protocols/rpc` packages it calls):

- `cmd/stellar-rpc/internal/db/event.go` `InsertEvents`: for each tx of the
  ledger, in apply order (`tx.Index`, 1-based), `tx.GetTransactionEvents()`;
  its `TransactionEvents` (tx-level, V4 only) and `OperationEvents` are
  stored, its `DiagnosticEvents` are not. Every stored event carries
  `InSuccessfulContractCall = tx.Successful()` (result code txSUCCESS or
  txFEE_BUMP_INNER_SUCCESS). Ids (`protocol.Cursor`, "%019d-%010d" of
  toid(ledger, tx, op) and the event index):
    - stage BEFORE_ALL_TXS: (ledger, 0, 0, n), n counting such events over
      the whole ledger;
    - stage AFTER_ALL_TXS: (ledger, 0xFFFFF, 0, n), n over the ledger;
    - stage AFTER_TX: (ledger, tx, 0xFFF, n), n over the tx;
    - operation i's events: (ledger, tx, i, n), n over the operation.
  A query returns them in id order (`ORDER BY id`); `transactionIndex` and
  `operationIndex` of the answer are the cursor's tx and op.
- go-stellar-sdk `ingest/ledger_transaction.go` `GetTransactionEvents`:
  meta V1, V2: none. V3: none unless the tx is a Soroban tx (its envelope
  carries SorobanTransactionData: `IsSorobanTx`); then operation 0's
  events are `sorobanMeta.events` (none without a sorobanMeta). V4:
  `events` (tx-level, with their stage), each operation's `events`.
  V0 is an error there ("unsupported TransactionMeta version"); this
  oracle records such txs as having no events (none of these files has
  one).
- the event's `type` is its ContractEvent type (system / contract /
  diagnostic); `contractId` its contract id as a strkey.

For every corpus the oracle gives counts (by type, by stage, the
diagnostic events not served) and the SHA-256 of its events' canonical
lines (below), in id order, ledgers in file order. For the 20 pubnet
ledgers of 2026 it also lists every event:
  id, ledger, type, contract (strkey or null), tx (hash hex), op
  (operationIndex), txi (transactionIndex), ok (inSuccessfulContractCall),
  topics (SHA-256 of each topic's XDR, first 16 hex digits), value
  (likewise), event (likewise, of the whole ContractEvent).

Canonical line of an event (UTF-8, '\\n'-terminated):
  "{id} {type} {contract or -} {tx hash hex} {op} {txi} {0|1}
   {sha256 hex of each topic, ','-joined, or -} {sha256 hex of value}
   {sha256 hex of the ContractEvent}" (one line, single spaces).
"""

import base64
import collections
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile

import stellar_sdk
from stellar_sdk import StrKey
from stellar_sdk import xdr as X
from stellar_sdk import TransactionBuilder

HERE = os.path.dirname(os.path.abspath(__file__))
PUBNET = "Public Global Stellar Network ; September 2015"
TX_MAX = (1 << 20) - 1
OP_MAX = (1 << 12) - 1
TYPES = {0: "system", 1: "contract", 2: "diagnostic"}
STAGES = {0: "before_all_txs", 1: "after_tx", 2: "after_all_txs"}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def unzstd(path):
    return subprocess.run(
        ["zstd", "-dc", path], capture_output=True, check=True
    ).stdout


def frames(b):
    """Record-marked XDR frames."""
    i = 0
    while i < len(b):
        (w,) = struct.unpack(">I", b[i : i + 4])
        n = w & 0x7FFFFFFF
        i += 4
        yield b[i : i + n]
        i += n


def toid(ledger, tx, op):
    assert 0 <= ledger < 1 << 31 and 0 <= tx <= TX_MAX and 0 <= op <= OP_MAX
    return (ledger << 32) | (tx << 12) | op


def event_id(ledger, tx, op, n):
    return "%019d-%010d" % (toid(ledger, tx, op), n)


def lcm_parts(lcm):
    m = {0: lcm.v0, 1: lcm.v1, 2: lcm.v2}[lcm.v]
    return m


def set_envelopes(lcm):
    m = lcm_parts(lcm)
    if lcm.v == 0:
        return list(m.tx_set.txs)
    out = []
    for phase in m.tx_set.v1_tx_set.phases:
        if phase.v == 0:
            for comp in phase.v0_components:
                out.extend(comp.txs_maybe_discounted_fee.txs)
        else:
            for stage in phase.parallel_txs_component.execution_stages:
                for cluster in stage.parallel_tx_execution_stage:
                    out.extend(cluster.dependent_tx_cluster)
    return out


def is_soroban(env):
    """go-stellar-sdk `IsSorobanTx`: the (inner) tx's ext carries
    SorobanTransactionData."""
    t = env.type
    if t == X.EnvelopeType.ENVELOPE_TYPE_TX:
        return env.v1.tx.ext.v == 1
    if t == X.EnvelopeType.ENVELOPE_TYPE_TX_FEE_BUMP:
        return env.fee_bump.tx.inner_tx.v1.tx.ext.v == 1
    return False


def successful(pair):
    code = pair.result.result.code
    return code in (
        X.TransactionResultCode.txSUCCESS,
        X.TransactionResultCode.txFEE_BUMP_INNER_SUCCESS,
    )


def ledger_events(lcm, passphrase, stats):
    """The ledger's events as stellar-rpc stores them, in id order."""
    m = lcm_parts(lcm)
    seq = m.ledger_header.header.ledger_seq.uint32
    processing = list(m.tx_processing)
    soroban = None  # hash -> IsSorobanTx, computed when a V3 meta needs it
    out = []
    before = after = 0
    for i, tp in enumerate(processing):
        index = i + 1
        pair = tp.result
        tx_hash = pair.transaction_hash.hash
        ok = successful(pair)
        meta = tp.tx_apply_processing
        tx_level = []  # (stage, ContractEvent)
        ops = []  # [[ContractEvent]]
        stats["meta_v%d" % meta.v] += 1
        if meta.v == 3:
            if soroban is None:
                soroban = {}
                for env in set_envelopes(lcm):
                    e = TransactionBuilder.from_xdr(env.to_xdr(), passphrase)
                    soroban[e.hash()] = is_soroban(env)
            if tx_hash not in soroban:
                raise SystemExit("ledger %d: tx %s not in the tx set" % (seq, tx_hash.hex()))
            sm = meta.v3.soroban_meta
            if sm is not None:
                stats["diagnostic_not_served"] += len(sm.diagnostic_events)
                stats["v3_soroban_meta"] += 1
            if soroban[tx_hash]:
                stats["v3_soroban_txs"] += 1
                ops = [list(sm.events) if sm is not None else []]
            elif sm is not None and len(sm.events) > 0:
                stats["v3_events_of_non_soroban_txs_ignored"] += len(sm.events)
        elif meta.v == 4:
            v4 = meta.v4
            tx_level = [(te.stage.value, te.event) for te in v4.events]
            ops = [list(op.events) for op in v4.operations]
            stats["diagnostic_not_served"] += len(v4.diagnostic_events)
        after_tx = 0
        for stage, ev in tx_level:
            if stage == 0:
                cur = (seq, 0, 0, before)
                before += 1
            elif stage == 2:
                cur = (seq, TX_MAX, 0, after)
                after += 1
            elif stage == 1:
                cur = (seq, index, OP_MAX, after_tx)
                after_tx += 1
            else:
                raise SystemExit("unknown stage %d" % stage)
            stats["stage_" + STAGES[stage]] += 1
            out.append((cur, tx_hash, ok, ev))
        for op, evs in enumerate(ops):
            for n, ev in enumerate(evs):
                stats["stage_operation"] += 1
                out.append(((seq, index, op, n), tx_hash, ok, ev))
    out.sort(key=lambda e: (toid(*e[0][:3]), e[0][3]))
    return seq, out


def describe(cur, tx_hash, ok, ev):
    seq, tx, op, n = cur
    assert ev.body.v == 0
    v0 = ev.body.v0
    topics = [t.to_xdr_bytes() for t in v0.topics]
    value = v0.data.to_xdr_bytes()
    whole = ev.to_xdr_bytes()
    contract = (
        StrKey.encode_contract(ev.contract_id.contract_id.hash)
        if ev.contract_id is not None
        else None
    )
    typ = TYPES[ev.type.value]
    eid = event_id(seq, tx, op, n)
    line = "%s %s %s %s %d %d %d %s %s %s\n" % (
        eid,
        typ,
        contract or "-",
        tx_hash.hex(),
        op,
        tx,
        1 if ok else 0,
        ",".join(sha(t) for t in topics) or "-",
        sha(value),
        sha(whole),
    )
    record = {
        "id": eid,
        "ledger": seq,
        "type": typ,
        "contract": contract,
        "tx": tx_hash.hex(),
        "op": op,
        "txi": tx,
        "ok": ok,
        "topics": [sha(t)[:16] for t in topics],
        "value": sha(value)[:16],
        "event": sha(whole)[:16],
    }
    return typ, line, record


def corpus(name, network, ledgers, passphrase, listing=None):
    stats = collections.Counter()
    digest = hashlib.sha256()
    by_type = collections.Counter()
    per_ledger = []
    txs = 0
    n = 0
    for lcm in ledgers:
        txs += len(lcm_parts(lcm).tx_processing)
        seq, evs = ledger_events(lcm, passphrase, stats)
        per_ledger.append((str(seq), len(evs)))
        for e in evs:
            typ, line, record = describe(*e)
            by_type[typ] += 1
            digest.update(line.encode())
            if listing is not None:
                listing.append(record)
            n += 1
    out = {
        "network": network,
        "ledgers": len(per_ledger),
        "txs": txs,
        "events": n,
        "by_type": dict(sorted(by_type.items())),
        "stats": dict(sorted(stats.items())),
        "lines_sha256": digest.hexdigest(),
    }
    if len(per_ledger) <= 40:
        out["per_ledger"] = dict(per_ledger)
    print("%s: %d ledgers, %d txs, %d events %s" % (name, len(per_ledger), txs, n, dict(by_type)), file=sys.stderr)
    return out


def main():
    corpora = {}
    listing = []

    name = "FC3D4709--63092982-63093001.xdr.zst"
    batch = X.LedgerCloseMetaBatch.from_xdr_bytes(unzstd(os.path.join(HERE, name)))
    corpora[name] = corpus(name, "pubnet", batch.ledger_close_metas, PUBNET, listing)

    for name in ["FCD285FF--53312000.xdr.zstd"]:
        batch = X.LedgerCloseMetaBatch.from_xdr_bytes(unzstd(os.path.join(HERE, name)))
        corpora[name] = corpus(name, "pubnet", batch.ledger_close_metas, PUBNET)

    eras = os.path.join(HERE, "pubnet-eras")
    for f in sorted(os.listdir(eras)):
        with open(os.path.join(eras, f)) as fh:
            lines = [l.strip() for l in fh.read().split("\n") if l.strip()]
        lcms = [X.LedgerCloseMeta.from_xdr_bytes(base64.b64decode(l)) for l in lines]
        corpora["pubnet-eras/" + f] = corpus("pubnet-eras/" + f, "pubnet", lcms, PUBNET)

    name = "load-test-ledgers-v23-standalone.xdr.zstd"
    lcms = [X.LedgerCloseMeta.from_xdr_bytes(fr) for fr in frames(unzstd(os.path.join(HERE, name)))]
    corpora[name] = corpus(name, "standalone", lcms, "Standalone Network ; February 2017")

    name = "apply-load/load-test-ledgers-v28.xdr.zstd"
    lcms = [X.LedgerCloseMeta.from_xdr_bytes(fr) for fr in frames(unzstd(os.path.join(HERE, name)))]
    corpora[name] = corpus(name, "Apply Load", lcms, "Apply Load")

    # stellar-core's unit-test streams, in the archive's order.
    name = "core-unit-test-lcms.tar.zst"
    lcms = []
    with tarfile.open(fileobj=io.BytesIO(unzstd(os.path.join(HERE, name)))) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".xdr"):
                data = tar.extractfile(member).read()
                lcms.extend(X.LedgerCloseMeta.from_xdr_bytes(fr) for fr in frames(data))
    corpora[name] = corpus(name, "(V) (;,,;) (V)", lcms, "(V) (;,,;) (V)")

    doc = {
        "made_with": "Python stellar-sdk %s (py-stellar-base), independent of this project's code; "
        "crates/stellar/testdata/events_oracle.py" % stellar_sdk.__version__,
        "semantics": "stellar-rpc v28 getEvents (stellar-rpc 41b2f0ff cmd/stellar-rpc/internal/db/event.go "
        "InsertEvents; go-stellar-sdk ingest LedgerTransaction.GetTransactionEvents); see the script's docstring",
        "corpora": corpora,
    }
    path = os.path.join(HERE, "events.oracle.json.zst")
    # One event a line: small diffs after `zstd -dc`, greppable.
    head = json.dumps(doc, indent=1, sort_keys=True)
    assert head.endswith("}")
    parts = [head[:-1].rstrip(), ',\n "events": [\n']
    for i, r in enumerate(listing):
        parts.append("  " + json.dumps(r, sort_keys=True, separators=(",", ":")))
        parts.append(",\n" if i + 1 < len(listing) else "\n")
    parts.append(" ]\n}\n")
    packed = subprocess.run(
        ["zstd", "-19", "-q", "-c"],
        input="".join(parts).encode(),
        capture_output=True,
        check=True,
    ).stdout
    with open(path, "wb") as f:
        f.write(packed)
    print("wrote %s (%d listed events)" % (path, len(listing)), file=sys.stderr)


if __name__ == "__main__":
    main()
