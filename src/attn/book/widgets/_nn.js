// The maths of attn's small models in plain JavaScript: no library, no DOM, no network. It runs
// wherever an explorer runs (Node 20, Chromium, JupyterLab, Colab). Like _dom.js it is not loaded
// on its own: attn/widgets/_state.py (front_end) puts it in front of an explorer's module that asks
// for it, because a widget's ES module travels as one string in the saved widget state. It is also
// a valid ES module by itself, so tests/test_nn_js.py runs it under node against PyTorch.
//
// Conventions are attn's: a matrix is number[][] (rows); a boolean mask is true where a query MAY
// attend; a query whose keys are all masked gets weights of zeros (never NaN); float64 throughout.

/** Throws an Error naming the argument when `ok` is false. */
function need(ok, message) {
  if (!ok) throw new Error(message);
}

function isMatrix(A) {
  return Array.isArray(A) && A.length > 0 && A.every((r) => Array.isArray(r) && r.length === A[0].length);
}

function shapeOf(A) {
  return Array.isArray(A) ? `(${A.length}, ${Array.isArray(A[0]) ? A[0].length : "?"})` : typeof A;
}

function checkMatrix(name, A) {
  need(isMatrix(A), `${name} must be a non-empty rectangular number[][] (rows of equal length), got ${shapeOf(A)}`);
}

/** A (n, m) matrix of zeros. */
export function zeros(n, m) {
  return Array.from({ length: n }, () => new Array(m).fill(0));
}

/** Aᵀ: (n, m) -> (m, n). */
export function transpose(A) {
  checkMatrix("A", A);
  const n = A.length, m = A[0].length, T = zeros(m, n);
  for (let i = 0; i < n; i++) for (let j = 0; j < m; j++) T[j][i] = A[i][j];
  return T;
}

/** A B: (n, k) x (k, m) -> (n, m). */
export function matmul(A, B) {
  checkMatrix("A", A);
  checkMatrix("B", B);
  const n = A.length, k = A[0].length, m = B[0].length;
  need(B.length === k, `matmul: A is ${shapeOf(A)} and B is ${shapeOf(B)}; B needs ${k} rows (A's columns)`);
  const C = zeros(n, m);
  for (let i = 0; i < n; i++) {
    const a = A[i], c = C[i];
    for (let p = 0; p < k; p++) {
      const x = a[p], b = B[p];
      if (x === 0) continue;
      for (let j = 0; j < m; j++) c[j] += x * b[j];
    }
  }
  return C;
}

/** softmax of one row; -Infinity entries get weight 0; a row of only -Infinity gives zeros. */
export function softmaxRow(row) {
  let m = -Infinity;
  for (const x of row) if (x > m) m = x;
  if (m === -Infinity) return row.map(() => 0);  // no key may be seen: zeros, as attn.masks.masked_softmax
  const e = row.map((x) => Math.exp(x - m));  // exp(-inf - m) = 0
  let sum = 0;
  for (const x of e) sum += x;
  return e.map((x) => x / sum);
}

/** softmax over each row (the keys); -Infinity allowed; an all -Infinity row gives zeros. */
export function softmaxRows(S) {
  checkMatrix("S", S);
  return S.map(softmaxRow);
}

/**
 * Scaled dot-product attention of one head: softmax(Q Kᵀ · scale, masked) V.
 *
 * Q (L, E), K (S, E), V (S, Ev). options.mask: boolean[][] (L, S), true = may attend (default: all
 * allowed). options.scale: default 1 / sqrt(E). options.bias: optional number[][] (L, S) added to
 * the scaled scores before masking (ALiBi).
 * Returns {raw: Q Kᵀ (L, S), scores: raw · scale (+ bias), -Infinity where masked, weights (L, S),
 * out (L, Ev)}. A query that may see no key gets weights and output of zeros.
 */
