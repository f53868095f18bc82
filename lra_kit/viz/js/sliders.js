// The book's kernel-free sliders: the page recomputes the figure and its numbers at every slider
// position, with no kernel and nothing fetched (lra_kit/viz/widgets.py).
//
// A classic script that defines globalThis.LraKitSliders. widgets.py inlines it into each widget's
// HTML, followed by one call such as LraKitSliders.mountReweighting(element): a chapter's output
// must also work inside JupyterLab and in a downloaded .ipynb, where no _static/ folder exists.
// Node runs the same file (tests/js/sliders.test.mjs) and compares the pure functions below
// (reweightingNumbers, connectionNumbers, recentWindow) with their Python oracles in
// lra_kit/viz/momentum.py; the browser tests (tests/browser) check the mounted widgets on the built pages.
//
// The file must never contain the characters that end an inline script element (widgets.py refuses them).
(function (root) {
  "use strict";

  // --- numbers (no DOM): the oracles' counterparts ---------------------------------------------

  // u(lag) = Σ_{m=0}^{lag} β^m in closed form (Nguyen et al. eq. 13's lag weight without γ)
  function u(lag, beta) { return beta === 0 ? 1 : (1 - Math.pow(beta, lag + 1)) / (1 - beta); }

  // 1/(1 − β) rounded half up: the same IEEE operations, in the same order, as momentum.recent_window,
  // so the two agree at every β (Math.round would too, but only by accident of its tie rule)
  function recentWindow(beta) { return Math.max(1, Math.floor(1 / (1 - beta) + 0.5)); }

  // the shaded window's name (momentum.window_label): "≈ 1/(1−β)" only where the prefix holds that many keys
  function windowLabel(beta, i) {
    var full = recentWindow(beta), window = Math.min(i + 1, full);
    var keys = "the last " + window + " key" + (window === 1 ? "" : "s");
    return window < full ? keys + ": the whole prefix (1/(1−β) ≈ " + full + ")" : keys + " ≈ 1/(1−β)";
  }

  // eq. 13 for query i: linear map, momentum map, row-normalised momentum
  function reweightingRow(scores, i, beta, gamma) {
    var K = scores[i], z = 0, lin = [], mom = [], scale = 0, j;
    for (j = 0; j <= i; j++) z += K[j];
    for (j = 0; j <= i; j++) { lin.push(K[j] / z); mom.push(gamma * u(i - j, beta) * K[j] / z); scale += mom[j]; }
    return { lin: lin, mom: mom, scale: scale, norm: mom.map(function (m) { return m / scale; }) };
  }

  function meanLag(w, i) { var s = 0; for (var j = 0; j <= i; j++) s += w[j] * (i - j); return s; }

  // what momentum.reweighting_readouts returns, for the causal score rows `scores`
  function reweightingNumbers(scores, beta, gamma, i) {
    return rowNumbers(reweightingRow(scores, i, beta, gamma), i, beta);
  }

  // the read-outs from query i's row r = reweightingRow(...): the widget needs every row for its figure, and
  // reads its numbers off the row it already has instead of computing that row a second time
  function rowNumbers(r, i, beta) {
    var window = Math.min(i + 1, recentWindow(beta)), recentLin = 0, recentMom = 0;
    for (var j = i - window + 1; j <= i; j++) { recentLin += r.lin[j]; recentMom += r.norm[j]; }
    return {
      scale: r.scale, window: window, recent_linear: recentLin, recent_momentum: recentMom,
      mean_lag_linear: meanLag(r.lin, i), mean_lag_momentum: meanLag(r.norm, i), oldest_to_newest: u(i, beta)
    };
  }

  function norm(x) { var s = 0; for (var k = 0; k < x.length; k++) s += x[k] * x[k]; return Math.sqrt(s); }

  // the heavy ball mode by mode: e ← (1 + β − step·λ)e − βe_prev (momentum.heavy_ball_modes)
  function heavyBall(lam, e0, steps, beta, step) {
    var e = e0.slice(), prev = e0.slice(), errors = [norm(e)], ratios = [];
    for (var k = 0; k < steps; k++) {
      var next = [], dg = [], gp = [];
      for (var m = 0; m < lam.length; m++) {
        next.push((1 + beta - step * lam[m]) * e[m] - beta * prev[m]);
        dg.push(lam[m] * (next[m] - e[m])); gp.push(lam[m] * e[m]);
      }
      prev = e; e = next; errors.push(norm(e)); ratios.push(norm(dg) / norm(gp));
    }
    return { errors: errors, ratios: ratios };
  }

  function eq18(r, delta) { return Math.min(1 - delta, Math.max(0, Math.pow(1 - Math.sqrt(r), 2))); }

  // what momentum.connection_readouts returns; D = {eigenvalues, e0, steps, delta}. The runs ride along
  // for the figure.
  function connectionNumbers(D, beta, gamma) {
    var lam = D.eigenvalues, L = Math.max.apply(null, lam), nu = Math.min.apply(null, lam);
    var step = gamma / L, betaStar = Math.pow(1 - Math.sqrt(step * nu), 2);
    var a = heavyBall(lam, D.e0, D.steps, beta, step), b = heavyBall(lam, D.e0, D.steps, betaStar, step);
    var r = a.ratios[a.ratios.length - 1];
    var above = a.ratios.filter(function (x) { return x > 1; }).length / a.ratios.length;
    return {
      beta_star: betaStar, error: a.errors[D.steps], error_star: b.errors[D.steps], ratio: r,
      eq18: eq18(r, D.delta), share_above_one: above, run: a, best: b
    };
  }

  // --- a minimal SVG plotter: strings only, so the page needs no namespace URL and no library ------

  // a number for a read-out: d decimals, or three significant digits as 6.32e-5 outside [0.001, 10⁴) (never "e+0")
  function sci(x) { return x.toExponential(2).replace("e+", "e"); }
  function fmt(x, d) {
    return (Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-3 && x !== 0)) ? sci(x) : x.toFixed(d);
  }
  // three significant digits: 6.32, 0.0153, 1.23e-7
  function sig(x) {
    if (x === 0 || !isFinite(x)) return String(x);
    var a = Math.abs(x);
    return (a >= 1e4 || a < 1e-3) ? sci(x) : x.toFixed(Math.max(0, 2 - Math.floor(Math.log10(a))));
  }
  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;"); }
  function Panel(x, y, w, h, xlo, xhi, ylo, yhi, logy) {
    this.x = x; this.y = y; this.w = w; this.h = h; this.xlo = xlo; this.xhi = xhi; this.logy = !!logy;
    this.ylo = logy ? Math.log10(ylo) : ylo; this.yhi = logy ? Math.log10(yhi) : yhi; this.parts = [];
  }
  Panel.prototype.X = function (v) { return this.x + (v - this.xlo) / (this.xhi - this.xlo) * this.w; };
  Panel.prototype.Y = function (v) {
    var t = this.logy ? Math.log10(Math.max(v, 1e-300)) : v;
    t = Math.min(Math.max(t, this.ylo), this.yhi);
    return this.y + this.h - (t - this.ylo) / (this.yhi - this.ylo) * this.h;
  };
  Panel.prototype.add = function (s) { this.parts.push(s); };
  Panel.prototype.text = function (x, y, s, anchor, extra) {
    this.add('<text x="' + x.toFixed(1) + '" y="' + y.toFixed(1) + '" font-size="12" text-anchor="' +
             (anchor || "middle") + '" ' + (extra || "") + '>' + esc(s) + '</text>');
  };
  Panel.prototype.axes = function (title, xlabel, ylabel, xticks, yticks) {
    var p = this;
    p.add('<rect x="' + p.x + '" y="' + p.y + '" width="' + p.w + '" height="' + p.h + '" fill="none" stroke="#999"/>');
    xticks.forEach(function (t) {
      var X = p.X(t[0]);
      p.add('<line x1="' + X + '" x2="' + X + '" y1="' + (p.y + p.h) + '" y2="' + (p.y + p.h + 4) + '" stroke="#999"/>');
      p.text(X, p.y + p.h + 16, t[1]);
    });
    yticks.forEach(function (t) {
      var Y = p.Y(t[0]);
      p.add('<line x1="' + (p.x - 4) + '" x2="' + p.x + '" y1="' + Y + '" y2="' + Y + '" stroke="#999"/>');
      p.text(p.x - 6, Y + 4, t[1], "end");
    });
    p.text(p.x + p.w / 2, p.y - 7, title, "middle", 'font-weight="600"');
    if (xlabel) p.text(p.x + p.w / 2, p.y + p.h + 31, xlabel);
    if (ylabel) p.text(p.x - 38, p.y + p.h / 2, ylabel, "middle",
                       'transform="rotate(-90 ' + (p.x - 38) + ' ' + (p.y + p.h / 2) + ')"');
  };
  Panel.prototype.line = function (xs, ys, color, width, dash, cls) {
    var p = this, pts = xs.map(function (x, k) { return p.X(x).toFixed(1) + "," + p.Y(ys[k]).toFixed(1); });
    p.add('<polyline class="' + (cls || "") + '" points="' + pts.join(" ") + '" fill="none" stroke="' + color +
          '" stroke-width="' + (width || 1.5) + '"' + (dash ? ' stroke-dasharray="' + dash + '"' : "") + '/>');
  };
  Panel.prototype.hline = function (v, color, dash) {
    var Y = this.Y(v);
    this.add('<line x1="' + this.x + '" x2="' + (this.x + this.w) + '" y1="' + Y + '" y2="' + Y + '" stroke="' + color +
             '"' + (dash ? ' stroke-dasharray="' + dash + '"' : "") + '/>');
  };
  Panel.prototype.bar = function (x0, x1, v, color, cls, opacity) {
    var Y = this.Y(v), Y0 = this.Y(this.logy ? Math.pow(10, this.ylo) : 0);
    this.add('<rect class="' + (cls || "") + '" x="' + this.X(x0).toFixed(1) + '" y="' + Math.min(Y, Y0).toFixed(1) +
             '" width="' + Math.max(0.5, this.X(x1) - this.X(x0)).toFixed(1) +
             '" height="' + Math.abs(Y0 - Y).toFixed(1) +
             '" fill="' + color + '"' + (opacity ? ' fill-opacity="' + opacity + '"' : "") + '/>');
  };
  // a legend's size for its items (12 px text: about 6.6 px a character), so that a figure can place it
  function legendSize(items) {
    var longest = 0;
    items.forEach(function (it) { longest = Math.max(longest, it[0].length); });
    return { w: 22 + 6.6 * longest, h: 15 * items.length };
  }
  // items: [label, colour] (a swatch) or [label, colour, dash] (a line, dashed as the panel draws it)
  Panel.prototype.legend = function (x, y, items) {
    var p = this, size = legendSize(items), top = y - 11;
    p.add('<g class="legend" data-box="' + [x, top, size.w, size.h].map(function (v) { return v.toFixed(1); })
          .join(",") + '">');
    items.forEach(function (it, k) {
      var Y = y + 15 * k;
      if (it[2]) p.add('<line x1="' + x + '" x2="' + (x + 14) + '" y1="' + (Y - 4) + '" y2="' + (Y - 4) +
                       '" stroke="' + it[1] + '" stroke-dasharray="' + it[2] + '"/>');
      else p.add('<rect x="' + x + '" y="' + (Y - 8) + '" width="14" height="8" fill="' + it[1] + '"/>');
      p.text(x + 18, Y, it[0], "start");
    });
    p.add("</g>");
  };
  function svg(width, height, panels) {
    return '<svg viewBox="0 0 ' + width + ' ' + height + '" width="100%" role="img" style="max-width:' + width +
           'px;display:block;">' + panels.map(function (p) { return p.parts.join(""); }).join("") + '</svg>';
  }
  // about n ticks on [lo, hi] at multiples of 1, 2 or 5 × 10^k, each placed at the value its label reads
  // (a tick at 0.0365 labelled "0.04" misread the axis); integer steps for integer axes
  function ticks(lo, hi, n) {
    // the step of 1, 2, 5 or 10 × 10^k whose count of ticks is nearest n + 1, never fewer than two
    var raw = (hi - lo) / Math.max(1, n), mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag, best = Infinity;
    [1, 2, 5, 10].forEach(function (m) {
      var c = Math.floor(hi / (m * mag) + 1e-9) - Math.ceil(lo / (m * mag) - 1e-9) + 1;
      if (c >= 2 && Math.abs(c - (n + 1)) < best) { best = Math.abs(c - (n + 1)); step = m * mag; }
    });
    var d = Math.max(0, -Math.floor(Math.log10(step) + 1e-9)), out = [];
    for (var k = Math.ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k++) {
      var label = (k * step).toFixed(d);
      out.push([parseFloat(label), label]);
    }
    return out;
  }
  function logTicks(lo, hi) {
    var out = [], e0 = Math.ceil(Math.log10(lo)), e1 = Math.floor(Math.log10(hi));
    var by = Math.max(1, Math.ceil((e1 - e0) / 4));
    for (var e = e0; e <= e1; e += by) out.push([Math.pow(10, e), "1e" + e]);
    return out;
  }

  // --- the widgets in the page --------------------------------------------------------------------

  function data(el) { return JSON.parse(el.querySelector(".lrakit-data").textContent); }

  // call redraw(values) now and on every slider move; show the read-outs it returns
  function wire(el, redraw) {
    var sliders = Array.prototype.slice.call(el.querySelectorAll("input[type=range]"));
    function read() {
      var v = {};
      sliders.forEach(function (s) {
        v[s.dataset.param] = parseFloat(s.value);
        el.querySelector('output[data-value="' + s.dataset.param + '"]').textContent = s.value;
      });
      return v;
    }
    function show(values) {
      Object.keys(values).forEach(function (name) {
        el.querySelector('[data-readout="' + name + '"]').textContent = values[name];
      });
    }
    function update() { show(redraw(read())); }
    sliders.forEach(function (s) { s.addEventListener("input", update); });
    update();
  }

  // chapter 4's figure and read-outs for one slider position (no DOM: node tests it)
  function reweightingFigure(D, beta, gamma, i) {
    var n = D.tokens.length, rows = [], q, j;
    for (q = 0; q < n; q++) rows.push(reweightingRow(D.scores, q, beta, gamma));
    var r = rows[i], out = rowNumbers(r, i, beta), window = out.window;
    // panel 1: the row over its keys, linear vs momentum (row-normalised). The legend sits top right; where the
    // bars reach under it, the axis gets the headroom that keeps every bar below it
    var ymax = 0; for (j = 0; j <= i; j++) ymax = Math.max(ymax, r.lin[j], r.norm[j]);
    var items = [["linear attention (β = 0)", "#9ca3af"], ["momentum, row-normalised", "#2563eb"],
                 [windowLabel(beta, i), "#fde68a"]];
    var size = legendSize(items), x0 = 60, w = 620, h = 150, lx = x0 + w - size.w - 8, top = ymax * 1.1;
    var p1 = new Panel(x0, 28, w, h, -0.5, n - 0.5, 0, top);
    if (p1.X(i + 0.5) > lx - 4) top = Math.max(top, ymax * h / (h - size.h - 12));
    p1 = new Panel(x0, 28, w, h, -0.5, n - 0.5, 0, top);
    p1.add('<rect x="' + p1.X(i - window + 0.5).toFixed(1) + '" y="' + p1.y + '" width="' +
           (p1.X(i + 0.5) - p1.X(i - window + 0.5)).toFixed(1) + '" height="' + p1.h +
           '" fill="#fde68a" fill-opacity="0.5"/>');
    for (j = 0; j <= i; j++) {
      p1.bar(j - 0.4, j, r.lin[j], "#9ca3af", "bar-linear");
      p1.bar(j, j + 0.4, r.norm[j], "#2563eb", "bar-momentum");
    }
    var xt = [];
    for (j = 0; j < n; j++) xt.push([j, D.tokens[j] === " " ? "␣" : D.tokens[j]]);
    p1.axes("query " + i + " ('" + D.tokens[i] + "'): share of its attention on each key", "", "share", xt,
            ticks(0, top, 3));
    p1.legend(lx, p1.y + 14, items);
    // panel 2: ratio to linear attention's weights against the lag, for the lags query i has (0 … i)
    var lags = [], ratio = [], ratioNorm = [];
    for (var l = 0; l <= i; l++) {
      var wl = gamma * u(l, beta);
      lags.push(l); ratio.push(wl); ratioNorm.push(wl / r.scale);
    }
    var rmax = Math.max(2, gamma / (1 - beta) * 1.1);
    var p2 = new Panel(60, 232, 280, 130, 0, n - 1, 0.1, Math.max(rmax, 1.5), true);
    p2.hline(1, "#6b7280", "4 3");
    p2.line(lags, ratio, "#dc2626", 2, null, "ratio-raw");
    p2.line(lags, ratioNorm, "#2563eb", 2, "6 3", "ratio-normalised");
    p2.axes("ratio to linear attention's weight", "lag i − j (query " + i + ": up to " + i + ")", "ratio (log)",
            ticks(0, n - 1, 4), logTicks(0.1, Math.max(rmax, 1.5)));
    p2.legend(p2.x + 140, p2.y + p2.h - 39, [["A/A⁰ = γu(lag)", "#dc2626"], ["row-normalised", "#2563eb", "6 3"],
                                             ["1: linear attention", "#6b7280", "4 3"]]);
    // panel 3: mean lag read by every query, linear vs momentum
    var qs = [], ml = [], mm = [];
    for (q = 0; q < n; q++) { qs.push(q); ml.push(meanLag(rows[q].lin, q)); mm.push(meanLag(rows[q].norm, q)); }
    var p3 = new Panel(400, 232, 280, 130, 0, n - 1, 0, n - 1);
    p3.line(qs, ml, "#9ca3af", 2, null, "meanlag-linear");
    p3.line(qs, mm, "#2563eb", 2, null, "meanlag-momentum");
    p3.add('<line x1="' + p3.X(i) + '" x2="' + p3.X(i) + '" y1="' + p3.y + '" y2="' + (p3.y + p3.h) +
           '" stroke="#f59e0b"/>');
    p3.axes("output for the value v_j = j: mean lag read", "query i", "mean lag", ticks(0, n - 1, 4),
            ticks(0, n - 1, 3));
    p3.legend(p3.x + 190, p3.y + p3.h - 24, [["linear", "#9ca3af"], ["momentum", "#2563eb"]]);
    return {
      svg: svg(700, 400, [p1, p2, p3]),
      readouts: {
        scale: fmt(out.scale, 3), window: String(window),
        recent_linear: fmt(out.recent_linear, 3), recent_momentum: fmt(out.recent_momentum, 3),
        mean_lag_linear: fmt(out.mean_lag_linear, 2), mean_lag_momentum: fmt(out.mean_lag_momentum, 2),
        oldest_to_newest: fmt(out.oldest_to_newest, 2)
      }
    };
  }

  // chapter 4: β, γ and the query move; eq. 13 over the embedded causal scores
  function mountReweighting(el) {
    var D = data(el);
    wire(el, function (v) {
      var figure = reweightingFigure(D, v.beta, v.gamma, Math.round(v.query));
      el.querySelector(".lrakit-figure").innerHTML = figure.svg;
      return figure.readouts;
    });
  }

  // chapter 5: β̃ and γ̃ move; the heavy ball runs mode by mode over the embedded spectrum
  function mountConnection(el) {
    var D = data(el);
    wire(el, function (v) {
      var beta = v.beta_t, gamma = v.gamma_t, out = connectionNumbers(D, beta, gamma), a = out.run, b = out.best;
      var ks = [];
      for (var k = 0; k <= D.steps; k++) ks.push(k);
      // panel 1: weight of each earlier layer's update (eq. 15 unrolled)
      var wmax = Math.max(1.2, gamma * u(D.layers - 1, beta)) * 1.25;  // headroom for the legend
      var p1 = new Panel(60, 28, 200, 140, -0.5, D.layers - 0.5, 0, wmax);
      for (var l = 0; l < D.layers; l++) p1.bar(l - 0.35, l + 0.35, gamma * u(l, beta), "#2563eb", "bar-layer");
      // dashed: the residual connection with the same step (β̃ = 0) gives every earlier update the weight γ̃,
      // as the chapter's static figure draws it
      p1.hline(gamma, "#6b7280", "4 3");
      p1.axes("weight of V̂ from l layers back", "lag l (layers)", "weight", ticks(0, D.layers - 1, D.layers - 1),
              ticks(0, wmax, 3));
      p1.legend(p1.x + 8, p1.y + 14, [["β̃ = 0: γ̃ at every lag", "#6b7280", "4 3"]]);
      // panel 2: the error of the heavy ball with β̃ and with β* for this step
      var p2 = new Panel(330, 28, 350, 140, 0, D.steps, 1e-12, 1e4, true);
      p2.line(ks, b.errors, "#9ca3af", 2, null, "error-star");
      p2.line(ks, a.errors, "#dc2626", 2, null, "error-run");
      p2.axes("‖xᵏ − x*‖ with step γ̃/L", "iteration k", "error (log)", ticks(0, D.steps, 4), logTicks(1e-12, 1e4));
      p2.legend(p2.x + 150, p2.y + 14, [["β̃ (slider)", "#dc2626"], ["β* = (1 − √(γ̃ν/L))²", "#9ca3af"]]);
      // panel 3: eq. 18 against r, and the r this run produces
      var rs = [], bs = [], rmax = 5;
      for (var t = 0; t <= 200; t++) { rs.push(rmax * t / 200); bs.push(eq18(rmax * t / 200, D.delta)); }
      var p3 = new Panel(60, 232, 620, 130, 0, rmax, 0, 1.05);
      p3.add('<rect x="' + p3.X(1) + '" y="' + p3.y + '" width="' + (p3.X(rmax) - p3.X(1)) + '" height="' + p3.h +
             '" fill="#fee2e2" fill-opacity="0.6"/>');
      p3.line(rs, bs, "#111827", 2, null, "eq18-curve");
      var r = out.ratio, rShow = Math.min(r, rmax);
      p3.add('<circle class="eq18-point" cx="' + p3.X(rShow).toFixed(1) + '" cy="' + p3.Y(out.eq18).toFixed(1) +
             '" r="5" fill="#dc2626"/>');
      p3.axes("eq. 18: β̃ = proj(1 − √r)², r = ‖g_k − g_(k−1)‖ / ‖g_(k−1)‖ (shaded: r > 1, the increasing branch)",
              "r", "β̃", ticks(0, rmax, 5), ticks(0, 1, 2));
      p3.legend(p3.x + 300, p3.y + 40, [["r of this run's last step", "#dc2626"]]);
      el.querySelector(".lrakit-figure").innerHTML = svg(700, 400, [p1, p2, p3]);
      return {
        beta_star: fmt(out.beta_star, 4), error: sig(out.error), error_star: sig(out.error_star),
        ratio: fmt(r, 3), eq18: fmt(out.eq18, 4), share_above_one: fmt(out.share_above_one, 3)
      };
    });
  }

  // the frame of a pre-rendered sweep: its key is the sliders' value indices joined by commas
  function frameKey(indices) { return indices.join(","); }

  // the pre-rendered slider player: moving a slider swaps the PNG frame (figures.slider_player)
  function mountPlayer(el) {
    var D = data(el), image = el.querySelector("img");
    var sliders = Array.prototype.slice.call(el.querySelectorAll("input[type=range]"));
    function show() {
      sliders.forEach(function (s, k) { s.nextElementSibling.textContent = D.values[k][+s.value]; });
      image.src = D.frames[frameKey(sliders.map(function (s) { return +s.value; }))];
    }
    sliders.forEach(function (s) { s.addEventListener("input", show); });
  }

  root.LraKitSliders = {
    u: u, recentWindow: recentWindow, reweightingNumbers: reweightingNumbers, heavyBall: heavyBall, eq18: eq18,
    connectionNumbers: connectionNumbers, frameKey: frameKey, fmt: fmt, sig: sig, ticks: ticks,
    windowLabel: windowLabel, reweightingFigure: reweightingFigure,
    mountReweighting: mountReweighting, mountConnection: mountConnection, mountPlayer: mountPlayer
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
