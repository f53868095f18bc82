// The web runtime's sampling and its statistic of a digit's cost (_static/web/runtime.mjs), under `node --test`.
//
// Temperature 0 is greedy decoding (argmax) and draws nothing from the generator. blockTimes / blockRatio, which
// the page's widget shows for the reader's own runs, must equal lra_kit.web.page.block_times / block_ratio, which
// the book's table computes from the recorded run: tests/js_references.py (run by reference.mjs when this file
// loads) writes Python's values on the series of tests/test_web_page.py (stats_reference) to a reference file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT, writeReference } from "./reference.mjs";

await import(pathToFileURL(join(ROOT, "_static", "web", "runtime.mjs")).href);
const LraWeb = globalThis.LraWeb;

test("temperature 0 (or none) is greedy: the argmax, and the generator is not drawn from", () => {
  const logp = Float32Array.from([-3, -0.5, -2, -0.4, -9]);
  let draws = 0;
  const rand = () => { draws += 1; return 0; };
  assert.equal(LraWeb.choose(logp, 0, rand), 3);
  assert.equal(LraWeb.choose(logp, null, rand), 3);
  assert.equal(draws, 0);
  assert.equal(LraWeb.choose(logp, 1, rand), 0); // a draw of 0 picks the first value: sampling ran
  assert.equal(draws, 1);
});

test("a block's time is the sum of its pixels; a stopped or short run has no end ÷ start", () => {
  const ms = Array.from({ length: 320 }, (_, i) => (i < 150 ? 0.2 : 0.3));
  assert.deepEqual(LraWeb.blockTimes(ms, 100).map((x) => Number(x.toFixed(9))), [20, 25, 30]);
  assert.equal(LraWeb.blockRatio(ms, { block: 50, ends: 3, finished: false }), null);
  assert.equal(LraWeb.blockRatio(ms.slice(0, 299), { block: 50, ends: 3 }), null); // five full blocks
  assert.ok(Math.abs(LraWeb.blockRatio(ms, { block: 50, ends: 3 }) - 1.5) < 1e-12);
  assert.throws(() => LraWeb.blockTimes(ms, 0), /block must be an integer >= 1/);
  assert.throws(() => LraWeb.blockRatio(ms, { ends: 0 }), /ends must be an integer >= 1/);
});

const reference = writeReference("web_stats");

test("blockTimes and blockRatio equal lra_kit.web.page's on every series of the reference", () => {
  assert.ok(reference.cases.length > 0, "no cases in the reference");
  for (const c of reference.cases) {
    const times = LraWeb.blockTimes(c.ms, c.block);
    assert.equal(times.length, c.block_times.length, c.name);
    times.forEach((t, i) => assert.ok(Math.abs(t - c.block_times[i]) <= 1e-9 * Math.max(1, t), `${c.name} block ${i}`));
    const ratio = LraWeb.blockRatio(c.ms, { block: c.block, ends: c.ends, finished: c.finished });
    if (c.ratio === null) assert.equal(ratio, null, c.name);
    else assert.ok(Math.abs(ratio - c.ratio) <= 1e-12 * Math.max(1, c.ratio), `${c.name}: ${ratio} vs ${c.ratio}`);
  }
});
