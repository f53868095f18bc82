// The sliders' JavaScript (lra_kit/viz/js/sliders.js) against its Python oracles, under `node --test`.
//
// tests/test_viz_js.py writes what lra_kit.viz.momentum computes (reweighting_readouts, recent_window,
// connection_readouts) on a grid of slider positions to a reference file and runs this test with
// LRA_SLIDERS_REFERENCE pointing at it. Run alone, without a reference, every test is skipped with that reason.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { runInThisContext } from "node:vm";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const SOURCE = join(ROOT, "lra_kit", "viz", "js", "sliders.js");
// run as the page runs it: a classic script, which defines globalThis.LraKitSliders
runInThisContext(readFileSync(SOURCE, "utf8"), { filename: SOURCE });
const S = globalThis.LraKitSliders;

const REF = process.env.LRA_SLIDERS_REFERENCE;
const skip = REF ? false : "no LRA_SLIDERS_REFERENCE (tests/test_viz_js.py writes it and runs this file)";
const reference = REF ? JSON.parse(readFileSync(REF, "utf8")) : { window: [], reweighting: { cases: [] }, connection: { cases: [] } };
const RTOL = reference.rtol ?? 1e-9;

function close(got, want, what) {
  assert.ok(Number.isFinite(got), `${what}: ${got} is not a finite number`);
  const tol = RTOL * Math.max(1, Math.abs(want));
  assert.ok(Math.abs(got - want) <= tol, `${what}: JavaScript ${got}, Python ${want} (|Δ| > ${tol})`);
}

test("the recent window is Python's recent_window at every β of the grid, half-integers included", { skip }, () => {
  assert.ok(reference.window.length > 100, "the reference holds too few β");
  for (const [beta, want] of reference.window) assert.equal(S.recentWindow(beta), want, `β = ${beta}`);
});

test("chapter 4's read-outs equal reweighting_readouts", { skip }, () => {
  const { scores, cases } = reference.reweighting;
  assert.ok(cases.length > 0, "no cases in the reference");
  for (const c of cases) {
    const got = S.reweightingNumbers(scores, c.beta, c.gamma, c.query);
    const where = `β = ${c.beta}, γ = ${c.gamma}, query ${c.query}`;
    assert.deepEqual(Object.keys(got).sort(), Object.keys(c.expected).sort(), where);
    assert.equal(got.window, c.expected.window, `${where}: window`);
    for (const key of Object.keys(c.expected)) close(got[key], c.expected[key], `${where}: ${key}`);
  }
});

test("chapter 5's read-outs equal connection_readouts", { skip }, () => {
  const { data, cases } = reference.connection;
  assert.ok(cases.length > 0, "no cases in the reference");
  for (const c of cases) {
    const got = S.connectionNumbers(data, c.beta, c.gamma);
    for (const key of Object.keys(c.expected)) close(got[key], c.expected[key], `β̃ = ${c.beta}, γ̃ = ${c.gamma}: ${key}`);
  }
});
