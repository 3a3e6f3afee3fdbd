// Drives the daemon's stellar-rpc compatible JSON-RPC endpoint with the real
// JavaScript client, @stellar/stellar-sdk's rpc.Server, and checks every answer
// against the independent oracle of the 20 real pubnet ledgers
// 63092982..=63093001 (../shared/data/stellar/FC3D4709--63092982-63093001.oracle.json).
//
// Usage: node rpc_js.mjs ENDPOINT_URL ORACLE_JSON_PATH [--inner-hash] [NODE_MODULES]
//   NODE_MODULES (or else $SDK_NODE_MODULES) is the directory that
//   scripts/sdk-clients.sh prints (`node_modules=...`); ESM ignores NODE_PATH,
//   so the SDK is loaded from there by path. The daemon must already hold
//   exactly those 20 ledgers. --inner-hash also looks a fee-bump transaction
//   up by its inner hash.
//
// Prints one PASS/FAIL line per check group (with up to 10 problems under a
// FAIL), then `N passed, M failed`; exits 1 if M > 0.
//
// The SDK decodes every XDR field into xdr objects, so the checks re-encode
// them (toXDR) and compare the sha256 of the bytes with the oracle's.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const PASSPHRASE = "Public Global Stellar Network ; September 2015";
const PROTOCOL = 26;
const TX_PAGE = 200; // getTransactions limit per page
const LEDGER_PAGE = 7; // getLedgers limit per page
const MAX_PAGES = 100;

const flags = process.argv.slice(2).filter((a) => a.startsWith("--"));
const args = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const nodeModules = args[2] ?? process.env.SDK_NODE_MODULES;
if (args.length < 2 || args.length > 3 || !nodeModules || flags.some((f) => f !== "--inner-hash")) {
  console.error("usage: node rpc_js.mjs ENDPOINT_URL ORACLE_JSON_PATH [--inner-hash] [NODE_MODULES]");
  process.exit(2);
}
const [endpoint, oraclePath] = args;
const require = createRequire(import.meta.url);
const sdk = require(path.resolve(nodeModules, "@stellar/stellar-sdk"));
const { rpc, FeeBumpTransaction, TransactionBuilder } = sdk;

const oracle = JSON.parse(readFileSync(oraclePath, "utf8"));
const ledgers = oracle.ledgers;
const txs = oracle.txs;
const first = ledgers[0];
const last = ledgers.at(-1);
const closeTime = new Map(ledgers.map((l) => [l.seq, l.close_time]));

/** sha256 hex of an xdr object's encoding. */
const sha = (obj) => createHash("sha256").update(obj.toXDR()).digest("hex");
/** stellar-rpc sends some int64 times as JSON strings; the SDK passes them on as is. */
const num = (x) => (typeof x === "string" && /^\d+$/.test(x) ? Number(x) : x);

