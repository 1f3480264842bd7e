// MaskExplorer front end (anywidget ES module). Self-contained on purpose: no imports, no network,
// so the static book renders it offline from the saved widget state. The named exports are pure
// functions that build each mask exactly as attn.masks does; tests/test_widgets_js.py runs them in node.
// Convention, as in attn.masks: true = query i may attend to key j.
// _dom.js (h, s, labelled, SVGNS, FONT) is put in front of this file when it is loaded: see _state.front_end.

export const KINDS = ["none", "causal", "padding", "causal+padding", "sliding_window", "dilated",
  "local_global", "bigbird", "prefix_lm", "cross_padding"];
export const MAX_LEN = 32;
const LABELS = {
  none: N_("none (full attention)"), causal: N_("causal"), padding: N_("padding"), "causal+padding": N_("causal + padding"),
  sliding_window: N_("sliding window"), dilated: N_("dilated window"), local_global: N_("local + global (Longformer)"),
  bigbird: N_("BigBird (window, global, random)"), prefix_lm: N_("prefix LM"), cross_padding: N_("cross-attention, source padding"),
};
const USES = {  // the parameters each kind reads
  none: [], causal: [], padding: ["lengths"], "causal+padding": ["lengths"], sliding_window: ["window"],
  dilated: ["window", "dilation"], local_global: ["window", "global"], bigbird: ["window", "global", "random", "seed"],
  prefix_lm: ["prefix"], cross_padding: ["lengths"],
};

/** mulberry32: the same 32-bit stream as attn.masks.seeded_uniform(seed), floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed | 0;
  return function () {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const clampInt = (v, lo, hi, dflt) => {
  const n = Math.trunc(Number(v));
  return Number.isFinite(n) && v !== null && v !== "" ? Math.min(hi, Math.max(lo, n)) : dflt;
};

/** The parameters actually drawn: cross-field limits applied (same rules as MaskExplorer._params). */
export function normalize(s) {
  const kind = KINDS.includes(s.kind) ? s.kind : "causal";
  const L = clampInt(s.L, 1, MAX_LEN, 8);
  const S = s.S == null || kind === "prefix_lm" ? L : clampInt(s.S, 1, MAX_LEN, L);
  const lens = (x) => (Array.isArray(x) && x.length ? x : [S]).map((n) => clampInt(n, 0, S, S));
  const lengths = lens(s.lengths), src_lengths = lens(s.src_lengths);
  const nb = (kind === "cross_padding" ? src_lengths : lengths).length;
  const g = (Array.isArray(s.global_tokens) ? s.global_tokens : []).map(Number)
    .filter((t) => Number.isInteger(t) && t >= 0 && t < Math.min(L, S));
  return {
    kind, L, S, lengths, src_lengths, batch: clampInt(s.batch, 0, nb - 1, 0),
    window: clampInt(s.window, 1, 1e9, 1), dilation: clampInt(s.dilation, 1, 1e9, 1),
    global_tokens: [...new Set(g)].sort((a, b) => a - b), num_random: clampInt(s.num_random, 0, S, 0),
    seed: clampInt(s.seed, 0, 4294967295, 0), prefix: clampInt(s.prefix, 0, L, 0),
  };
}

/** Boolean mask (L rows of S booleans) for a widget state, as attn.masks builds it. */
export function buildMask(state) {
  const p = normalize(state), { kind, L, S } = p;
  const len = kind === "cross_padding" ? p.src_lengths[p.batch] : p.lengths[p.batch];
  const rule = {
    none: () => true,
    causal: (i, j) => j <= i,
    padding: (i, j) => j < len,
    "causal+padding": (i, j) => j <= i && j < len,
    cross_padding: (i, j) => j < len,
    prefix_lm: (i, j) => j <= i || j < p.prefix,
    dilated: (i, j) => { const d = Math.abs(i - j); return d < p.window * p.dilation && d % p.dilation === 0; },
  }[kind] || ((i, j) => Math.abs(i - j) < p.window);  // sliding_window, local_global, bigbird
  const m = [];
  for (let i = 0; i < L; i++) { const row = []; for (let j = 0; j < S; j++) row.push(rule(i, j)); m.push(row); }
  if (kind === "local_global" || kind === "bigbird") {
    for (const g of p.global_tokens) { m[g].fill(true); for (let i = 0; i < L; i++) m[i][g] = true; }
  }
  if (kind === "bigbird") {  // one stream, queries in order, partial Fisher-Yates over keys 0..S-1
    const rng = mulberry32(p.seed);
    for (let i = 0; i < L; i++) {
      const keys = Array.from({ length: S }, (_, j) => j);
      for (let r = 0; r < Math.min(p.num_random, S); r++) {
        const j = r + Math.floor(rng() * (S - r));
        [keys[r], keys[j]] = [keys[j], keys[r]];
        m[i][keys[r]] = true;
      }
    }
  }
  return m;
}

