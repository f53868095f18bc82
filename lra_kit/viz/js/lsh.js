// The baselines chapter's LSH slider: Reformer's LSH attention (Kitaev et al. 2020, §2) recomputed in the page
// for the chosen number of rounds and buckets, with no kernel and nothing fetched (lra_kit/viz/lsh.py).
//
// A classic script that defines globalThis.LraKitLSH. lsh.py inlines it into the widget's HTML, followed by
// LraKitLSH.mount(element). The numbers are those of lra_kit.attention.lsh_attention (layout "round": each round
// sorted and chunked on its own, the first chunk of a round sees no chunk before it), non-causal, on the embedded
// qk and rotation bank: node checks weights/softmaxWeights/readouts against lra_kit.viz.lsh
// (tests/js/lsh.test.mjs), and the browser test moves the sliders on the built page.
//
// The file must never contain the characters that end an inline script element (lsh.py refuses them).
(function (root) {
  "use strict";

  function dot(a, b) { var s = 0; for (var k = 0; k < a.length; k++) s += a[k] * b[k]; return s; }
  function unit(x) {
    var n = Math.max(Math.sqrt(dot(x, x)), 1e-12);
    return x.map(function (v) { return v / n; });
  }

  // h(x) = argmax([xR ; −xR]) with R the first b/2 columns of the round's rotation: the first largest entry,
  // as torch.argmax picks it
  function hash(x, rotation, nBuckets) {
    var half = nBuckets / 2, best = -Infinity, arg = 0, k, d, v;
    var rotated = [];
    for (k = 0; k < half; k++) {
      v = 0;
      for (d = 0; d < x.length; d++) v += x[d] * rotation[d][k];
      rotated.push(v);
    }
    for (k = 0; k < nBuckets; k++) {
      v = k < half ? rotated[k] : -rotated[k - half];
      if (v > best) { best = v; arg = k; }
    }
    return arg;
  }

  // each position's chunk in one round: positions sorted by (bucket, position), cut into chunks of `chunk`
  function chunksOfRound(qk, rotation, nBuckets, chunk) {
    var n = qk.length, bucket = qk.map(function (x) { return hash(x, rotation, nBuckets); });
    var ranked = [];
    for (var i = 0; i < n; i++) ranked.push(i);
    ranked.sort(function (a, b) { return bucket[a] - bucket[b] || a - b; });
    var chunkOf = new Array(n);
    ranked.forEach(function (pos, rank) { chunkOf[pos] = Math.floor(rank / chunk); });
    return chunkOf;
  }

  // row i of one round: softmax over the keys of i's chunk and the chunk before, itself at selfScore; and z
  function roundRow(qk, keys, chunkOf, i, selfScore) {
    var n = qk.length, scale = Math.sqrt(qk[0].length), js = [], s = [], top = -Infinity, j;
    for (j = 0; j < n; j++) {
      if (chunkOf[j] !== chunkOf[i] && chunkOf[j] !== chunkOf[i] - 1) continue;
      var score = j === i ? selfScore : dot(qk[i], keys[j]) / scale;
      js.push(j); s.push(score); top = Math.max(top, score);
    }
    var total = 0, e = s.map(function (v) { var x = Math.exp(v - top); total += x; return x; });
    return { keys: js, weights: e.map(function (x) { return x / total; }), z: top + Math.log(total) };
  }

  // W (N × N): the weights LSH attention puts on the values, the rounds combined by softmax over their z
  function weights(D, rounds, nBuckets) {
    var qk = D.qk, n = qk.length, keys = qk.map(unit), r, i, k;
    var rows = [];
    for (r = 0; r < rounds; r++) {
      var chunkOf = chunksOfRound(qk, D.rotations[r], nBuckets, D.chunk_size), perRow = [];
      for (i = 0; i < n; i++) perRow.push(roundRow(qk, keys, chunkOf, i, D.self_score));
      rows.push(perRow);
    }
    var W = [];
    for (i = 0; i < n; i++) {
      var zmax = -Infinity, total = 0, w = new Array(n).fill(0);
      for (r = 0; r < rounds; r++) zmax = Math.max(zmax, rows[r][i].z);
      var share = [];
      for (r = 0; r < rounds; r++) { share.push(Math.exp(rows[r][i].z - zmax)); total += share[r]; }
      for (r = 0; r < rounds; r++) {
        var row = rows[r][i];
        for (k = 0; k < row.keys.length; k++) w[row.keys[k]] += share[r] / total * row.weights[k];
      }
      W.push(w);
    }
    return W;
  }

  // which keys a query sees in some round (j ≠ i): P_i = ∪_r P_i^(r)
  function visible(D, rounds, nBuckets) {
    var n = D.qk.length, P = [], i, j, r;
    for (i = 0; i < n; i++) P.push(new Array(n).fill(false));
    for (r = 0; r < rounds; r++) {
      var c = chunksOfRound(D.qk, D.rotations[r], nBuckets, D.chunk_size);
      for (i = 0; i < n; i++) for (j = 0; j < n; j++) {
        if (j !== i && (c[j] === c[i] || c[j] === c[i] - 1)) P[i][j] = true;
      }
    }
    return P;
  }

  // A (N × N): shared-QK softmax over every key, itself at selfScore (what LSH approximates)
  function softmaxWeights(D) {
    var qk = D.qk, n = qk.length, keys = qk.map(unit), scale = Math.sqrt(qk[0].length), A = [];
    for (var i = 0; i < n; i++) {
      var s = [], top = -Infinity, j;
      for (j = 0; j < n; j++) { s.push(j === i ? D.self_score : dot(qk[i], keys[j]) / scale); top = Math.max(top, s[j]); }
      var total = 0, e = s.map(function (v) { var x = Math.exp(v - top); total += x; return x; });
      A.push(e.map(function (x) { return x / total; }));
    }
    return A;
  }

  // what lra_kit.viz.lsh.lsh_readouts returns; W and A ride along for the figure
  function readouts(D, rounds, nBuckets, A) {
    A = A || softmaxWeights(D);
    var W = weights(D, rounds, nBuckets), P = visible(D, rounds, nBuckets), n = D.qk.length;
    var seen = 0, mass = 0, tv = 0, mx = 0;
    for (var i = 0; i < n; i++) for (var j = 0; j < n; j++) {
      if (P[i][j]) { seen += 1; mass += A[i][j]; }
      var d = Math.abs(W[i][j] - A[i][j]);
      tv += 0.5 * d; mx = Math.max(mx, d);
    }
    return { keys_seen: seen / n, mass_seen: mass / n, total_variation: tv / n, max_abs: mx, W: W, A: A };
  }

  // --- the widget ---------------------------------------------------------------------------------------

  // one heat map as SVG rects: cell (row a, column b) of M in display order, opacity √(value / vmax)
  function heatmap(M, order, x0, y0, size, vmax, color, title, cls) {
    var n = order.length, cell = size / n, parts = [];
    parts.push('<rect x="' + x0 + '" y="' + y0 + '" width="' + size + '" height="' + size +
               '" fill="#fff" stroke="#999"/>');
    for (var a = 0; a < n; a++) for (var b = 0; b < n; b++) {
      var v = M[order[a]][order[b]];
      if (!(v > 1e-4)) continue;
      parts.push('<rect x="' + (x0 + b * cell).toFixed(2) + '" y="' + (y0 + a * cell).toFixed(2) + '" width="' +
                 cell.toFixed(2) + '" height="' + cell.toFixed(2) + '" fill="' + color + '" fill-opacity="' +
                 Math.min(1, Math.sqrt(v / vmax)).toFixed(3) + '"/>');
    }
    parts.push('<text x="' + (x0 + size / 2) + '" y="' + (y0 - 8) + '" font-size="13" text-anchor="middle" ' +
               'font-weight="600">' + title + '</text>');
    return '<g class="' + cls + '">' + parts.join("") + '</g>';
  }

  function fmt(x, d) { return x.toFixed(d); }

  function mount(el) {
    var D = JSON.parse(el.querySelector(".lrakit-data").textContent), A = softmaxWeights(D);
    var order = D.order, vmax = 0;
    A.forEach(function (row) { row.forEach(function (v) { vmax = Math.max(vmax, v); }); });
    var sliders = Array.prototype.slice.call(el.querySelectorAll("input[type=range]"));
    function update() {
      var v = {};
      sliders.forEach(function (s) {
        v[s.dataset.param] = parseInt(s.value, 10);
        el.querySelector('output[data-value="' + s.dataset.param + '"]').textContent = s.value;
      });
      var out = readouts(D, v.rounds, v.buckets, A), size = 300;
      var caption = "LSH, " + v.rounds + (v.rounds === 1 ? " round" : " rounds") + ", " + v.buckets + " buckets";
      el.querySelector(".lrakit-figure").innerHTML =
        '<svg viewBox="0 0 680 340" width="100%" role="img" style="max-width:680px;display:block;">' +
        heatmap(A, order, 20, 30, size, vmax, "#111827", "softmax (shared QK, self masked)", "heat-softmax") +
        heatmap(out.W, order, 360, 30, size, vmax, "#1d4ed8", caption, "heat-lsh") + '</svg>';
      var shown = { keys_seen: fmt(out.keys_seen, 2), mass_seen: fmt(out.mass_seen, 3),
                    total_variation: fmt(out.total_variation, 3), max_abs: fmt(out.max_abs, 3) };
      Object.keys(shown).forEach(function (name) {
        el.querySelector('[data-readout="' + name + '"]').textContent = shown[name];
      });
    }
    sliders.forEach(function (s) { s.addEventListener("input", update); });
    update();
  }

  root.LraKitLSH = {
    hash: hash, chunksOfRound: chunksOfRound, weights: weights, visible: visible, softmaxWeights: softmaxWeights,
    readouts: readouts, mount: mount
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
