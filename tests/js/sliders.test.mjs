// The sliders' JavaScript (lra_kit/viz/js/sliders.js) against its Python oracles, under `node --test`.
//
// tests/js_references.py (run by reference.mjs when this file loads) writes what lra_kit.viz.momentum computes
// (reweighting_readouts, recent_window, connection_readouts) on a grid of slider positions to a reference file;
// tests/test_viz_js.py runs this file under pytest.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { runInThisContext } from "node:vm";
import { join } from "node:path";
import { ROOT, writeReference } from "./reference.mjs";

const SOURCE = join(ROOT, "lra_kit", "viz", "js", "sliders.js");
// run as the page runs it: a classic script, which defines globalThis.LraKitSliders
runInThisContext(readFileSync(SOURCE, "utf8"), { filename: SOURCE });
const S = globalThis.LraKitSliders;

const reference = writeReference("sliders");
const RTOL = reference.rtol;

function close(got, want, what) {
  assert.ok(Number.isFinite(got), `${what}: ${got} is not a finite number`);
  const tol = RTOL * Math.max(1, Math.abs(want));
  assert.ok(Math.abs(got - want) <= tol, `${what}: JavaScript ${got}, Python ${want} (|Δ| > ${tol})`);
}

test("the recent window is Python's recent_window at every β of the grid, half-integers included", () => {
  assert.ok(reference.window.length > 100, "the reference holds too few β");
  for (const [beta, want] of reference.window) assert.equal(S.recentWindow(beta), want, `β = ${beta}`);
});

test("chapter 4's read-outs equal reweighting_readouts", () => {
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

test("chapter 5's read-outs equal connection_readouts", () => {
  const { data, cases } = reference.connection;
  assert.ok(cases.length > 0, "no cases in the reference");
  for (const c of cases) {
    const got = S.connectionNumbers(data, c.beta, c.gamma);
    for (const key of Object.keys(c.expected)) close(got[key], c.expected[key], `β̃ = ${c.beta}, γ̃ = ${c.gamma}: ${key}`);
  }
});
