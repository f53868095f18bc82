// The page's generator: trained pixel models of lra_kit side by side in the reader's browser.
//
// A classic script (named .mjs, like runtime.mjs, so that Jupyter Book does not add it to every page).
// Needs runtime.mjs (globalThis.LraWeb), the models' NAME.mjs scripts (LRA_WEB_MODELS) and
// mnist-test-digits.mjs (LRA_WEB_DIGITS). Builds itself inside every element of class
// "lrakit-webgen"; its panels are named in data-panels ("model:method,..."), the numbers recorded
// elsewhere (headless Chromium, the Python benchmark) come in data-recorded (JSON) and are shown
// beside what this browser measures. window.LraWebDemo.runs holds the last run's series (tests).
(function () {
  "use strict";
  const COLORS = ["#1f77b4", "#d62728", "#ff7f0e", "#2ca02c"];
  // The cost of a digit is compared in blocks of BLOCK pixels (LraWeb.blockRatio): the fastest of the last ENDS
  // blocks over the fastest of the first ENDS. A panel lets the browser paint after each block, or sooner when a
  // stretch of pixels has run for PAUSE_MS (the re-run on the prefix, whose single pixels are long).
  const BLOCK = 50, ENDS = 3, PAUSE_MS = 50;
  const METHOD_LABEL = { recurrent: "RNN state", "kv-cache": "key/value cache", recompute: "re-run on the prefix" };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "style") e.style.cssText = v; else if (k.startsWith("data-")) e.setAttribute(k, v); else e[k] = v;
    }
    for (const c of children) e.append(c);
    return e;
  }

  function fmtBytes(b) {
    if (b >= 1 << 20) return (b / (1 << 20)).toFixed(2) + " MiB";
    if (b >= 1 << 10) return (b / (1 << 10)).toFixed(1) + " KiB";
    return b + " B";
  }

  function mean(a) { return a.length ? a.reduce((x, y) => x + y, 0) / a.length : NaN; }

  // One scheduler tick: give the browser a chance to paint (MessageChannel is not throttled like setTimeout).
  const channel = typeof MessageChannel !== "undefined" ? new MessageChannel() : null;
  const waiting = [];
  if (channel) channel.port1.onmessage = () => { const r = waiting.shift(); if (r) r(); };
  function yieldToBrowser() {
    return new Promise((r) => {
      if (channel) { waiting.push(r); channel.port2.postMessage(0); } else setTimeout(r, 0);
    });
  }

  let peakHeap = 0;
  function sampleHeap() {
    const m = typeof performance !== "undefined" && performance.memory;
    if (m && m.usedJSHeapSize > peakHeap) peakHeap = m.usedJSHeapSize;
  }

  function drawPixel(ctx, index, value, scale) {
    const r = Math.floor(index / 28), c = index % 28;
    ctx.fillStyle = `rgb(${value},${value},${value})`;
    ctx.fillRect(c * scale, r * scale, scale, scale);
  }

  function plot(canvas, series, { ylabel, log = false, xmax = 784 }) {
    const ctx = canvas.getContext("2d"), W = canvas.width, H = canvas.height, L = 62, B = 28, T = 10, R = 10;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, H);
    let ymax = 0, ymin = Infinity;
    for (const s of series) for (const y of s.ys) { if (y > ymax) ymax = y; if (y > 0 && y < ymin) ymin = y; }
    if (!(ymax > 0)) ymax = 1;
    if (!(ymin < Infinity)) ymin = ymax / 10;
    const lo = log ? Math.log10(ymin) - 0.1 : 0, hi = log ? Math.log10(ymax) + 0.1 : ymax * 1.05;
    const X = (x) => L + (W - L - R) * x / xmax;
    const Y = (y) => H - B - (H - B - T) * ((log ? Math.log10(Math.max(y, ymin)) : y) - lo) / (hi - lo);
    ctx.strokeStyle = "#888"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(L, T); ctx.lineTo(L, H - B); ctx.lineTo(W - R, H - B); ctx.stroke();
    ctx.fillStyle = "#333"; ctx.font = "11px sans-serif";
    ctx.fillText("pixel", W - R - 28, H - 6);
    for (const x of [0, 196, 392, 588, 784]) ctx.fillText(String(x), X(x) - 8, H - B + 14);
    const ticks = log ? [lo, (lo + hi) / 2, hi].map((v) => Math.pow(10, v)) : [0, hi / 2, hi];
    for (const t of ticks) ctx.fillText(ylabel.fmt(t), 2, Y(t) + 4);
    series.forEach((s) => {
      ctx.strokeStyle = s.color; ctx.lineWidth = 1.5; ctx.beginPath();
      s.ys.forEach((y, i) => { const x = X(s.x0 + i), yy = Y(y); if (i) ctx.lineTo(x, yy); else ctx.moveTo(x, yy); });
      ctx.stroke();
    });
    ctx.fillText(ylabel.text, L + 6, T + 10);
  }

  function smooth(ys, w) { // a trailing moving average, so that a timer's 0.1 ms steps read as a line
    const out = [];
    let acc = 0;
    for (let i = 0; i < ys.length; i++) { acc += ys[i]; if (i >= w) acc -= ys[i - w]; out.push(acc / Math.min(i + 1, w)); }
    return out;
  }

  function build(root) {
    const LraWeb = globalThis.LraWeb, reg = globalThis.LRA_WEB_MODELS || {}, digits = globalThis.LRA_WEB_DIGITS;
    const recorded = root.dataset.recorded ? JSON.parse(root.dataset.recorded) : {};
    const specs = (root.dataset.panels || "").split(",").filter(Boolean).map((s) => s.split(":"));
    const models = {};
    const panels = [];
    const missing = specs.filter(([name]) => !reg[name]).map(([name]) => name);
    if (!LraWeb || missing.length || !digits) {
      root.append(el("p", { className: "lrakit-webgen-error" },
        "The generator could not start: " + (!LraWeb ? "runtime.mjs did not load. " : "") +
        (missing.length ? "no model " + missing.join(", ") + ". " : "") + (!digits ? "no test digits." : "")));
      root.dataset.state = "error";
      return;
    }
    const controls = el("div", { className: "lrakit-webgen-controls", style: "display:flex;flex-wrap:wrap;gap:.8em;align-items:center;margin:.5em 0" });
    const genBtn = el("button", { type: "button", className: "lrakit-generate" }, "generate");
    const compBtn = el("button", { type: "button", className: "lrakit-complete" }, "complete");
    const digitSel = el("select", { className: "lrakit-digit" });
    digits.labels.forEach((lab, i) => digitSel.append(el("option", { value: String(i) }, `test digit ${lab}`)));
    const temp = el("input", { type: "range", min: "0", max: "1.5", step: "0.05", value: "1", className: "lrakit-temperature" });
    const tempOut = el("span", { className: "lrakit-temperature-value" }, "1.00");
    temp.addEventListener("input", () => { tempOut.textContent = Number(temp.value) === 0 ? "greedy" : Number(temp.value).toFixed(2); });
    const seed = el("input", { type: "number", min: "0", step: "1", value: "0", style: "width:5em", className: "lrakit-seed" });
    const stopBtn = el("button", { type: "button", className: "lrakit-stop", disabled: true }, "stop");
    const status = el("span", { className: "lrakit-status", style: "color:#555" }, "ready");
    controls.append(genBtn, compBtn, digitSel, el("label", {}, "temperature ", temp, " ", tempOut),
      el("label", {}, "seed ", seed), stopBtn, status);
    const grid = el("div", { style: "display:flex;flex-wrap:wrap;gap:1em" });
    const SCALE = 5;
    specs.forEach(([name, method], i) => {
      models[name] = models[name] || LraWeb.registeredModel(name);
      const model = models[name];
      const canvas = el("canvas", { width: 28 * SCALE, height: 28 * SCALE, className: "lrakit-image", style: "border:1px solid #ccc;image-rendering:pixelated" });
      const prov = model.manifest.provenance || {};
      const bpd = prov.finished ? `test ${Number(prov.test_bits_per_dim).toFixed(3)} bits/dim`
        : prov.dev_bits_per_dim != null ? `dev ${Number(prov.dev_bits_per_dim).toFixed(3)} bits/dim (step ${prov.checkpoint_step})` : "";
      const read = el("div", { className: "lrakit-readout", style: "font-size:85%;line-height:1.35" });
      const title = el("div", { style: `font-weight:bold;color:${COLORS[i % COLORS.length]}` },
        `${model.cfg.attention} attention, ${METHOD_LABEL[method]}`);
      const box = el("div", { className: "lrakit-panel", "data-model": name, "data-method": method, style: "width:16em" },
        title, canvas, el("div", { style: "font-size:80%;color:#555" }, `${model.cfg.layers} layers, d ${model.cfg.d_model}; ${bpd}`), read);
      grid.append(box);
      panels.push({ name, method, model, canvas, ctx: canvas.getContext("2d"), read, color: COLORS[i % COLORS.length], box });
    });
    const msPlot = el("canvas", { width: 460, height: 220, className: "lrakit-plot-ms" });
    const bytesPlot = el("canvas", { width: 460, height: 220, className: "lrakit-plot-bytes" });
    const legend = el("div", { style: "font-size:85%" });
    panels.forEach((p) => legend.append(el("span", { style: `color:${p.color};margin-right:1.2em` }, `■ ${p.model.cfg.attention}, ${METHOD_LABEL[p.method]}`)));
    const table = el("div", { className: "lrakit-compare", style: "font-size:85%;overflow-x:auto" });
    root.append(controls, grid, legend, el("div", { style: "display:flex;flex-wrap:wrap;gap:1em" }, msPlot, bytesPlot), table);

    let stopping = false, running = false;
    stopBtn.addEventListener("click", () => { stopping = true; });

    function redrawPlots(runs) {
      plot(msPlot, runs.map((r, i) => ({ color: panels[i].color, x0: r.start, ys: smooth(r.ms, 10) })),
        { ylabel: { text: "ms per pixel (mean of 10, log scale)", fmt: (v) => v.toFixed(v < 1 ? 2 : 1) }, log: true });
      plot(bytesPlot, runs.map((r, i) => ({ color: panels[i].color, x0: r.start, ys: r.bytes })),
        { ylabel: { text: "bytes kept between pixels (log scale)", fmt: fmtBytes }, log: true });
    }

    // A stopped run reports no ratio: its last pixels are not the digit's last (blockRatio gives null).
    function summary(r) {
      const ratio = LraWeb.blockRatio(r.ms, { block: BLOCK, ends: ENDS, finished: r.finished === true });
      return { ms_per_pixel: mean(r.ms), block_ms: LraWeb.blockTimes(r.ms, BLOCK), ratio,
        seconds: r.wall / 1000, new_pixels: r.ms.length, finished: r.finished === true };
    }

    function showTable(runs) {
      const rows = runs.map((r, i) => {
        const s = summary(r), p = panels[i], key = `${p.name}:${p.method}`;
        const rec = (recorded.chromium || {})[key], py = (recorded.python || {})[key];
        const cell = (v, d) => (v == null || Number.isNaN(v) ? "–" : Number(v).toFixed(d));
        return `<tr><td style="color:${p.color}">${p.model.cfg.attention}, ${METHOD_LABEL[p.method]}</td>` +
          `<td>${cell(s.ms_per_pixel, 3)}</td><td>${s.finished || !s.new_pixels ? cell(s.ratio, 2) : "– (stopped)"}</td><td>${cell(s.seconds, 2)}</td>` +
          `<td>${rec ? cell(rec.ms_per_pixel, 3) : "–"}</td><td>${rec ? cell(rec.ratio, 2) : "–"}</td>` +
          `<td>${py ? cell(py.ms_per_pixel, 2) : "–"}</td><td>${py ? py.label : "–"}</td></tr>`;
      });
      table.innerHTML = "<table class='lrakit-compare-table'><thead><tr><th>model</th><th>ms/pixel here</th>" +
        "<th>end ÷ start here</th><th>seconds here</th><th>ms/pixel recorded (headless Chromium)</th>" +
        "<th>end ÷ start recorded</th><th>ms/pixel, Python benchmark</th><th>its model</th></tr></thead><tbody>" +
        rows.join("") + "</tbody></table>" +
        `<p style="font-size:90%;color:#555">End ÷ start: the fastest of a digit's last ${ENDS} blocks of ${BLOCK} ` +
        `pixels over the fastest of its first ${ENDS}; none for a stopped run.</p>` +
        (recorded.note ? `<p style="font-size:90%;color:#555">${recorded.note}</p>` : "");
    }

    // Run the chosen panels together (each its own loop, the browser painting between slices).
    async function run(mode, only) {
      if (running) return null;
      running = true; stopping = false;
      genBtn.disabled = compBtn.disabled = true; stopBtn.disabled = false;
      const t = Number(temp.value), temperature = t > 0 ? t : null, s = Math.max(0, Math.floor(Number(seed.value) || 0));
      const d = digits.pixels[Number(digitSel.value)];
      const prompt = mode === "complete" ? d.slice(0, 392) : [0];
      const chosen = only ? only.map((i) => panels[i]) : panels;
      const runs = panels.map(() => ({ ms: [], bytes: [], start: prompt.length, wall: 0, pixels: [], finished: false }));
      root.dataset.state = "running";
      status.textContent = mode === "complete" ? "completing the bottom half…" : "generating…";
      let lastDraw = 0;
      const loop = async (p) => {
        const i = panels.indexOf(p), r = runs[i], rand = LraWeb.mulberry32(s);
        p.box.dataset.state = "running";
        p.ctx.fillStyle = "#7f9fbf"; p.ctx.fillRect(0, 0, p.canvas.width, p.canvas.height);
        prompt.forEach((v, k) => drawPixel(p.ctx, k, v, SCALE));
        const t0 = LraWeb.now();
        const sess = p.model.session(p.method);
        let logp = p.model.prefill(sess, prompt);
        const out = prompt.slice();
        // One clock stamp between consecutive pixels (a pixel's time: its draw from the model's output, the
        // model's step and the count of the state's bytes), so that a stretch of pixels adds up to one interval
        // of the clock; the canvas is painted between stretches, untimed.
        let shown = out.length, stretch = LraWeb.now(), prev = stretch;
        while (out.length < 784 && !stopping) {
          const v = LraWeb.choose(logp, temperature, rand);
          out.push(v);
          if (out.length < 784) logp = p.model.step(sess, v);
          r.bytes.push(p.model.stateBytes(sess));
          const t = LraWeb.now();
          r.ms.push(t - prev);
          prev = t;
          if ((out.length - prompt.length) % BLOCK === 0 || t - stretch > PAUSE_MS || out.length === 784) {
            for (; shown < out.length; shown++) drawPixel(p.ctx, shown, out[shown], SCALE);
            sampleHeap();
            if (t - lastDraw > 100) { redrawPlots(runs); lastDraw = t; }
            await yieldToBrowser();
            stretch = prev = LraWeb.now();
          }
        }
        for (; shown < out.length; shown++) drawPixel(p.ctx, shown, out[shown], SCALE);
        r.wall = LraWeb.now() - t0;
        r.pixels = out;
        r.finished = out.length === 784;
        p.box.dataset.state = r.finished ? "done" : "stopped";
        const sm = summary(r);
        const black = temperature === null && out.slice(prompt.length).every((x) => x === 0);
        p.read.textContent = `${sm.new_pixels} pixels in ${sm.seconds.toFixed(2)} s; ${sm.ms_per_pixel.toFixed(3)} ms/pixel` +
          (sm.ratio === null ? (r.finished ? "" : "; stopped: no end ÷ start") : `; end ÷ start = ${sm.ratio.toFixed(2)}`) +
          `; keeps ${fmtBytes(r.bytes[r.bytes.length - 1] || 0)}` +
          (black ? "; greedy: black was the most likely value of every pixel" : "");
      };
      // The fast panels first, side by side; then the re-run on the prefix, whose single steps take long
      // enough to starve the others of the browser's time if they shared it (their timings would not change,
      // but their digits would appear at its pace).
      await Promise.all(chosen.filter((p) => p.method !== "recompute").map(loop));
      if (!stopping) {
        const slow = chosen.filter((p) => p.method === "recompute");
        if (slow.length) status.textContent = "re-running softmax on the whole prefix for every pixel (minutes; stop ends it)…";
        await Promise.all(slow.map(loop));
      }
      sampleHeap();
      redrawPlots(runs);
      showTable(runs);
      const result = { mode, temperature, seed: s, peakHeap, runs: runs.map((r, i) => Object.assign(
        { name: panels[i].name, method: panels[i].method, ran: chosen.includes(panels[i]) }, r, summary(r))) };
      window.LraWebDemo.runs.push(result);
      status.textContent = stopping ? "stopped" : "done";
      root.dataset.state = stopping ? "stopped" : "done";
      genBtn.disabled = compBtn.disabled = false; stopBtn.disabled = true;
      running = false;
      return result;
    }
    genBtn.addEventListener("click", () => run("generate"));
    compBtn.addEventListener("click", () => run("complete"));
    root.lrakitRun = run; // measurement (lra_kit.web.measure): run(mode, [panel index]) → Promise of the series
    root.dataset.state = "ready";
    redrawPlots(panels.map(() => ({ ms: [], bytes: [], start: 0 })));
  }

  window.LraWebDemo = { runs: [], peakHeap: () => peakHeap };
  function start() { document.querySelectorAll(".lrakit-webgen").forEach(build); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