export function attention(Q, K, V, { mask = null, scale = null, bias = null } = {}) {
  checkMatrix("Q", Q);
  checkMatrix("K", K);
  checkMatrix("V", V);
  const L = Q.length, E = Q[0].length, S = K.length;
  need(K[0].length === E, `attention: Q is ${shapeOf(Q)} and K is ${shapeOf(K)}; K needs ${E} columns (Q's)`);
  need(V.length === S, `attention: K is ${shapeOf(K)} and V is ${shapeOf(V)}; V needs ${S} rows (one per key)`);
  if (mask != null) {
    need(Array.isArray(mask) && mask.length === L && mask.every((r) => Array.isArray(r) && r.length === S),
      `attention: mask must be boolean[][] of shape (${L}, ${S}) (queries, keys), got ${shapeOf(mask)}`);
  }
  if (bias != null) {
    need(isMatrix(bias) && bias.length === L && bias[0].length === S,
      `attention: bias must be number[][] of shape (${L}, ${S}), got ${shapeOf(bias)}`);
  }
  const sc = scale == null ? 1 / Math.sqrt(E) : scale;
  need(typeof sc === "number" && Number.isFinite(sc), `attention: scale must be a finite number, got ${scale}`);
  const raw = matmul(Q, transpose(K));  // (L, S)
  const scores = raw.map((row, i) => row.map((x, j) => {
    if (mask != null && !mask[i][j]) return -Infinity;
    return x * sc + (bias != null ? bias[i][j] : 0);
  }));
  const weights = softmaxRows(scores);
  const out = matmul(weights, V);  // (L, Ev); a row of zero weights gives zeros
  return { raw, scores, weights, out };
}

/**
 * One query's online softmax, a block of keys at a time (attn.efficient.online_softmax_steps): the
 * state after each block, as an array of objects with the same keys and float64 arithmetic:
 * start, m_old, m, rescale = exp(m_old - m), ell_old, a_old, block_ell, block_a, ell, a.
 * After the last block a / ell is the attention output. (m_old is -Infinity for the first block.)
 */
export function onlineSoftmaxSteps(scores, values, blockSize) {
  need(Array.isArray(scores) && Array.isArray(values) && scores.length > 0 && scores.length === values.length,
    `scores and values need the same, non-zero length; got ${Array.isArray(scores) ? scores.length : typeof scores} ` +
    `scores and ${Array.isArray(values) ? values.length : typeof values} values`);
  need(Number.isInteger(blockSize) && blockSize >= 1, `blockSize must be a positive integer, got ${blockSize}`);
  const steps = [];
  let m = -Infinity, ell = 0, a = 0;
  for (let start = 0; start < scores.length; start += blockSize) {
    const s = scores.slice(start, start + blockSize), v = values.slice(start, start + blockSize);
    let mNew = m;
    for (const x of s) if (x > mNew) mNew = x;
    const mSafe = mNew === -Infinity ? 0 : mNew;  // a block with nothing seen yet
    const corr = Math.exp(m - mSafe);  // 0 while m is -Infinity
    let blockEll = 0, blockA = 0;
    s.forEach((x, j) => {
      const p = Math.exp(x - mSafe);
      blockEll += p;
      blockA += p * v[j];
    });
    const ellNew = ell * corr + blockEll, aNew = a * corr + blockA;
    steps.push({ start, m_old: m, m: mNew, rescale: corr, ell_old: ell, a_old: a, block_ell: blockEll,
      block_a: blockA, ell: ellNew, a: aNew });
    m = mNew; ell = ellNew; a = aNew;
  }
  return steps;
}