/** Scores in [-2, 2): 4 u - 2, u from mulberry32(seed) read row by row (as attn.book.widgets.seeded_scores). */
export function seededScores(seed, L, S) {
  const rng = mulberry32(seed);
  return Array.from({ length: L }, () => Array.from({ length: S }, () => 4 * rng() - 2));
}

/** Masked softmax per row; a row with no allowed key gives zeros, never NaN. */
export function maskedSoftmax(mask, scores) {
  return mask.map((row, i) => {
    let mx = -Infinity;
    row.forEach((ok, j) => { if (ok) mx = Math.max(mx, scores[i][j]); });
    if (mx === -Infinity) return row.map(() => 0);
    const e = row.map((ok, j) => (ok ? Math.exp(scores[i][j] - mx) : 0));
    const z = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / z);
  });
}

/** The scores drawn: Python's matrix when its shape is (L, S), else the seeded ones. */
export function scoresFor(state) {
  const p = normalize(state), s = state.scores;
  const given = Array.isArray(s) && s.length === p.L && s.every((r) => Array.isArray(r) && r.length === p.S);
  return { given, scores: given ? s : seededScores(p.seed, p.L, p.S) };
}

// ---------------------------------------------------------------- view

const ALLOWED = "#2f6db3";
const RAMP = [[255, 255, 255], [8, 69, 148]];  // white -> deep blue
const weightRgb = (w) => { const t = Math.max(0, Math.min(1, w)); return RAMP[0].map((a, k) => Math.round(a + (RAMP[1][k] - a) * t)); };
function weightColor(w) { return `rgb(${weightRgb(w).join(",")})`; }
/** The text colour on a cell of weight w: white or black, whichever contrasts more with the cell (at
 * least 4.58:1 on any colour, over WCAG AA's 4.5). A fixed threshold left white on mid blues at 3.5:1. */
function weightTextColor(w) {
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const [r, g, b] = weightRgb(w).map(lin), lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return 1.05 / (lum + 0.05) >= (lum + 0.05) / 0.05 ? "#fff" : "#000";
}
const fmtW = (w) => (w === 0 ? "0" : w >= 0.995 ? "1" : w.toFixed(2).replace(/^0/, ""));
const STATE_KEYS = ["kind", "L", "S", "window", "dilation", "lengths", "batch", "global_tokens", "num_random",
  "seed", "prefix", "src_lengths", "scores", "kinds"];

