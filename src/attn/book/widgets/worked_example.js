// WorkedExampleExplorer front end (anywidget ES module): the chapters' Q/K/V example, editable.
// _dom.js (h, labelled, parseNumber, fixed) and _nn.js (matmul, attention) are put in front
// of this file when it is loaded: see _state.front_end. Self-contained, no network.

const EDITABLE = ["X", "W_Q", "W_K", "W_V"];

/** The example from its matrices: Q, K, V, the scaled scores (before the mask), the weights, the outputs. */
export function workedExample({ X, W_Q, W_K, W_V, is_causal = false }) {
  const Q = matmul(X, W_Q), K = matmul(X, W_K), V = matmul(X, W_V);  // (L, E), (L, E), (L, Ev)
  const scale = 1 / Math.sqrt(K[0].length);
  const mask = is_causal ? X.map((_, i) => X.map((_, j) => j <= i)) : undefined;  // true = may attend
  const { raw, weights, out } = attention(Q, K, V, { mask, scale });  // raw = Q Kᵀ, (L, L)
  const scores = raw.map((row) => row.map((v) => v * scale));  // before the mask, to show every entry
  return { Q, K, V, scores, weights, out };
}

function render({ model, el }) {
  const tr = words(model.get("lang"));
  const root = h("div", { class: "attn-w attn-live attn-worked", lang: langTag(model.get("lang")) });
  el.append(root);
  const causalBox = h("input", { type: "checkbox", name: "is_causal" });
  const reset = h("button", { type: "button", name: "reset", title: tr("back to the numbers it started with") }, tr("reset"));
  const message = h("div", { class: "attn-note", role: "alert", hidden: true });
  root.append(h("div", { class: "attn-controls" }, labelled("is_causal", tr("causal mask"), causalBox), reset), message);
  const inputsX = h("div", { class: "attn-panels" });
  const inputsW = h("div", { class: "attn-panels" });
  const details = h("details", {}, h("summary", {}, tr("the projections W_Q, W_K, W_V (editable too)")), inputsW);
  const results = h("div", { class: "attn-panels attn-results-live", "aria-live": "polite" });
  root.append(inputsX, details, results);
  const initial = Object.fromEntries(EDITABLE.map((k) => [k, model.get(k)]));  // for "reset"
  const initialCausal = model.get("is_causal");
  const put = (changes) => { for (const [k, v] of Object.entries(changes)) model.set(k, v); model.save_changes(); };

  let fields = null;  // name -> rows of <input>, rebuilt only when a shape changes
  const labels = (name) => model.get(name).map((_, r) => (name === "X" ? model.get("tokens")[r] ?? String(r) : tr("row {r}", { r })));

  function matrixPanel(title, rowLabels, cols, cell, attrs = {}) {
    const head = h("tr", {}, h("th", {}), ...cols.map((c) => h("th", { scope: "col" }, c)));
    const body = rowLabels.map((r, i) => h("tr", {}, h("th", { scope: "row" }, r), ...cols.map((_, j) => h("td", {}, cell(i, j)))));
    return h("div", { class: "attn-panel", ...attrs }, h("div", { class: "attn-panel-title" }, title),
      h("table", { class: "attn-matrix" }, h("thead", {}, head), h("tbody", {}, ...body)));
  }

  function buildInputs() {
    fields = {};
    const panels = EDITABLE.map((name) => {
      const M = model.get(name), rows = labels(name), cols = M[0].map((_, j) => String(j));
      fields[name] = M.map(() => []);
      return matrixPanel(name === "X" ? tr("X: one row per token (edit me)") : name, rows, cols, (i, j) => {
        const input = h("input", { type: "text", inputmode: "decimal", name, size: 5, "data-i": i, "data-j": j,
          "aria-label": tr("{name} row {row}, column {j}", { name, row: rows[i], j }), value: String(M[i][j]) });
        input.addEventListener("input", edited);
        fields[name][i][j] = input;
        return input;
      }, { "data-matrix": name });
    });
    inputsX.replaceChildren(panels[0]);
    inputsW.replaceChildren(...panels.slice(1));
  }

  const shapeKey = () => EDITABLE.map((k) => `${model.get(k).length}x${model.get(k)[0].length}`).join(",") + model.get("tokens").join("\u0000");
  let builtFor = null;

  /** Read every field; mark the bad ones; returns the matrices, or null with the message shown. */
  function readFields() {
    const problems = [], mats = {};
    for (const name of EDITABLE) {
      mats[name] = fields[name].map((row) => row.map((input) => {
        const r = parseNumber(input.value, tr);
        input.setAttribute("aria-invalid", r.error ? "true" : "false");
        if (r.error) problems.push(tr("{field}: \"{text}\" {error}", { field: input.getAttribute("aria-label"), text: input.value, error: r.error }));
        return r.value;
      }));
    }
    if (problems.length) {
      message.textContent = problems.length > 1
        ? tr("Not updated: {problem} (and {more} more). The numbers below are for the last valid input.", { problem: problems[0], more: problems.length - 1 })
        : tr("Not updated: {problem}. The numbers below are for the last valid input.", { problem: problems[0] });
      message.hidden = false;
      root.dataset.state = "invalid";
      results.classList.add("attn-stale");
      return null;
    }
    message.hidden = true;
    root.dataset.state = "ok";
    results.classList.remove("attn-stale");
    return mats;
  }

  function edited() {
    const mats = readFields();
    if (!mats) return;
    draw({ ...mats, is_causal: causalBox.checked });  // at once, before the model round trip
    put(mats);
  }

  function draw(state) {
    let r;
    try {
      r = workedExample(state);
    } catch (err) {  // matrices set from Python that do not chain: say so, keep the last numbers
      message.textContent = tr("Cannot compute: {error}.", { error: err.message });
      message.hidden = false;
      root.dataset.state = "invalid";
      results.classList.add("attn-stale");
      return;
    }
    const L = state.X.length, toks = state.X.map((_, i) => (model.get("tokens") || [])[i] ?? String(i));
    const num = (name, M, masked) => (i, j) => {
      const v = M[i][j], off = masked && masked(i, j);
      return h("span", { class: off ? "attn-masked" : null, "data-name": name, "data-i": i, "data-j": j,
        "data-value": String(v), title: off ? tr("masked: this key is after the query") : null }, off ? "\u2013" : fixed(v));
    };
    const off = state.is_causal ? (i, j) => j > i : null;
    const colsOf = (M) => M[0].map((_, j) => String(j));
    results.replaceChildren(
      matrixPanel("Q = X W_Q", toks, colsOf(r.Q), num("Q", r.Q)),
      matrixPanel("K = X W_K", toks, colsOf(r.K), num("K", r.K)),
      matrixPanel("V = X W_V", toks, colsOf(r.V), num("V", r.V)),
      matrixPanel(tr("scores Q K\u1d40 / \u221a{d}", { d: r.K[0].length }), toks, toks, num("scores", r.scores, off)),
      matrixPanel(tr("softmax rows: weights"), toks, toks, num("weights", r.weights)),
      matrixPanel(tr("output = weights \u00b7 V"), toks, colsOf(r.out), num("out", r.out)));
    Object.assign(root.dataset, { causal: state.is_causal ? "1" : "0", l: L });
    root.dataset.drawn = String((Number(root.dataset.drawn) || 0) + 1);  // tests wait on it
  }

  function fromModel() {
    if (builtFor !== shapeKey()) { buildInputs(); builtFor = shapeKey(); }
    for (const name of EDITABLE) {  // a change from Python: show it, except in the field being typed in
      model.get(name).forEach((row, i) => row.forEach((v, j) => {
        const input = fields[name][i][j], r = parseNumber(input.value);
        if (input !== input.ownerDocument.activeElement && r.value !== v) input.value = String(v);
      }));
    }
    causalBox.checked = !!model.get("is_causal");
    const mats = readFields();
    if (mats) draw({ ...Object.fromEntries(EDITABLE.map((k) => [k, model.get(k)])), is_causal: causalBox.checked });
  }

  causalBox.addEventListener("change", () => {
    const mats = readFields();
    if (mats) draw({ ...mats, is_causal: causalBox.checked });
    put({ is_causal: causalBox.checked });
  });
  reset.addEventListener("click", () => {
    for (const name of EDITABLE) fields[name].forEach((row, i) => row.forEach((input, j) => { input.value = String(initial[name][i][j]); }));
    causalBox.checked = initialCausal;
    put({ ...initial, is_causal: initialCausal });
    fromModel();
  });

  const events = [...EDITABLE, "tokens", "is_causal"].map((k) => `change:${k}`);
  events.forEach((ev) => model.on(ev, fromModel));
  fromModel();
  return () => events.forEach((ev) => model.off(ev, fromModel));
}

export default { render };