// ----- the small models: weights, layers, a forward pass with a KV cache, greedy decoding -----
//
// A model arrives as the JSON that attn.book.widgets.model_state writes (format "attn-model/1"):
// {format, config, vocab?, tensors: {name: {dtype: "float16"|"float32", shape, data: base64}}}.
// config: vocab_size, d_model, num_heads, num_layers, d_ff (0: attention-only layers, no feed-forward
// and no norm2), max_len, is_causal, norm_first, eps, activation (null when d_ff is 0, else"relu" | "gelu" | "gelu_new" | "gelu_pytorch_tanh"), embed_scale (TokenModel: sqrt(D);
// GPT: 1), positional ("none" | "sinusoidal" | "learned" | "rope" | "alibi"), positional_base,
// final_norm, tied_head. Tensor names follow attn's modules: embed, pos, layers.{i}.self_attn.in_proj.
// {weight,bias}, .out_proj., .ff.linear1., .ff.linear2., .norm1., .norm2., norm., head.{weight,bias}.

export const MODEL_FORMAT = "attn-model/1";

function bytesOf(b64) {
  if (typeof atob === "function") {
    const bin = atob(b64), out = new Uint8Array(bin.length);
    for (let n = 0; n < bin.length; n++) out[n] = bin.charCodeAt(n);
    return out;
  }
  return new Uint8Array(Buffer.from(b64, "base64"));  // node without atob (older than 16)
}

/** An IEEE half-precision number (its 16 bits) as a float64, exactly. */
export function halfToFloat(bits) {
  const sign = bits & 0x8000 ? -1 : 1, exp = (bits >> 10) & 0x1f, frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;  // subnormal (and zero)
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** A stored tensor -> {shape, data: Float64Array} (little-endian float16 or float32 in base64). */
export function decodeTensor(enc, name = "tensor") {
  need(enc && Array.isArray(enc.shape) && typeof enc.data === "string",
    `${name} must be {dtype, shape, data (base64)}, got ${enc && typeof enc}`);
  const bytes = bytesOf(enc.data), view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = enc.shape.reduce((a, b) => a * b, 1), size = { float16: 2, float32: 4 }[enc.dtype];
  need(size, `${name} has dtype ${enc.dtype}; a stored tensor is float16 or float32`);
  need(bytes.length === n * size, `${name}: ${bytes.length} bytes do not hold ${n} ${enc.dtype} numbers (shape ${JSON.stringify(enc.shape)})`);
  const data = new Float64Array(n);
  for (let i = 0; i < n; i++) data[i] = size === 2 ? halfToFloat(view.getUint16(2 * i, true)) : view.getFloat32(4 * i, true);
  return { shape: enc.shape, data };
}

function rows(t, n, m) {  // a decoded (n, m) tensor as number[][]
  return Array.from({ length: n }, (_, i) => Array.from(t.data.subarray(i * m, (i + 1) * m)));
}

/** erf(x) to about 1e-15: its Taylor series for |x| < 3, the continued fraction of erfc beyond. */
export function erf(x) {
  const ax = Math.abs(x);
  if (ax < 3) {
    let term = x, sum = x;
    for (let n = 1; n < 100; n++) {
      term *= -x * x / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  let f = ax;  // erfc(ax) = exp(-ax²) / sqrt(pi) / (ax + (1/2) / (ax + 1 / (ax + (3/2) / (ax + ...))))
  for (let k = 60; k >= 1; k--) f = ax + (k / 2) / f;
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}

/** The feed-forward's activations, by attn.blocks.ACTIVATIONS's names. */
export const ACTIVATIONS = {
  relu: (x) => (x > 0 ? x : 0),
  gelu: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  gelu_new: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x))),
};
ACTIVATIONS.gelu_pytorch_tanh = ACTIVATIONS.gelu_new;

/** x W + b for rows x: X (N, in), WT (in, out) (the transpose of nn.Linear's weight), b (out) or null. */
export function linear(X, WT, b = null) {
  const Y = matmul(X, WT);
  if (b) for (const y of Y) for (let j = 0; j < y.length; j++) y[j] += b[j];
  return Y;
}