function render({ model, el }) {
  const tr = words(model.get("lang"));
  const root = h("div", { class: "attn-w attn-mask-explorer", lang: langTag(model.get("lang")) });
  el.appendChild(root);
  const state = () => Object.fromEntries(STATE_KEYS.map((k) => [k, model.get(k)]));
  let muted = false;
  const put = (changes) => {  // write to the model (and to Python when a kernel is there)
    muted = true;
    for (const [k, v] of Object.entries(changes)) model.set(k, v);
    muted = false;
    model.save_changes();
    update();
  };

  // ----- controls: native, labelled, keyboard-operable
  const fields = {};
  const field = (key, text, ...controls) => {
    fields[key] = labelled(key, text, ...controls);
    return fields[key];
  };
  const range = (name, min, max) => h("input", { type: "range", name, min, max, step: 1 });
  const kindSel = h("select", { name: "kind" });
  const Lin = range("L", 1, MAX_LEN), Lout = h("output");
  const Sin = range("S", 1, MAX_LEN), Sout = h("output");
  const tie = h("input", { type: "checkbox", name: "S_equals_L" });
  const winIn = range("window", 1, MAX_LEN), winOut = h("output");
  const dilIn = range("dilation", 1, 8), dilOut = h("output");
  const gIn = h("input", { type: "text", name: "global_tokens", size: 8, placeholder: tr("e.g. 0, 5"), spellcheck: "false" });
  const rIn = range("num_random", 0, MAX_LEN), rOut = h("output");
  const pIn = range("prefix", 0, MAX_LEN), pOut = h("output");
  const bSel = h("select", { name: "batch" });
  const lenIn = range("length", 0, MAX_LEN), lenOut = h("output");
  // named by its label's text alone: the label also holds the button, whose text would join the name ("seed new seed")
  const seedIn = h("input", { type: "number", name: "seed", min: 0, max: 2147483647, step: 1, "aria-label": tr("seed") });
  const reseed = h("button", { type: "button", name: "new_seed" }, tr("new seed"));
  const controls = h("div", { class: "attn-controls" },
    field("kind", tr("mask"), kindSel),
    field("L", tr("L queries"), Lin, Lout),
    field("S", tr("S keys"), Sin, Sout),
    field("S_equals_L", "S = L", tie),
    field("window", tr("window"), winIn, winOut),
    field("dilation", tr("dilation"), dilIn, dilOut),
    field("global", tr("global tokens"), gIn),
    field("random", tr("random keys / query"), rIn, rOut),
    field("prefix", tr("prefix"), pIn, pOut),
    field("batch", tr("sequence"), bSel),
    field("length", tr("its length"), lenIn, lenOut),
    field("seed", tr("seed"), seedIn, reseed));
  const info = h("div", { class: "attn-info" });
  const panels = h("div", { class: "attn-panels" });
  const readout = h("div", { class: "attn-readout", "aria-live": "polite" });
  root.append(controls, info, panels, readout);

  const num = (e) => parseInt(e.target.value, 10);
  const lengthsKey = () => (normalize(state()).kind === "cross_padding" ? "src_lengths" : "lengths");
  const on = (e, ev, f) => e.addEventListener(ev, f);
  on(kindSel, "change", () => put({ kind: kindSel.value }));
  on(Lin, "input", (e) => put({ L: num(e) }));
  on(Sin, "input", (e) => put({ S: num(e) }));
  on(tie, "change", () => put({ S: tie.checked ? null : normalize(state()).S }));
  on(winIn, "input", (e) => put({ window: num(e) }));
  on(dilIn, "input", (e) => put({ dilation: num(e) }));
  on(rIn, "input", (e) => put({ num_random: num(e) }));
  on(pIn, "input", (e) => put({ prefix: num(e) }));
  on(bSel, "change", () => put({ batch: parseInt(bSel.value, 10) }));
  on(lenIn, "input", (e) => {
    const p = normalize(state()), key = lengthsKey(), lens = p[key].slice();
    lens[p.batch] = num(e);
    put({ [key]: lens });
  });
  on(gIn, "change", () => {
    const { L, S } = normalize(state());
    const g = gIn.value.split(/[\s,;]+/).filter(Boolean).map(Number).filter((t) => Number.isInteger(t) && t >= 0 && t < Math.min(L, S));
    put({ global_tokens: [...new Set(g)] });
    gIn.value = normalize(state()).global_tokens.join(", ");
  });
  on(seedIn, "change", () => { const v = parseInt(seedIn.value, 10); if (v >= 0) put({ seed: v }); });
  on(reseed, "click", () => put({ seed: (normalize(state()).seed + 1) % 2147483648 }));

  // ----- hover / keyboard cursor over the grids
  let cursor = null;
  const show = (q, k) => {
    panels.querySelectorAll(".attn-hl").forEach((c) => c.classList.remove("attn-hl"));
    panels.querySelectorAll(".attn-hl-cell").forEach((c) => c.classList.remove("attn-hl-cell"));
    cursor = q == null ? null : { q, k };
    if (!cursor) { readout.textContent = tr("Hover over a cell, or focus the mask grid and use the arrow keys."); return; }
    panels.querySelectorAll(`[data-q="${q}"]:not([data-k]), [data-k="${k}"]:not([data-q])`).forEach((c) => c.classList.add("attn-hl"));
    panels.querySelectorAll(`[data-q="${q}"][data-k="${k}"]`).forEach((c) => c.classList.add("attn-hl-cell"));
    const cell = panels.querySelector(`.attn-weights-grid [data-q="${q}"][data-k="${k}"]`);
    const ok = panels.querySelector(`.attn-mask-grid [data-q="${q}"][data-k="${k}"]`)?.dataset.allowed === "1";
    const weight = Number(cell?.dataset.weight ?? 0).toFixed(4);
    readout.textContent = ok
      ? tr("query {q} \u2192 key {k}: allowed (True), additive 0, softmax weight {w}", { q, k, w: weight })
      : tr("query {q} \u2192 key {k}: blocked (False), additive \u2212\u221e, softmax weight {w}", { q, k, w: weight });
  };
  on(panels, "pointerover", (e) => {
    const c = e.target.closest("[data-q][data-k]");
    if (c) show(+c.dataset.q, +c.dataset.k);
  });
  on(panels, "pointerleave", () => show(null));
  on(panels, "keydown", (e) => {
    if (!e.target.classList.contains("attn-mask-grid")) return;
    const { L, S } = normalize(state());
    const mv = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
    if (!mv) { if (e.key === "Escape") show(null); return; }
    e.preventDefault();
    const c = cursor || { q: 0, k: 0 };
    show(Math.min(L - 1, Math.max(0, c.q + mv[0])), Math.min(S - 1, Math.max(0, c.k + mv[1])));
  });

  // ----- the three grids
  function grid(cls, p, label, cellOf, empty) {
    const cell = Math.max(5, Math.min(24, Math.floor(168 / Math.max(p.S, p.L * 0.75))));
    const g = h("div", { class: `attn-grid ${cls}` });
    g.style.gap = cell < 8 ? "0" : "1px";
    g.style.gridTemplateColumns = `20px repeat(${p.S}, ${cell}px)`;
    g.style.gridTemplateRows = `14px repeat(${p.L}, ${cell}px)`;
    const small = cell < 14 ? " attn-small" : "", every = cell >= 14 ? 1 : cell >= 8 ? 2 : 5;
    const tick = (n) => (n % every === 0 ? String(n) : "");
    g.append(h("div", { class: "attn-corner" }));
    for (let j = 0; j < p.S; j++) g.append(h("div", { class: "attn-tick attn-tick-k" + small, "data-k": j }, tick(j)));
    for (let i = 0; i < p.L; i++) {
      g.append(h("div", { class: "attn-tick attn-tick-q" + small + (empty[i] ? " attn-empty" : ""), "data-q": i, "data-empty": empty[i] ? "1" : "0" },
        tick(i)));
      for (let j = 0; j < p.S; j++) g.append(cellOf(i, j, cell >= 18));
    }
    return h("div", { class: "attn-panel" }, h("div", { class: "attn-panel-title" }, label),
      h("div", { class: "attn-axis-k" }, tr("keys j \u2192")),
      h("div", { class: "attn-panel-body" }, h("div", { class: "attn-axis-q" }, tr("queries i \u2192")), g));
  }

  function update() {
    if (muted) return;
    const st = state(), p = normalize(st), uses = USES[p.kind];
    const kinds = (Array.isArray(st.kinds) && st.kinds.length ? st.kinds : KINDS).filter((k) => KINDS.includes(k));
    if (!kinds.includes(p.kind)) kinds.push(p.kind);
    if (kindSel.options.length !== kinds.length || [...kindSel.options].some((o, n) => o.value !== kinds[n])) {
      kindSel.replaceChildren(...kinds.map((k) => h("option", { value: k }, tr(LABELS[k]))));
    }
    const { given, scores } = scoresFor(st);
    const mask = buildMask(st), w = maskedSoftmax(mask, scores);
    const empty = mask.map((r) => !r.some(Boolean));
    const nAllowed = mask.flat().filter(Boolean).length;
    Object.assign(root.dataset, { kind: p.kind, l: p.L, s: p.S, density: (nAllowed / (p.L * p.S)).toFixed(4) });

    kindSel.value = p.kind;
    Lin.value = Lout.textContent = p.L;
    Sin.value = Sout.textContent = p.S;
    Sin.disabled = st.S == null || p.kind === "prefix_lm";
    tie.checked = Sin.disabled; tie.disabled = p.kind === "prefix_lm";
    winIn.max = Math.max(p.L, p.S); winIn.value = winOut.textContent = p.window;
    dilIn.value = dilOut.textContent = p.dilation;
    if (document.activeElement !== gIn) gIn.value = p.global_tokens.join(", ");
    rIn.max = p.S; rIn.value = rOut.textContent = p.num_random;
    pIn.max = p.L; pIn.value = pOut.textContent = p.prefix;
    const lens = p.kind === "cross_padding" ? p.src_lengths : p.lengths;
    bSel.replaceChildren(...lens.map((n, b) => h("option", { value: b }, tr("{b} (length {n})", { b, n }))));
    bSel.value = p.batch;
    lenIn.max = p.S; lenIn.value = lenOut.textContent = lens[p.batch];
    if (document.activeElement !== seedIn) seedIn.value = p.seed;
    const visible = { kind: true, L: true, S: true, S_equals_L: true, window: uses.includes("window"),
      dilation: uses.includes("dilation"), global: uses.includes("global"), random: uses.includes("random"),
      prefix: uses.includes("prefix"), batch: uses.includes("lengths"), length: uses.includes("lengths"),
      seed: uses.includes("seed") || !given };
    for (const [k, f] of Object.entries(fields)) f.hidden = !visible[k];

    const src = given ? tr("scores given from Python") : tr("seeded scores (seed {seed})", { seed: p.seed });
    info.replaceChildren(
      h("span", {}, h("b", {}, tr("density")), " ", `${(nAllowed / (p.L * p.S)).toFixed(2)}`,
        tr(" \u2014 {n} of {total} (query, key) pairs allowed", { n: nAllowed, total: p.L * p.S })),
      h("span", { class: "attn-muted" }, tr("mask shape (L, S) = ({L}, {S}) \u00b7 softmax of {src}", { L: p.L, S: p.S, src })));

    const maskPanel = grid("attn-mask-grid", p, tr("mask: True = may attend"), (i, j) =>
      h("div", { class: `attn-cell ${mask[i][j] ? "attn-on" : "attn-off"}`, "data-q": i, "data-k": j, "data-allowed": mask[i][j] ? "1" : "0" }), empty);
    const grid0 = maskPanel.querySelector(".attn-mask-grid");
    grid0.tabIndex = 0;
    grid0.setAttribute("aria-label", tr("mask grid, {L} queries by {S} keys; arrow keys move the cursor", { L: p.L, S: p.S }));
    const addPanel = grid("attn-additive-grid", p, tr("additive form: 0 / \u2212\u221e"), (i, j, text) =>
      h("div", { class: `attn-cell ${mask[i][j] ? "attn-add0" : "attn-off"}`, "data-q": i, "data-k": j, "data-value": mask[i][j] ? "0" : "-inf" },
        text ? (mask[i][j] ? "0" : "\u2212\u221e") : ""), empty);
    const wPanel = grid("attn-weights-grid", p, tr("softmax weights"), (i, j, text) => {
      const c = h("div", { class: "attn-cell attn-wcell", "data-q": i, "data-k": j, "data-weight": w[i][j].toFixed(4) },
        text && mask[i][j] ? fmtW(w[i][j]) : "");
      c.style.background = weightColor(w[i][j]);
      c.style.color = weightTextColor(w[i][j]);
      if (!mask[i][j]) c.classList.add("attn-off-w");
      return c;
    }, empty);
    const legend = h("div", { class: "attn-legend" },
      h("span", { class: "attn-swatch attn-on" }), tr("allowed"), h("span", { class: "attn-swatch attn-off" }), tr("blocked"),
      h("span", { class: "attn-gap" }), tr("weight 0"), h("span", { class: "attn-ramp" }), "1");
    legend.querySelector(".attn-ramp").style.background = `linear-gradient(to right, ${weightColor(0)}, ${weightColor(1)})`;
    const rows = empty.flatMap((e, i) => (e ? [i] : []));
    root.dataset.emptyRows = rows.join(",");
    const note = rows.length
      ? h("div", { class: "attn-note" }, rows.length > 1
        ? tr("Fully masked rows (query {rows}): no key is allowed, so the softmax has nothing to normalise; its weights are set to 0, never NaN.", { rows: rows.join(", ") })
        : tr("Fully masked row (query {rows}): no key is allowed, so the softmax has nothing to normalise; its weights are set to 0, never NaN.", { rows: rows.join(", ") }))
      : "";
    const refocus = panels.contains(document.activeElement);
    panels.replaceChildren(maskPanel, addPanel, wPanel, legend, note);
    if (refocus) grid0.focus();
    show(cursor && cursor.q < p.L && cursor.k < p.S ? cursor.q : null, cursor?.k);
  }

  const onChange = () => update();
  const events = STATE_KEYS.map((k) => `change:${k}`);
  events.forEach((ev) => model.on(ev, onChange));
  update();
  return () => events.forEach((ev) => model.off(ev, onChange));
}

export default { render };
