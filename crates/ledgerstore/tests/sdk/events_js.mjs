// getEvents through the real JS client, @stellar/stellar-sdk's rpc.Server
// (which decodes every topic and value as an xdr.ScVal), against the
// independent event oracle of the 20 real pubnet ledgers
// 63092982..=63093001 (crates/stellar/testdata/events_oracle.py).
//
// Usage: node events_js.mjs ENDPOINT_URL ORACLE_EVENTS_JSON NODE_MODULES
// Prints one PASS/FAIL line per group, then `N passed, M failed`.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [url, oraclePath, nodeModules] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { rpc } = require(path.resolve(nodeModules, "@stellar/stellar-sdk"));

const FIRST = 63092982;
const LAST = 63093001;
const MAX_PAGES = 400;
const END = ((BigInt(LAST) << 32n) | (0xfffffn << 12n) | 0xfffn).toString().padStart(19, "0");

const sha16 = (buf) => createHash("sha256").update(buf).digest("hex").slice(0, 16);

function record(e) {
  return {
    id: e.id,
    ledger: e.ledger,
    type: e.type,
    contract: e.contractId ? e.contractId.contractId() : null,
    tx: e.txHash,
    op: e.operationIndex,
    txi: e.transactionIndex,
    ok: e.inSuccessfulContractCall,
    topics: e.topic.map((t) => sha16(t.toXDR())),
    value: sha16(e.value.toXDR()),
  };
}

async function pageAll(server, filters, limit) {
  const got = [];
  const raw = [];
  let r = await server.getEvents({ startLedger: FIRST, filters, limit });
  for (let i = 0; i < MAX_PAGES; i++) {
    if (r.latestLedger !== LAST) throw new Error(`latestLedger ${r.latestLedger}, want ${LAST}`);
    got.push(...r.events.map(record));
    raw.push(...r.events);
    if (r.events.length === 0 && r.cursor.startsWith(END)) return { got, raw };
    r = await server.getEvents({ filters, cursor: r.cursor, limit });
  }
  throw new Error("paging did not end");
}

function compare(got, want) {
  const problems = [];
  if (got.length !== want.length) problems.push(`${got.length} events, the oracle has ${want.length}`);
  for (let i = 0; i < Math.min(got.length, want.length); i++) {
    const g = JSON.stringify(got[i]);
    const w = JSON.stringify(want[i]);
    if (g !== w) problems.push(`event ${i}: got ${g}, want ${w}`);
  }
  return problems;
}

const results = [];
async function group(name, fn) {
  let problems;
  try {
    problems = await fn();
  } catch (e) {
    // The SDK throws a response's `error` member as is.
    problems = [e instanceof Error ? `${e.name}: ${e.message}` : `JSON-RPC error ${JSON.stringify(e)}`];
  }
  results.push(problems.length === 0);
  console.log(`${problems.length ? "FAIL" : "PASS"} ${name}`);
  for (const p of problems.slice(0, 10)) console.log(`    ${p}`);
}

const oracle = JSON.parse(readFileSync(oraclePath, "utf8")).map((o) => ({
  id: o.id,
  ledger: o.ledger,
  type: o.type,
  contract: o.contract,
  tx: o.tx,
  op: o.op,
  txi: o.txi,
  ok: o.ok,
  topics: o.topics,
  value: o.value,
}));
const server = new rpc.Server(url, { allowHttp: true });
let raw = [];

await group("every event, unfiltered, pages of 1000", async () => {
  const r = await pageAll(server, [], 1000);
  raw = r.raw;
  return compare(r.got, oracle);
});

const counts = new Map();
for (const o of oracle) if (o.contract) counts.set(o.contract, (counts.get(o.contract) ?? 0) + 1);
const busiest = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([c]) => c);

await group("by contract id, pages of 150", async () => {
  const { got } = await pageAll(server, [{ contractIds: [busiest[0]] }], 150);
  return compare(got, oracle.filter((o) => o.contract === busiest[0]));
});

await group("by topic with * and ** wildcards", async () => {
  const t0 = raw[0].topic[0];
  const h = sha16(t0.toXDR());
  const b64 = t0.toXDR("base64");
  const problems = [];
  for (const [topics, want] of [
    [[b64, "**"], (o) => o.topics[0] === h],
    [[b64, "*"], (o) => o.topics.length === 2 && o.topics[0] === h],
    [["*", "*", "*", "*"], (o) => o.topics.length === 4],
  ]) {
    const { got } = await pageAll(server, [{ topics: [topics] }], 400);
    problems.push(...compare(got, oracle.filter(want)).map((p) => `${topics}: ${p}`));
  }
  return problems;
});

await group("by type, and type with contract", async () => {
  const problems = [];
  for (const type of ["system", "contract"]) {
    const { got } = await pageAll(server, [{ type }], 1000);
    problems.push(...compare(got, oracle.filter((o) => o.type === type)));
  }
  const { got } = await pageAll(server, [{ type: "contract", contractIds: [busiest[1]] }], 33);
  problems.push(...compare(got, oracle.filter((o) => o.contract === busiest[1])));
  return problems;
});

await group("a diagnostic filter is refused in stellar-rpc's words", async () => {
  try {
    await server.getEvents({ startLedger: FIRST, filters: [{ type: "diagnostic" }] });
    return ["answered"];
  } catch (e) {
    const want = "filter 1 invalid: filter type invalid: if set, type must be either 'system' or 'contract'";
    return String(e.message ?? e).includes(want) ? [] : [`${e.message ?? e}`];
  }
});

const passed = results.filter(Boolean).length;
console.log(`${passed} passed, ${results.length - passed} failed`);
process.exit(passed === results.length ? 0 : 1);
