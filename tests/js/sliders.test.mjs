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

test("the shaded window's label is Python's window_label: ≈ 1/(1−β) only where the prefix holds that many keys", () => {
  assert.ok(reference.labels.length > 100, "the reference holds too few labels");
  for (const [beta, query, want] of reference.labels) assert.equal(S.windowLabel(beta, query), want, `β = ${beta}, query ${query}`);
  assert.equal(S.windowLabel(0.9, 5), "the last 6 keys: the whole prefix (1/(1−β) ≈ 10)");
});

test("every tick sits at the value its label reads", () => {
  for (const [lo, hi, n] of [[0, 0.0365 * 1.1, 2], [0, 0.0365 * 1.1, 3], [0, 61, 4], [0, 7, 7], [0, 1.4, 3],
                             [0, 5, 5], [0, 1, 2], [0, 0.9 * 1.5, 3], [0, 123.4, 3]]) {
    const ticks = S.ticks(lo, hi, n);
    assert.ok(ticks.length >= 2, `[${lo}, ${hi}]: ${JSON.stringify(ticks)}`);
    for (const [value, label] of ticks) {
      assert.equal(value, parseFloat(label), `[${lo}, ${hi}]: a tick at ${value} labelled ${label}`);
      assert.ok(value >= lo - 1e-12 && value <= hi + 1e-12, `[${lo}, ${hi}]: tick ${label} outside the axis`);
    }
  }
});

test("read-outs print three significant digits, never an exponent of zero", () => {
  assert.equal(S.sig(6.3241), "6.32");
  assert.equal(S.sig(0.015312), "0.0153");
  assert.equal(S.sig(1234.5), "1235");
  assert.equal(S.sig(1.2345e-7), "1.23e-7");
  assert.equal(S.sig(4.56e12), "4.56e12");
  for (const x of [6.32, 0.5, 1, 9.999, 123]) assert.ok(!/e/.test(S.sig(x)), `${x}: ${S.sig(x)}`);
});

// the rectangles of chapter 4's figure: [x, y, width, height] of each bar, and the legends' boxes
function boxes(svg) {
  const bars = [...svg.matchAll(/<rect class="bar-(?:linear|momentum)" x="([\d.-]+)" y="([\d.-]+)" width="([\d.-]+)" height="([\d.-]+)"/g)]
    .map((m) => m.slice(1, 5).map(Number));
  const legends = [...svg.matchAll(/<g class="legend" data-box="([\d.,-]+)"/g)].map((m) => m[1].split(",").map(Number));
  return { bars, legends };
}
const overlap = (a, b) => a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];

test("chapter 4's figure: the legend covers no bar, and the ratio curve stops at the query's oldest lag", () => {
  const { tokens, scores } = reference.reweighting;
  const D = { tokens, scores };
  for (const beta of [0, 0.5, 0.9, 0.99]) {
    for (let i = 0; i < tokens.length; i++) {
      const { svg } = S.reweightingFigure(D, beta, 1.0, i);
      const { bars, legends } = boxes(svg);
      assert.equal(bars.length, 2 * (i + 1), `β = ${beta}, query ${i}: bars`);
      const legend = legends[0];  // the first panel's
      for (const bar of bars) {
        if (bar[3] > 0.5) assert.ok(!overlap(bar, legend), `β = ${beta}, query ${i}: the legend ${legend} covers the bar ${bar}`);
      }
      const raw = svg.match(/class="ratio-raw" points="([^"]*)"/)[1].trim().split(" ");
      assert.equal(raw.length, i + 1, `β = ${beta}, query ${i}: the ratio curve has lags 0 … ${raw.length - 1}`);
    }
  }
  assert.ok(S.reweightingFigure(D, 0.9, 1.0, 5).svg.includes("the last 6 keys: the whole prefix"));
});
