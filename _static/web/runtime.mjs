// lra-kit web runtime: a trained pixel model of lra_kit, run one pixel at a time in plain JavaScript.
//
// No framework, no bundler, no network. One file that runs as a classic <script> (a page opened
// from disk may load classic scripts but not ES modules) and defines globalThis.LraWeb; Node imports
// it the same way (tests/js). Named .mjs because Jupyter Book 1.x adds every *.js under _static to
// the head of every page of the book; this file belongs to one page.
//
// It computes what lra_kit.models.CausalLM computes (lra_kit/models/causal_lm.py, layers.py,
// embeddings.py; lra_kit/attention/modules.py, linear.py, momentum.py), on the weights that
// `lra-kit export-web` writes (lra_kit/web/export.py; the page loads its NAME.mjs scripts):
//
//   embedding   token table + position (learned, sinusoidal added, or the sinusoids concatenated)
//   layer       pre-LN:  h = x + Attn(LN1(x)),  out = h + FFN(LN2(h))
//               post-LN: h = LN1(x + Attn(x)),  out = LN2(h + FFN(h))
//   attention   linear:   s_i = s_{i-1} + φ(k_i) v_iᵀ, z_i = z_{i-1} + φ(k_i),
//                         v'_i = φ(q_i)ᵀ s_i / (φ(q_i)ᵀ z_i + ε)       (Katharopoulos et al. eqs. 16-20)
//               momentum: m_i = β m_{i-1} − φ(k_i) v_iᵀ, s_i = s_{i-1} − γ m_i, z_i as above
//                                                                      (Nguyen et al. eq. 12)
//               softmax:  v'_i = Σ_j softmax_j(q_i·k_j/√D) v_j  with the keys/values kept (a cache)
//                         or recomputed from the whole prefix at every pixel (the papers' baseline)
//               φ(x) = elu(x) + 1 (Katharopoulos et al. eq. 7)
//   output      log-softmax over the 256 pixel values; greedy = argmax, sampling at a temperature
//               from a seeded generator (mulberry32).
//
// Weights and states are Float32Array (float32, like the PyTorch model); sums run in doubles.
(function (root) {
  "use strict";

  const LN_EPS_DEFAULT = 1e-5;

  function base64ToBuffer(text) {
    if (typeof Buffer !== "undefined" && typeof atob === "undefined") {
      const b = Buffer.from(text, "base64");
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    }
    const bin = atob(text);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }

  // y = W x + b for W (out, in) row-major (PyTorch's nn.Linear layout).
  function linear(W, b, x, nOut, nIn, y) {
    y = y || new Float32Array(nOut);
    for (let o = 0; o < nOut; o++) {
      let acc = b ? b[o] : 0;
      const row = o * nIn;
      for (let i = 0; i < nIn; i++) acc += W[row + i] * x[i];
      y[o] = acc;
    }
    return y;
  }

  function layerNorm(x, w, b, eps, y) {
    const n = x.length;
    let mean = 0;
    for (let i = 0; i < n; i++) mean += x[i];
    mean /= n;
    let v = 0;
    for (let i = 0; i < n; i++) { const d = x[i] - mean; v += d * d; }
    const inv = 1 / Math.sqrt(v / n + eps);
    y = y || new Float32Array(n);
    for (let i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * w[i] + b[i];
    return y;
  }

  // erf through the Chebyshev fit of erfc in Numerical Recipes §6.2 (fractional error < 1.2e-7)
  function erf(x) {
    const z = Math.abs(x), t = 1 / (1 + 0.5 * z);
    const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
      t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
      t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0 ? 1 - r : r - 1;
  }
  const ACTIVATIONS = {
    relu: (x) => (x > 0 ? x : 0),
    gelu: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)), // nn.GELU(): the exact (erf) form
  };

  function eluPlusOne(x) { return x > 0 ? x + 1 : Math.exp(x); } // φ, eq. 7

  function logSoftmax(x) {
    let m = -Infinity;
    for (let i = 0; i < x.length; i++) if (x[i] > m) m = x[i];
    let s = 0;
    for (let i = 0; i < x.length; i++) s += Math.exp(x[i] - m);
    const lse = m + Math.log(s);
    const out = new Float32Array(x.length);
    for (let i = 0; i < x.length; i++) out[i] = x[i] - lse;
    return out;
  }

  // ---- the model ---------------------------------------------------------------------------------

  const METHODS = {
    linear: ["recurrent"],
    momentum: ["recurrent"],
    softmax: ["kv-cache", "recompute"],
  };

  class Model {
    constructor(manifest, buffer) {
      if (!manifest || manifest.format !== "lra-kit-web/1") {
        throw new Error("manifest: expected format 'lra-kit-web/1', got " + (manifest && manifest.format));
      }
      const w = manifest.weights;
      if (buffer.byteLength !== w.bytes) {
        throw new Error(`weights: ${buffer.byteLength} bytes, the manifest says ${w.bytes}`);
      }
      this.manifest = manifest;
      this.name = manifest.name;
      const c = (this.cfg = manifest.model);
      if (!(c.attention in METHODS)) throw new Error(`model.attention: ${c.attention} has no web runtime`);
      if (c.output !== "softmax" || c.connection !== "residual") {
        throw new Error("model: only output 'softmax' with residual connections runs here");
      }
      this.t = {};
      for (const t of w.tensors) {
        const n = t.shape.reduce((a, b) => a * b, 1);
        this.t[t.name] = new Float32Array(buffer, t.offset, n);
      }
      this.d = c.d_model;
      this.H = c.n_heads;
      this.D = c.head_dim;
      this.inner = this.H * this.D;
      this.L = c.layers;
      this.vocab = manifest.vocab_size;
      this.length = manifest.length;
      this.lnEps = c.layer_norm_eps || LN_EPS_DEFAULT;
      const opt = c.attention_options || {};
      this.eps = opt.eps !== undefined ? opt.eps : 1e-6;
      this.beta = opt.beta;
      this.gamma = opt.gamma !== undefined ? opt.gamma : 1.0;
      this.act = ACTIVATIONS[c.activation];
      if (!this.act) throw new Error(`model.activation: ${c.activation} has no web runtime`);
      this.dTok = c.position === "sinusoidal_concat" ? Math.floor(this.d / 2) : this.d;
      this.W = [];
      for (let l = 0; l < this.L; l++) {
        const p = `encoder.layers.${l}.`, g = (n) => this.tensor(p + n);
        this.W.push({ Wq: g("attn.W_q.weight"), bq: g("attn.W_q.bias"), Wk: g("attn.W_k.weight"), bk: g("attn.W_k.bias"),
          Wv: g("attn.W_v.weight"), bv: g("attn.W_v.bias"), Wo: g("attn.W_o.weight"), bo: g("attn.W_o.bias"),
          n1w: g("norm1.weight"), n1b: g("norm1.bias"), n2w: g("norm2.weight"), n2b: g("norm2.bias"),
          f1w: g("ff.0.weight"), f1b: g("ff.0.bias"), f2w: g("ff.3.weight"), f2b: g("ff.3.bias") });
      }
    }

    get methods() { return METHODS[this.cfg.attention].slice(); }

    tensor(name) {
      const t = this.t[name];
      if (!t) throw new Error(`weights: no tensor ${name}`);
      return t;
    }

    // Katharopoulos et al. §3.4 / lra_kit Embeddings.forward: token + position (then LN when embed_norm)
    embed(token, pos) {
      if (!(token >= 0 && token < this.vocab)) throw new Error(`token must be in [0, ${this.vocab}), got ${token}`);
      if (!(pos >= 0 && pos < this.length)) throw new Error(`position must be in [0, ${this.length}), got ${pos}`);
      const d = this.d, x = new Float32Array(d), tok = this.tensor("embed.tokens.weight");
      const kind = this.cfg.position;
      for (let i = 0; i < this.dTok; i++) x[i] = tok[token * this.dTok + i];
      if (kind === "learned") {
        const p = this.tensor("embed.positions.weight");
        for (let i = 0; i < d; i++) x[i] += p[pos * d + i];
      } else if (kind === "sinusoidal") {
        const p = this.tensor("embed.table");
        for (let i = 0; i < d; i++) x[i] += p[pos * d + i];
      } else if (kind === "sinusoidal_concat") {
        const p = this.tensor("embed.table"), w = d - this.dTok;
        for (let i = 0; i < w; i++) x[this.dTok + i] = p[pos * w + i];
      } else if (kind !== "none") {
        throw new Error(`model.position: ${kind} has no web runtime`);
      }
      if (this.cfg.embed_norm) return layerNorm(x, this.tensor("embed.norm.weight"), this.tensor("embed.norm.bias"), this.lnEps);
      return x;
    }

    // One session = one image being generated: its method and per-layer state.
    session(method) {
      method = method || this.methods[0];
      if (!this.methods.includes(method)) {
        throw new Error(`method must be one of ${this.methods.join(", ")} for ${this.cfg.attention} attention, got ${method}`);
      }
      const layers = [];
      for (let l = 0; l < this.L; l++) {
        if (method === "recurrent") {
          const st = { s: new Float32Array(this.H * this.D * this.D), z: new Float32Array(this.H * this.D) };
          if (this.cfg.attention === "momentum") st.m = new Float32Array(this.H * this.D * this.D);
          layers.push(st);
        } else {
          layers.push({ k: new Float32Array(this.length * this.inner), v: new Float32Array(this.length * this.inner), n: 0 });
        }
      }
      return { method, pos: 0, layers, tokens: [] };
    }

    // Bytes the session keeps from one pixel to the next for its attention: the fixed-size state
    // (recurrent), the keys and values so far (kv-cache). `recompute` keeps only the pixels and
    // rebuilds the same keys and values at every step: its figure is what it rebuilds.
    stateBytes(session) {
      const per = this.H * this.D;
      if (session.method === "recurrent") {
        const mats = this.cfg.attention === "momentum" ? 2 : 1;
        return this.L * 4 * (mats * per * this.D + per);
      }
      return this.L * 4 * 2 * session.pos * this.inner;
    }

    // The attention of layer l for one position: x (d) → V̂ (d), updating the layer's state.
    attend(l, a, st, method) {
      const W = this.W[l], H = this.H, D = this.D, inner = this.inner;
      const q = linear(W.Wq, W.bq, a, inner, this.d);
      const k = linear(W.Wk, W.bk, a, inner, this.d);
      const v = linear(W.Wv, W.bv, a, inner, this.d);
      const out = new Float32Array(inner);
      if (method === "recurrent") {
        const mom = this.cfg.attention === "momentum", beta = this.beta, gamma = this.gamma;
        for (let h = 0; h < H; h++) {
          const o = h * D, S = h * D * D;
          const pq = new Float64Array(D), pk = new Float64Array(D);
          for (let i = 0; i < D; i++) { pq[i] = Math.fround(eluPlusOne(q[o + i])); pk[i] = Math.fround(eluPlusOne(k[o + i])); }
          for (let i = 0; i < D; i++) {
            const row = S + i * D;
            for (let j = 0; j < D; j++) {
              const kv = pk[i] * v[o + j];
              if (mom) { // eq. 12: m = β m − φ(k)vᵀ, s = s − γ m
                st.m[row + j] = beta * st.m[row + j] - kv;
                st.s[row + j] = st.s[row + j] - gamma * st.m[row + j];
              } else { // eq. 18
                st.s[row + j] += kv;
              }
            }
            st.z[o + i] += pk[i]; // eq. 19
          }
          let den = 0;
          for (let i = 0; i < D; i++) den += pq[i] * st.z[o + i];
          den += this.eps;
          for (let j = 0; j < D; j++) {
            let num = 0;
            for (let i = 0; i < D; i++) num += pq[i] * st.s[S + i * D + j];
            out[o + j] = num / den; // eq. 20
          }
        }
      } else { // softmax over the cached (or rebuilt) keys and values
        const n = st.n;
        st.k.set(k, n * inner);
        st.v.set(v, n * inner);
        st.n = n + 1;
        const scale = 1 / Math.sqrt(D), scores = new Float64Array(n + 1), acc = new Float64Array(D);
        const K = st.k, V = st.v;
        for (let h = 0; h < H; h++) {
          const o = h * D;
          let m = -Infinity;
          for (let j = 0; j <= n; j++) {
            let s = 0;
            const kj = j * inner + o;
            for (let i = 0; i < D; i++) s += q[o + i] * K[kj + i];
            s *= scale;
            scores[j] = s;
            if (s > m) m = s;
          }
          let total = 0;
          acc.fill(0);
          for (let j = 0; j <= n; j++) {
            const w = Math.exp(scores[j] - m), vj = j * inner + o;
            total += w;
            for (let i = 0; i < D; i++) acc[i] += w * V[vj + i];
          }
          for (let i = 0; i < D; i++) out[o + i] = acc[i] / total;
        }
      }
      return linear(W.Wo, W.bo, out, this.d, inner);
    }

    ffn(l, x) {
      const W = this.W[l], f = this.cfg.d_ff;
      const hid = linear(W.f1w, W.f1b, x, f, this.d);
      for (let i = 0; i < f; i++) hid[i] = this.act(hid[i]);
      return linear(W.f2w, W.f2b, hid, this.d, f);
    }

    // One position through every layer (TransformerLayer.step / Encoder.step), then the final LN.
    layersStep(x, layers, method) {
      const d = this.d, eps = this.lnEps;
      for (let l = 0; l < this.L; l++) {
        const { n1w, n1b, n2w, n2b } = this.W[l];
        const pre = this.cfg.norm === "pre";
        const vhat = this.attend(l, pre ? layerNorm(x, n1w, n1b, eps) : x, layers[l], method);
        let h = new Float32Array(d);
        for (let i = 0; i < d; i++) h[i] = x[i] + vhat[i];
        const out = new Float32Array(d);
        if (pre) {
          const f = this.ffn(l, layerNorm(h, n2w, n2b, eps));
          for (let i = 0; i < d; i++) out[i] = h[i] + f[i];
          x = out;
        } else {
          h = layerNorm(h, n1w, n1b, eps);
          const f = this.ffn(l, h);
          for (let i = 0; i < d; i++) out[i] = h[i] + f[i];
          x = layerNorm(out, n2w, n2b, eps);
        }
      }
      if (this.cfg.final_norm) x = layerNorm(x, this.tensor("encoder.final_norm.weight"), this.tensor("encoder.final_norm.bias"), eps);
      return x;
    }

    logProbs(h) {
      return logSoftmax(linear(this.tensor("head.weight"), this.tensor("head.bias"), h, this.vocab, this.d));
    }

    // Read `token` at the session's next position; return log P(next pixel) (Float32Array of 256).
    step(session, token) {
      if (session.pos >= this.length) throw new Error(`the image is full (${this.length} pixels)`);
      session.tokens.push(token);
      const pos = session.pos++;
      if (session.method === "recompute") return this.prefixLogProbs(session.tokens);
      return this.logProbs(this.layersStep(this.embed(token, pos), session.layers, session.method));
    }

    // Read a whole prompt; return log P(next pixel) after its last token. The recurrent and cached forms
    // step through it; the re-run keeps the tokens and runs the model once, on all of them.
    prefill(session, tokens) {
      if (!tokens || tokens.length < 1) throw new Error("prompt must hold at least one pixel");
      if (session.method !== "recompute") {
        let logp = null;
        for (const t of tokens) logp = this.step(session, t);
        return logp;
      }
      if (session.pos + tokens.length > this.length) throw new Error(`the image is full (${this.length} pixels)`);
      for (const t of tokens) {
        if (!(t >= 0 && t < this.vocab)) throw new Error(`token must be in [0, ${this.vocab}), got ${t}`);
        session.tokens.push(t);
      }
      session.pos += tokens.length;
      return this.prefixLogProbs(session.tokens);
    }

    // The papers' softmax baseline (CausalLM.generate(recurrent=False)): the whole prefix through the
    // whole model, keeping nothing from the pixel before; log P(next pixel) after the last token.
    prefixLogProbs(tokens) {
      const fresh = this.session(this.methods[0]);
      let h = null;
      for (let t = 0; t < tokens.length; t++) h = this.layersStep(this.embed(tokens[t], t), fresh.layers, fresh.method);
      return this.logProbs(h);
    }
  }

  // ---- sampling ----------------------------------------------------------------------------------

  function mulberry32(seed) {
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function argmax(x) {
    let best = 0;
    for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
    return best;
  }

  // A draw from softmax(logp / temperature) (CausalLM._choose); temperature ≤ 0 or null: greedy.
  function choose(logp, temperature, rand) {
    if (!(temperature > 0)) return argmax(logp);
    let m = -Infinity;
    for (let i = 0; i < logp.length; i++) if (logp[i] / temperature > m) m = logp[i] / temperature;
    const p = new Float64Array(logp.length);
    let total = 0;
    for (let i = 0; i < logp.length; i++) { p[i] = Math.exp(logp[i] / temperature - m); total += p[i]; }
    let u = rand() * total;
    for (let i = 0; i < p.length; i++) { u -= p[i]; if (u < 0) return i; }
    return p.length - 1;
  }

  // Continue `prompt` (≥ 1 pixel) to `total` pixels; greedy when temperature is null or ≤ 0.
  // onPixel(index, value, ms) is called for each new pixel with the milliseconds of its step.
  function generate(model, method, prompt, total, { temperature = null, seed = 0, onPixel = null } = {}) {
    if (!prompt || prompt.length < 1) throw new Error("prompt must hold at least one pixel");
    if (total > model.length || total < prompt.length) throw new Error(`total must be in [${prompt.length}, ${model.length}], got ${total}`);
    const s = model.session(method), rand = mulberry32(seed), out = prompt.slice();
    let logp = model.prefill(s, prompt);
    while (out.length < total) {
      const t0 = now();
      const next = choose(logp, temperature, rand);
      out.push(next);
      if (out.length < total) logp = model.step(s, next);
      if (onPixel) onPixel(out.length - 1, next, now() - t0);
    }
    return out;
  }

  // ---- the cost of a digit, block by block (lra_kit.web.page.block_times / block_ratio) ------------------
  // The milliseconds of each pixel in blocks of `block` consecutive pixels, summed (full blocks only). The page
  // stamps the clock once between pixels, so inside a stretch without a pause the pixels' times add up to one
  // interval of the clock: a block is timed to a tick or two (Chromium's performance.now() ticks in 0.1 ms),
  // where one pixel of the RNN (a quarter of a millisecond) is only two or three ticks long.
  function blockTimes(ms, block = 50) {
    if (!(Number.isInteger(block) && block >= 1)) throw new Error(`block must be an integer >= 1, got ${block}`);
    const out = [];
    for (let i = 0; i + block <= ms.length; i += block) {
      let sum = 0;
      for (let k = i; k < i + block; k++) sum += ms[k];
      out.push(sum);
    }
    return out;
  }

  // How a digit's cost per pixel changed from its start to its end: the fastest of its last `ends` blocks over
  // the fastest of its first `ends` (the fastest, because an interruption by the operating system only ever adds
  // time). null for a run that was stopped (its end is not the digit's end) or has fewer than 2·ends blocks.
  function blockRatio(ms, { block = 50, ends = 3, finished = true } = {}) {
    if (!(Number.isInteger(ends) && ends >= 1)) throw new Error(`ends must be an integer >= 1, got ${ends}`);
    const blocks = blockTimes(ms, block);
    if (!finished || blocks.length < 2 * ends) return null;
    const first = Math.min(...blocks.slice(0, ends)), last = Math.min(...blocks.slice(-ends));
    return first > 0 ? last / first : null;
  }

  function now() {
    return typeof performance !== "undefined" ? performance.now() : Date.now();
  }

  function loadModel(manifest, weights) {
    return new Model(manifest, typeof weights === "string" ? base64ToBuffer(weights) : weights);
  }

  // A model that `<script src="models/NAME.mjs">` registered in LRA_WEB_MODELS.
  function registeredModel(name) {
    const reg = root.LRA_WEB_MODELS || {};
    if (!reg[name]) throw new Error(`no web model ${name} is loaded (its NAME.mjs script did not run)`);
    return loadModel(reg[name].manifest, reg[name].weights);
  }

  const api = { Model, loadModel, registeredModel, generate, choose, argmax, mulberry32, layerNorm, logSoftmax, METHODS, now,
    blockTimes, blockRatio };
  root.LraWeb = api;
  if (typeof module !== "undefined" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