/** LayerNorm over each row (biased variance, as nn.LayerNorm): (x - mean) / sqrt(var + eps) * g + b. */
export function layerNorm(X, g, b, eps = 1e-5) {
  return X.map((x) => {
    const n = x.length;
    let mean = 0;
    for (const v of x) mean += v;
    mean /= n;
    let vr = 0;
    for (const v of x) vr += (v - mean) * (v - mean);
    const inv = 1 / Math.sqrt(vr / n + eps);
    return x.map((v, j) => (v - mean) * inv * (g ? g[j] : 1) + (b ? b[j] : 0));
  });
}

/**
 * Rows offset .. offset + n - 1 of attn.positional.sinusoidal_table(·, d, base): even columns sin,
 * odd columns cos of pos / base^(2i/d), computed in float64 and rounded to float32 as attn stores it.
 */
export function sinusoidalRows(n, d, { offset = 0, base = 10000 } = {}) {
  return Array.from({ length: n }, (_, r) => Array.from({ length: d }, (_, c) => {
    const angle = (offset + r) / base ** ((c - (c % 2)) / d);
    return Math.fround(c % 2 ? Math.cos(angle) : Math.sin(angle));
  }));
}

/** RoPE (attn.positional.RotaryPositionalEncoding.rotate): pairs (2i, 2i+1) of row p turn by (offset + p) · base^(-2i/E). */
export function ropeRotate(X, offset = 0, base = 10000) {
  return X.map((x, p) => {
    const E = x.length, out = new Array(E);
    for (let i = 0; i < E; i += 2) {
      const angle = (offset + p) * base ** (-i / E), c = Math.cos(angle), s = Math.sin(angle);
      out[i] = x[i] * c - x[i + 1] * s;
      out[i + 1] = x[i] * s + x[i + 1] * c;
    }
    return out;
  });
}

/** ALiBi's head slopes (attn.positional.alibi_slopes), float32 as attn stores them. */
export function alibiSlopes(H) {
  need(Number.isInteger(H) && H >= 1, `num_heads must be a positive integer, got ${H}`);
  const geometric = (n) => Array.from({ length: n }, (_, h) => 2 ** (-8 * (h + 1) / n));
  let P = 1;
  while (2 * P <= H) P *= 2;
  const slopes = geometric(P).concat(geometric(2 * P).filter((_, i) => i % 2 === 0).slice(0, H - P));
  return slopes.map(Math.fround);
}

/** A model's JSON (attn.book.widgets.model_state) -> the matrices the forward pass uses. */
export function loadModel(spec) {
  need(spec && spec.format === MODEL_FORMAT, `spec must be a model written by attn.book.widgets.model_state (format ${MODEL_FORMAT}), got format ${spec && spec.format}`);
  const c = spec.config, T = spec.tensors, D = c.d_model;
  need(c.d_ff === 0 || ACTIVATIONS[c.activation], `spec.config.activation ${c.activation} is not one of ${Object.keys(ACTIVATIONS)}`);
  need(["none", "sinusoidal", "learned", "rope", "alibi"].includes(c.positional), `spec.config.positional ${c.positional} is not supported`);
  const get = (name) => (T[name] ? decodeTensor(T[name], name) : null);
  const mat = (name) => { const t = get(name); return t && rows(t, t.shape[0], t.shape[1]); };
  const matT = (name) => { const t = get(name); return t && transpose(rows(t, t.shape[0], t.shape[1])); };
  const vec = (name) => { const t = get(name); return t && Array.from(t.data); };
  const embed = mat("embed");
  need(embed && embed.length === c.vocab_size && embed[0].length === D, `spec.tensors.embed must be (${c.vocab_size}, ${D})`);
  const layers = Array.from({ length: c.num_layers }, (_, i) => {
    const p = `layers.${i}.`;
    return {
      inProjT: matT(p + "self_attn.in_proj.weight"), inProjB: vec(p + "self_attn.in_proj.bias"),
      outProjT: matT(p + "self_attn.out_proj.weight"), outProjB: vec(p + "self_attn.out_proj.bias"),
      ff1T: matT(p + "ff.linear1.weight"), ff1B: vec(p + "ff.linear1.bias"),
      ff2T: matT(p + "ff.linear2.weight"), ff2B: vec(p + "ff.linear2.bias"),
      norm1: [vec(p + "norm1.weight"), vec(p + "norm1.bias")], norm2: [vec(p + "norm2.weight"), vec(p + "norm2.bias")],
    };
  });
  const headT = c.tied_head ? transpose(embed) : matT("head.weight");
  const slopes = c.positional === "alibi" ? alibiSlopes(c.num_heads) : null;
  return { config: c, vocab: spec.vocab || null, embed, pos: c.positional === "learned" ? mat("pos") : null, layers,
    norm: c.final_norm ? [vec("norm.weight"), vec("norm.bias")] : null, headT, headB: vec("head.bias"), slopes };
}

