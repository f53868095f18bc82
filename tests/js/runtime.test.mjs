// The web runtime (_static/web/runtime.mjs) against lra_kit's own model, under `node --test`.
//
// tests/js_references.py (run by reference.mjs when this file loads) exports models and writes what lra_kit
// computes for them (log-probabilities of the recurrent step that CausalLM.generate() runs, and its 784
// greedy pixels) to a reference file; tests/test_export_web.py runs this file under pytest.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT, writeReference } from "./reference.mjs";

// runtime.mjs is a classic script (see its header): importing it runs it, and it defines globalThis.LraWeb
await import(pathToFileURL(join(ROOT, "_static", "web", "runtime.mjs")).href);
const LraWeb = globalThis.LraWeb;

const reference = writeReference("runtime");
const TOL = reference.tolerance;

function load(entry) {
  const manifest = JSON.parse(readFileSync(entry.manifest, "utf8"));
  const weights = readFileSync(join(dirname(entry.manifest), manifest.weights.file));
  const buffer = weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength);
  return LraWeb.loadModel(manifest, buffer);
}

function maxAbsDiff(a, b) {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test("the reference names at least one model of each exported attention", () => {
  assert.ok(reference.models.length > 0, "no models in the reference");
});

for (const entry of reference.models) {
  const label = `${entry.name} (${entry.method})`;

  test(`${label}: log P(next pixel) after every position equals lra_kit's step within ${TOL}`, () => {
    const model = load(entry);
    const session = model.session(entry.method);
    let worst = 0;
    entry.positions.forEach((pos, i) => {
      let logp;
      if (entry.method === "recompute") {
        logp = model.prefixLogProbs(entry.prefix.slice(0, pos + 1));
      } else {
        while (session.pos <= pos) logp = model.step(session, entry.prefix[session.pos]);
      }
      worst = Math.max(worst, maxAbsDiff(logp, entry.log_probs[i]));
    });
    assert.ok(worst <= TOL, `max |Δ log P| = ${worst} > ${TOL}`);
  });

  if (entry.greedy) {
    test(`${label}: greedy decoding gives lra_kit's ${entry.greedy.length} pixels`, () => {
      const model = load(entry);
      const out = LraWeb.generate(model, entry.method, entry.greedy.slice(0, entry.greedy_prompt), entry.greedy.length);
      const first = out.findIndex((v, i) => v !== entry.greedy[i]);
      assert.equal(first, -1, `first difference at pixel ${first}: ${out[first]} (js) vs ${entry.greedy[first]} (python)`);
    });
  }
}

test("seeded sampling repeats, and a different seed or temperature changes the image", () => {
  const entry = reference.models[0];
  const model = load(entry);
  const run = (seed, temperature) => LraWeb.generate(model, entry.method, [0], 200, { seed, temperature });
  assert.deepEqual(run(3, 1.0), run(3, 1.0));
  assert.notDeepEqual(run(3, 1.0), run(4, 1.0));
  assert.ok(run(3, 1.0).every((v) => Number.isInteger(v) && v >= 0 && v < 256));
});

test("the state of the RNN does not grow; the cache does", () => {
  for (const entry of reference.models) {
    const model = load(entry);
    const s = model.session(entry.method);
    model.step(s, 0);
    const early = model.stateBytes(s);
    for (let t = 1; t < 50; t++) model.step(s, 0);
    const late = model.stateBytes(s);
    if (entry.method === "recurrent") assert.equal(late, early, entry.name);
    else assert.equal(late, 50 * early, entry.name);
  }
});

test("bad arguments are refused with the argument named", () => {
  const model = load(reference.models[0]);
  assert.throws(() => model.session("nonsense"), /method must be one of/);
  assert.throws(() => model.step(model.session(), 256), /token must be in \[0, 256\)/);
  assert.throws(() => LraWeb.generate(model, undefined, [], 10), /prompt must hold at least one pixel/);
});
