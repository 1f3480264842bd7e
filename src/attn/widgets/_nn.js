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