/** An empty KV cache: per layer, per head, the rotated keys and the values of every position so far. */
export function newCache(model) {
  const { num_layers, num_heads } = model.config;
  return { length: 0, layers: Array.from({ length: num_layers }, () => ({
    k: Array.from({ length: num_heads }, () => []), v: Array.from({ length: num_heads }, () => []) })) };
}

/**
 * Forget the cached positions from `length` on (in place; returns the cache). In a causal model the
 * positions before an edit do not change, so an explorer keeps them and runs forward on the rest only.
 */
export function truncateCache(cache, length) {
  need(Number.isInteger(length) && length >= 0 && length <= cache.length,
    `length must be an integer from 0 to the cached ${cache.length} positions, got ${length}`);
  for (const store of cache.layers) for (const side of [store.k, store.v]) for (const head of side) head.length = length;
  cache.length = length;
  return cache;
}

function checkTokens(model, tokens, offset, name) {
  const { vocab_size: V, max_len } = model.config;
  need(Array.isArray(tokens) && tokens.length > 0, `${name} must be a non-empty array of token ids, got ${Array.isArray(tokens) ? "[]" : typeof tokens}`);
  tokens.forEach((t, i) => need(Number.isInteger(t) && t >= 0 && t < V,
    `${name}[${i}] = ${JSON.stringify(t)} is not a token id of this model: ids are integers in [0, ${V})`));
  need(offset + tokens.length <= max_len, `${name} has ${tokens.length} tokens` + (offset ? ` after ${offset} cached` : "")
    + `: positions up to ${offset + tokens.length - 1}, but the model's context is max_len = ${max_len} positions`);
}

/**
 * The model on one sequence: tokens (L ids) -> {logits (L, V), attention: [layer][head] (L, S)}.
 *
 * options.cache (newCache): the tokens continue the cached ones (S = cached + L; positions start at
 * the cached length); their keys and values are appended to it. options.keyMask: boolean[S], true =
 * a real token (false = padding), as attn's key_mask. options.mask: boolean[][] (L, S) replacing the
 * causal mask, as TokenModel's mask. options.headMask: number[layers][heads], each head's output
 * multiplied by its factor before W_O (0 ablates it), as attn's MultiHeadAttention.head_mask; the
 * returned weights are the heads' own. Causal attention is aligned bottom-right, as in attn: query i
 * sees keys j <= i + S - L. A query that may see no key gets zero weights and a zero output.
 * Throws an Error naming tokens for an unknown id or a sequence longer than max_len.
 */