/** The problems found by one check group. */
class Group {
  problems = [];
  expect(what, got, want) {
    if (got !== want) this.problems.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
  fail(message) {
    this.problems.push(message);
  }
}

const results = [];
async function run(name, check, ...rest) {
  const g = new Group();
  try {
    await check(g, ...rest);
  } catch (e) {
    // The SDK throws a response's `error` member as is, whenever it is present.
    const message = e instanceof Error ? e.message : `JSON-RPC error ${JSON.stringify(e)}`;
    g.fail(`threw: ${String(message).slice(0, 500)}`);
  }
  results.push(g.problems.length === 0);
  if (g.problems.length === 0) {
    console.log(`PASS ${name}`);
    return;
  }
  console.log(`FAIL ${name}: ${g.problems.length} problem(s)`);
  for (const p of g.problems.slice(0, 10)) console.log(`    ${p}`);
  if (g.problems.length > 10) console.log(`    ... and ${g.problems.length - 10} more`);
}

/** The latest/oldest ledger (and their close times) of a response. */
function expectRange(g, what, r, [latestCt, oldestCt]) {
  g.expect(`${what} latestLedger`, r.latestLedger, last.seq);
  g.expect(`${what} oldestLedger`, r.oldestLedger, first.seq);
  g.expect(`${what} latest close time`, num(r[latestCt]), last.close_time);
  g.expect(`${what} oldest close time`, num(r[oldestCt]), first.close_time);
}

/** One transaction of getTransaction(s) against its oracle entry. */
function expectTx(g, what, got, want) {
  g.expect(`${what} status`, got.status, want.status);
  g.expect(`${what} ledger`, got.ledger, want.ledger);
  g.expect(`${what} applicationOrder`, got.applicationOrder, want.application_order);
  g.expect(`${what} feeBump`, got.feeBump, want.fee_bump);
  g.expect(`${what} createdAt`, num(got.createdAt), closeTime.get(want.ledger));
  g.expect(`${what} envelope sha256`, sha(got.envelopeXdr), want.envelope_sha256);
  g.expect(`${what} result sha256`, sha(got.resultXdr), want.result_sha256);
  g.expect(`${what} meta sha256`, sha(got.resultMetaXdr), want.meta_sha256);
}

const server = new rpc.Server(endpoint, { allowHttp: true });

async function health(g) {
  const r = await server.getHealth();
  g.expect("status", r.status, "healthy");
  g.expect("latestLedger", r.latestLedger, last.seq);
  g.expect("oldestLedger", r.oldestLedger, first.seq);
  g.expect("ledgerRetentionWindow", r.ledgerRetentionWindow, ledgers.length);
}

async function network(g) {
  const r = await server.getNetwork();
  g.expect("passphrase", r.passphrase, PASSPHRASE);
  g.expect("protocolVersion", num(r.protocolVersion), PROTOCOL);
}

async function latestLedger(g) {
  const r = await server.getLatestLedger(); // decodes headerXdr and metadataXdr
  g.expect("sequence", r.sequence, last.seq);
  g.expect("id", r.id, last.hash);
  g.expect("protocolVersion", num(r.protocolVersion), PROTOCOL);
  g.expect("closeTime", num(r.closeTime), last.close_time);
  // A ledger's hash is the sha256 of its LedgerHeader XDR.
  g.expect("sha256(headerXdr)", sha(r.headerXdr), last.hash);
  g.expect("sha256(metadataXdr)", sha(r.metadataXdr), last.lcm_sha256);
}

async function versionInfo(g) {
  const r = await server.getVersionInfo(); // the SDK passes the result on as is
  for (const f of ["version", "commitHash", "buildTimestamp", "captiveCoreVersion"]) {
    if (typeof r[f] !== "string") g.fail(`${f} is not a string: ${JSON.stringify(r[f])}`);
  }
  if (!r.version) g.fail("version is empty");
  g.expect("protocolVersion", r.protocolVersion, PROTOCOL);
}

async function transaction(g, want, lookupHash) {
  const r = await server.getTransaction(lookupHash);
  // The SDK sets txHash to the hash it asked for, so read the server's own
  // txHash from the raw answer; stellar-rpc echoes the hash it was asked for.
  const raw = await server._getTransaction(lookupHash);
  g.expect("raw txHash", raw.txHash, lookupHash);
  expectRange(g, "response", r, ["latestLedgerCloseTime", "oldestLedgerCloseTime"]);
  expectTx(g, "tx", r, want);
  const env = TransactionBuilder.fromXDR(r.envelopeXdr, PASSPHRASE);
  g.expect("hash of the returned envelope", env.hash().toString("hex"), want.hash);
  if (want.fee_bump) {
    if (!(env instanceof FeeBumpTransaction)) g.fail("envelope is not a fee bump");
    else g.expect("inner hash of the envelope", env.innerTransaction.hash().toString("hex"), want.inner_hash);
  }
}

async function notFound(g) {
  const h = randomBytes(32).toString("hex");
  const r = await server.getTransaction(h);
  g.expect("status", r.status, "NOT_FOUND");
  const raw = await server._getTransaction(h);
  g.expect("raw txHash", raw.txHash, h);
  expectRange(g, "response", r, ["latestLedgerCloseTime", "oldestLedgerCloseTime"]);
  // The SDK drops them for NOT_FOUND; stellar-rpc leaves them out or sends them zero-valued.
  for (const f of ["ledger", "envelopeXdr", "resultXdr", "resultMetaXdr"]) {
    if (raw[f]) g.fail(`${f} is set: ${JSON.stringify(raw[f]).slice(0, 80)}`);
  }
}

/** Pages from the first ledger, then by cursor, until an empty page, the end
 *  of the range, or a cursor that stops moving. A short page is not the end:
 *  ledgerstore ends a page early at its byte budget (docs/jsonrpc.md). */
async function* pages(g, fetch, itemsOf, limit, atEnd) {
  let cursor;
  for (let n = 0; n < MAX_PAGES; n++) {
    const r = await fetch(cursor, limit);
    const items = itemsOf(r);
    yield [n, r, items];
    if (items.length === 0 || atEnd(r, items) || r.cursor === cursor) return;
    cursor = r.cursor;
  }
  g.fail(`still paging after ${MAX_PAGES} pages`);
}

async function transactions(g) {
  const want = new Map(txs.map((t) => [t.hash, t]));
  const seen = new Set();
  let prev;
  const fetch = (cursor, limit) =>
    server.getTransactions(
      cursor ? { pagination: { cursor, limit } } : { startLedger: first.seq, pagination: { limit } },
    );
  const atEnd = () => false; // an empty page ends it
  for await (const [n, r, page] of pages(g, fetch, (r) => r.transactions, TX_PAGE, atEnd)) {
    expectRange(g, `page ${n}`, r, ["latestLedgerCloseTimestamp", "oldestLedgerCloseTimestamp"]);
    for (const t of page) {
      const h = t.txHash;
      if (!want.has(h)) {
        g.fail(`tx ${h}: not in the oracle`);
        continue;
      }
      if (seen.has(h)) g.fail(`tx ${h}: seen twice`);
      seen.add(h);
      if (prev && (t.ledger < prev[0] || (t.ledger === prev[0] && t.applicationOrder <= prev[1]))) {
        g.fail(`tx ${h}: (${t.ledger}, ${t.applicationOrder}) comes after (${prev.join(", ")})`);
      }
      prev = [t.ledger, t.applicationOrder];
      expectTx(g, `tx ${h}`, t, want.get(h));
    }
  }
  const missing = want.size - seen.size;
  if (missing) g.fail(`${missing} of the oracle's ${want.size} txs never came`);
}

async function ledgerPages(g) {
  const want = new Map(ledgers.map((l) => [l.seq, l]));
  const seen = [];
  const fetch = (cursor, limit) =>
    server.getLedgers(
      cursor ? { pagination: { cursor, limit } } : { startLedger: first.seq, pagination: { limit } },
    );
  const atEnd = (r, items) => items.at(-1).sequence >= r.latestLedger;
  for await (const [n, r, page] of pages(g, fetch, (r) => r.ledgers, LEDGER_PAGE, atEnd)) {
    expectRange(g, `page ${n}`, r, ["latestLedgerCloseTime", "oldestLedgerCloseTime"]);
    for (const l of page) {
      const w = want.get(l.sequence);
      if (!w) {
        g.fail(`ledger ${l.sequence}: not in the oracle`);
        continue;
      }
      if (seen.length && l.sequence !== seen.at(-1) + 1) g.fail(`ledger ${l.sequence} follows ${seen.at(-1)}`);
      seen.push(l.sequence);
      const what = `ledger ${l.sequence}`;
      g.expect(`${what} hash`, l.hash, w.hash);
      g.expect(`${what} ledgerCloseTime`, num(l.ledgerCloseTime), w.close_time);
      g.expect(`${what} sha256(headerXdr)`, sha(l.headerXdr), w.header_history_entry_sha256);
      g.expect(`${what} sha256(metadataXdr)`, sha(l.metadataXdr), w.lcm_sha256);
    }
  }
  g.expect("ledgers seen", seen.join(","), [...want.keys()].join(","));
}

const success = txs.find((t) => t.status === "SUCCESS" && !t.fee_bump);
const failed = txs.find((t) => t.status === "FAILED" && !t.fee_bump);
const bump = txs.find((t) => t.fee_bump);

await run("getHealth", health);
await run("getNetwork", network);
await run("getLatestLedger", latestLedger);
await run("getVersionInfo", versionInfo);
await run(`getTransaction SUCCESS ${success.hash}`, transaction, success, success.hash);
await run(`getTransaction FAILED ${failed.hash}`, transaction, failed, failed.hash);
await run(`getTransaction fee bump ${bump.hash}`, transaction, bump, bump.hash);
if (flags.includes("--inner-hash")) {
  await run(`getTransaction fee bump by inner hash ${bump.inner_hash}`, transaction, bump, bump.inner_hash);
}
await run("getTransaction NOT_FOUND", notFound);
await run(`getTransactions (${txs.length} txs, limit ${TX_PAGE})`, transactions);
await run(`getLedgers (${ledgers.length} ledgers, limit ${LEDGER_PAGE})`, ledgerPages);

const passed = results.filter(Boolean).length;
console.log(`${passed} passed, ${results.length - passed} failed`);
process.exit(passed < results.length ? 1 : 0);
