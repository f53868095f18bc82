// The baselines chapter's LSH slider (lra_kit/viz/js/lsh.js) against lra_kit.viz.lsh, under `node --test`.
//
// tests/js_references.py (run by reference.mjs when this file loads) writes the example the page embeds and, for
// every rounds × buckets setting of the slider, the matrix lra_kit.attention.lsh_attention applies to the values
// (run on V = I in float64) and lsh_readouts; tests/test_viz_lsh.py runs this file under pytest.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { runInThisContext } from "node:vm";
import { join } from "node:path";
import { ROOT, writeReference } from "./reference.mjs";

const SOURCE = join(ROOT, "lra_kit", "viz", "js", "lsh.js");
runInThisContext(readFileSync(SOURCE, "utf8"), { filename: SOURCE });  // as the page runs it: a classic script
const L = globalThis.LraKitLSH;

const reference = writeReference("lsh");
const ATOL = reference.atol;

function matrixClose(got, want, what) {
  assert.equal(got.length, want.length, `${what}: rows`);
  for (let i = 0; i < want.length; i++) {
    for (let j = 0; j < want[i].length; j++) {
      const d = Math.abs(got[i][j] - want[i][j]);
      assert.ok(d <= ATOL, `${what}: [${i}][${j}] JavaScript ${got[i][j]}, Python ${want[i][j]}`);
    }
  }
}

test("the LSH widget's softmax matrix equals shared_qk_softmax_weights", () => {
  matrixClose(L.softmaxWeights(reference.data), reference.A, "A");
});

test("the LSH widget's matrix equals lsh_attention's for every rounds × buckets setting", () => {
  assert.ok(reference.cases.length >= 40, "the reference holds too few settings");
  for (const c of reference.cases) {
    matrixClose(L.weights(reference.data, c.rounds, c.buckets), c.W, `${c.rounds} rounds, ${c.buckets} buckets`);
  }
});

test("the LSH widget's read-outs equal lsh_readouts", () => {
  for (const c of reference.cases) {
    const got = L.readouts(reference.data, c.rounds, c.buckets);
    for (const key of Object.keys(c.expected)) {
      const d = Math.abs(got[key] - c.expected[key]);
      assert.ok(d <= 1e-9, `${c.rounds} rounds, ${c.buckets} buckets: ${key} JavaScript ${got[key]}, Python ${c.expected[key]}`);
    }
  }
});