export function forward(model, tokens, { cache = null, keyMask = null, mask = null, headMask = null } = {}) {
  const c = model.config, D = c.d_model, H = c.num_heads, E = D / H;
  if (headMask != null) need(Array.isArray(headMask) && headMask.length === c.num_layers
    && headMask.every((r) => Array.isArray(r) && r.length === H),
  `headMask must be number[${c.num_layers}][${H}] (one factor per layer and head), got ${shapeOf(headMask)}`);
  const offset = cache ? cache.length : 0;
  checkTokens(model, tokens, offset, "tokens");
  const L = tokens.length, S = offset + L;
  if (keyMask != null) need(Array.isArray(keyMask) && keyMask.length === S,
    `keyMask must be boolean[${S}] (one per key: ${offset} cached + ${L} new), got ${Array.isArray(keyMask) ? keyMask.length : typeof keyMask} entries`);
  if (mask != null) need(Array.isArray(mask) && mask.length === L && mask.every((r) => Array.isArray(r) && r.length === S),
    `mask must be boolean[][] of shape (${L}, ${S}), got ${shapeOf(mask)}`);
  let x = tokens.map((t) => model.embed[t].map((v) => v * c.embed_scale));  // (L, D)
  if (c.positional === "sinusoidal") {
    const pe = sinusoidalRows(L, D, { offset, base: c.positional_base });
    x = x.map((r, i) => r.map((v, j) => v + pe[i][j]));
  } else if (c.positional === "learned") {
    x = x.map((r, i) => r.map((v, j) => v + model.pos[offset + i][j]));
  }
  // One (L, S) mask for every head and layer: the given mask or the causal one, and the padding.
  const allowed = Array.from({ length: L }, (_, i) => Array.from({ length: S }, (_, j) =>
    (mask != null ? !!mask[i][j] : !c.is_causal || j <= i + S - L) && (keyMask == null || !!keyMask[j])));
  const perLayer = [];  // [layer][head] (L, S)
  model.layers.forEach((layer, li) => {
    const attend = (h) => {
      const qkv = linear(h, layer.inProjT, layer.inProjB);  // (L, 3D): W_q; W_k; W_v
      const heads = [], outs = [];
      for (let hd = 0; hd < H; hd++) {
        let q = qkv.map((r) => r.slice(hd * E, (hd + 1) * E));  // (L, E)
        let k = qkv.map((r) => r.slice(D + hd * E, D + (hd + 1) * E));
        const v = qkv.map((r) => r.slice(2 * D + hd * E, 2 * D + (hd + 1) * E));
        if (c.positional === "rope") {
          q = ropeRotate(q, offset, c.positional_base);
          k = ropeRotate(k, offset, c.positional_base);
        }
        let K = k, Vv = v;
        if (cache) {
          const store = cache.layers[li];
          store.k[hd].push(...k);
          store.v[hd].push(...v);
          K = store.k[hd];
          Vv = store.v[hd];
        }
        const bias = model.slopes ? Array.from({ length: L }, (_, i) => Array.from({ length: S }, (_, j) =>
          -model.slopes[hd] * Math.abs(j - (S - L + i)))) : null;  // -m_h |i - j|, queries at S - L + i
        const r = attention(q, K, Vv, { mask: allowed, bias });
        heads.push(r.weights);
        const keep = headMask ? headMask[li][hd] : 1;  // 0 silences the head before W_O (attn's head_mask)
        outs.push(keep === 1 ? r.out : r.out.map((row) => row.map((v) => v * keep)));
      }
      perLayer.push(heads);
      const z = outs[0].map((_, i) => outs.flatMap((o) => o[i]));  // (L, D): heads concatenated
      return linear(z, layer.outProjT, layer.outProjB);
    };
    const ff = (h) => {
      const act = ACTIVATIONS[c.activation], hid = linear(h, layer.ff1T, layer.ff1B);
      return linear(hid.map((r) => r.map(act)), layer.ff2T, layer.ff2B);
    };
    const add = (a, b) => a.map((r, i) => r.map((v, j) => v + b[i][j]));
    const ln = (h, [g, b]) => layerNorm(h, g, b, c.eps);
    if (c.norm_first) {
      x = add(x, attend(ln(x, layer.norm1)));
      if (c.d_ff > 0) x = add(x, ff(ln(x, layer.norm2)));  // d_ff 0: an attention-only layer
    } else {
      x = ln(add(x, attend(x)), layer.norm1);
      if (c.d_ff > 0) x = ln(add(x, ff(x)), layer.norm2);
    }
  });
  if (cache) cache.length = S;
  if (model.norm) x = layerNorm(x, model.norm[0], model.norm[1], c.eps);
  return { logits: linear(x, model.headT, model.headB), attention: perLayer };
}

/** Index of the largest entry (the first one on ties, as torch.argmax). */
export function argmax(row) {
  let best = 0;
  for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
  return best;
}

/**
 * Greedy decoding with a KV cache (attn's generate with temperature None): the prompt goes through
 * the model once, then one new token per step. Returns {tokens: prompt + new ids, steps}: per step
 * {token, logits (V), attention [layer][head] (L_step, S), cacheLength}. options.onStep(step) is
 * called after each step (an explorer draws the cache filling). options.useCache = false recomputes
 * the whole prefix each step (the same tokens, more work).
 */
export function generate(model, prompt, maxNewTokens, { onStep = null, useCache = true } = {}) {
  need(Number.isInteger(maxNewTokens) && maxNewTokens >= 0, `maxNewTokens must be a non-negative integer, got ${maxNewTokens}`);
  checkTokens(model, prompt, 0, "prompt");
  need(prompt.length + maxNewTokens <= model.config.max_len, `prompt length ${prompt.length} + maxNewTokens ${maxNewTokens} `
    + `exceeds the model's context, max_len = ${model.config.max_len}`);
  const cache = useCache ? newCache(model) : null, tokens = prompt.slice(), steps = [];
  for (let t = 0; t < maxNewTokens; t++) {
    const input = !useCache ? tokens : t === 0 ? prompt : tokens.slice(-1);
    const r = forward(model, input, { cache });
    const logits = r.logits[r.logits.length - 1], token = argmax(logits);
    tokens.push(token);
    const step = { token, logits, attention: r.attention, cacheLength: cache ? cache.length : 0 };
    steps.push(step);
    if (onStep) onStep(step, cache);
  }
  return { tokens, steps };
}

/** Text -> ids with the model's character vocabulary (spec.vocab); an Error names each unknown character. */
export function encodeText(model, text) {
  need(Array.isArray(model.vocab), "this model has no character vocabulary (spec.vocab)");
  const stoi = new Map(model.vocab.map((ch, i) => [ch, i]));
  const unknown = [...new Set([...text].filter((ch) => !stoi.has(ch)))];
  need(unknown.length === 0, `text has characters the model does not know: ${unknown.map((ch) => JSON.stringify(ch)).join(", ")}`);
  return [...text].map((ch) => stoi.get(ch));
}

/** For tests under node: load the model from its JSON and run forward (or generate) in one call. */
export function runModel(spec, tokens, options = {}) {
  return forward(loadModel(spec), tokens, options);
}

/** For tests: full pass vs cached pass, token by token: {full, cached: [per-step forward results]}. */
export function runCached(spec, tokens, chunks) {
  const model = loadModel(spec), cache = newCache(model), cached = [];
  let at = 0;
  for (const n of chunks) {
    cached.push(forward(model, tokens.slice(at, at + n), { cache }));
    at += n;
  }
  return { full: forward(model, tokens), cached };
}

/** For tests: a cached pass over `tokens`, cut back to `keep` positions, then `rest` (an edit after `keep`). */
export function runEdited(spec, tokens, keep, rest) {
  const model = loadModel(spec), cache = newCache(model);
  forward(model, tokens, { cache });
  return forward(model, rest, { cache: truncateCache(cache, keep) });
}

export function runGenerate(spec, prompt, maxNewTokens, options = {}) {
  const r = generate(loadModel(spec), prompt, maxNewTokens, options);
  return { tokens: r.tokens, cacheLengths: r.steps.map((s) => s.cacheLength) };
}
