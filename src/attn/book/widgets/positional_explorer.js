// PositionalEncodingExplorer front end (anywidget ES module). Self-contained (no imports, no network):
// everything is computed here from the table in the synced state, so the static book answers input.
// _dom.js (h, s, labelled, SVGNS, FONT) is put in front of this file when it is loaded: see _state.front_end.

const ACCENT = "#c0392b";

/** PE[p] . PE[p + k] for every offset k with 0 <= p + k < P. */
export function dotProfile(table, p) {
  const offsets = [], dots = [];
  for (let q = 0; q < table.length; q++) {
    let dot = 0;
    for (let c = 0; c < table[p].length; c++) dot += table[p][c] * table[q][c];
    offsets.push(q - p); dots.push(dot);
  }
  return { offsets, dots };
}

/** The point (PE[p, 2i + 1], PE[p, 2i]): x the cosine column, y the sine column. */
export function pairPoint(table, p, i) {
  return [table[p][2 * i + 1], table[p][2 * i]];
}

/** Blue (-1) - white (0) - red (+1). */
export function divergingColor(v) {
  const t = Math.max(-1, Math.min(1, v)), end = t < 0 ? [33, 102, 172] : [178, 24, 43], w = [247, 247, 247];
  return `rgb(${w.map((a, k) => Math.round(a + (end[k] - a) * Math.abs(t))).join(",")})`;
}

const svgRoot = (cls, w, ht, label) => s("svg", { class: cls, width: w, height: ht, viewBox: `0 0 ${w} ${ht}`,
  "font-family": FONT, "font-size": 11, role: "img", "aria-label": label });
const niceStep = (span, n) => { const r = span / n, m = 10 ** Math.floor(Math.log10(r)); return [1, 2, 5, 10].map((f) => f * m).find((x) => x >= r); };
const fmt = (v) => String(Number(v.toPrecision(3)));

function render({ model, el }) {
  const tr = words(model.get("lang"));
  const root = h("div", { class: "attn-w attn-pe-explorer", lang: langTag(model.get("lang")) });
  el.append(root);
  const encSel = h("select", { name: "encoding" });
  const posIn = h("input", { type: "range", name: "position", min: 0, step: 1 }), posOut = h("output");
  const pairIn = h("input", { type: "range", name: "pair", min: 0, step: 1 }), pairOut = h("output");
  // Its text says what a press does (play, then pause): no aria-pressed as well, or a screen reader would
  // say "pause, toggle button, pressed" (a toggle button keeps one name; WAI-ARIA APG, button pattern).
  const play = h("button", { type: "button", name: "play" }, tr("\u25b6 play"));
  root.append(h("div", { class: "attn-controls" },
    labelled("encoding", tr("encoding"), encSel),
    labelled("position", tr("position p"), posIn, posOut),
    labelled("pair", tr("pair i"), pairIn, pairOut),
    play));
  const heat = h("div", { class: "attn-figure" }), side = h("div", {});
  const readout = h("div", { class: "attn-readout", "aria-live": "polite" });
  root.append(h("div", { class: "attn-row" }, heat, side), readout);

  const put = (k, v) => { model.set(k, v); model.save_changes(); };
  encSel.addEventListener("change", () => put("encoding", encSel.value));
  posIn.addEventListener("input", () => put("position", parseInt(posIn.value, 10)));
  pairIn.addEventListener("input", () => put("pair", parseInt(pairIn.value, 10)));
  let timer = null;
  const stop = () => { clearInterval(timer); timer = null; play.textContent = tr("\u25b6 play"); };
  play.addEventListener("click", () => {
    if (timer) return stop();
    play.textContent = tr("\u275a\u275a pause");
    timer = setInterval(() => { const d = data(); put("position", (d.p + 1) % d.P); }, 160);
  });

  function data() {
    const encs = model.get("encodings") || {}, keys = Object.keys(encs), given = model.get("names") || [];
    const names = [...given.filter((n) => keys.includes(n)), ...keys.filter((n) => !given.includes(n))];  // order given
    const name = names.includes(model.get("encoding")) ? model.get("encoding") : names[0];
    const T = encs[name] || [[0]], P = T.length, D = T[0].length, pairs = Math.floor(D / 2);
    const p = Math.min(P - 1, Math.max(0, model.get("position") | 0));
    const i = Math.min(Math.max(0, pairs - 1), Math.max(0, model.get("pair") | 0));
    return { names, name, T, P, D, pairs, p, i };
  }

  // ----- heatmap, rebuilt only when the table changes
  let built = null;
  function buildHeat(d) {
    const left = 42, top = 34, cw = Math.min(24, 270 / d.D), chh = Math.min(12, 240 / d.P);  // any table fits ~330 px
    const W = Math.max(210, left + d.D * cw + 12), Ht = top + d.P * chh + 46;
    let vmax = 0;
    for (const r of d.T) for (const v of r) vmax = Math.max(vmax, Math.abs(v));
    vmax = vmax || 1;
    const svg = svgRoot("attn-svg attn-pe-heatmap", W, Ht, tr("positional encoding table {name}, {P} positions by {D} dimensions", { name: d.name, P: d.P, D: d.D }));
    svg.append(s("rect", { width: W, height: Ht, fill: "#fff" }),
      s("text", { x: left, y: 13, "font-size": 12, "font-weight": 600, fill: "#333" }, tr("PE[position, dimension]")),
      s("text", { x: left + (d.D * cw) / 2, y: 27, "text-anchor": "middle", fill: "#666" }, tr("dimension \u2192")),
      s("text", { transform: `translate(11, ${top + (d.P * chh) / 2}) rotate(-90)`, "text-anchor": "middle", fill: "#666" }, tr("position \u2192")));
    const cells = s("g", { "shape-rendering": "crispEdges" });
    d.T.forEach((row, p) => row.forEach((v, c) => cells.append(s("rect", { class: "attn-pe-cell", x: left + c * cw, y: top + p * chh,
      width: cw, height: chh, fill: divergingColor(v / vmax), "data-pos": p, "data-dim": c }))));
    svg.append(cells);
    const pStep = niceStep(d.P, 6), dStep = niceStep(d.D, 6);
    for (let p = 0; p < d.P; p += pStep) svg.append(s("text", { x: left - 4, y: top + p * chh + chh / 2 + 4, "text-anchor": "end", fill: "#666" }, String(p)));
    for (let c = 0; c < d.D; c += dStep) svg.append(s("text", { x: left + c * cw + cw / 2, y: top + d.P * chh + 13, "text-anchor": "middle", fill: "#666" }, String(c)));
    const ly = top + d.P * chh + 24;  // colour legend
    for (let n = 0; n < 40; n++) svg.append(s("rect", { x: left + 26 + n * 3, y: ly, width: 3, height: 9, fill: divergingColor(n / 19.5 - 1) }));
    svg.append(s("text", { x: left + 22, y: ly + 8, "text-anchor": "end", fill: "#666" }, fmt(-vmax)),
      s("text", { x: left + 150, y: ly + 8, fill: "#666" }, fmt(vmax)));
    const row = s("rect", { class: "attn-pe-row", x: left - 1, width: d.D * cw + 2, height: chh + 2, fill: "none", stroke: "#111", "stroke-width": 1.5 });
    const cols = s("rect", { class: "attn-pe-cols", y: top - 1, width: 2 * cw + 2, height: d.P * chh + 2, fill: "none", stroke: ACCENT, "stroke-width": 1.5 });
    svg.append(row, cols);
    heat.replaceChildren(svg);
    const gram = d.T.map((_, p) => dotProfile(d.T, p).dots);  // fixed y-range for the similarity plot
    return { key: d.T, row, cols, left, top, cw, chh, lo: Math.min(0, ...gram.flat()), hi: Math.max(...gram.flat()) };
  }

  function similarity(d) {
    const W = 330, Ht = 176, l = 44, r = 12, t = 26, b = 30, pw = W - l - r, ph = Ht - t - b;
    const { offsets, dots } = dotProfile(d.T, d.p), K = Math.max(1, d.P - 1);
    const x = (k) => l + ((k + K) / (2 * K)) * pw, y = (v) => t + ph - ((v - built.lo) / (built.hi - built.lo || 1)) * ph;
    const svg = svgRoot("attn-svg attn-pe-similarity", W, Ht, tr("dot product of position {p} with position {p} plus k", { p: d.p }));
    svg.append(s("rect", { width: W, height: Ht, fill: "#fff" }),
      s("text", { x: l, y: 14, "font-size": 12, "font-weight": 600, fill: "#333" }, `PE[${d.p}] \u00b7 PE[${d.p} + k]`),
      s("line", { x1: l, x2: l + pw, y1: y(0), y2: y(0), stroke: "#ccc" }),
      s("line", { x1: x(0), x2: x(0), y1: t, y2: t + ph, stroke: "#ccc", "stroke-dasharray": "3 3" }),
      s("rect", { x: l, y: t, width: pw, height: ph, fill: "none", stroke: "#bbb" }));
    const step = niceStep(2 * K, 6);
    for (let k = -Math.floor(K / step) * step; k <= K; k += step) svg.append(s("text", { x: x(k), y: t + ph + 13, "text-anchor": "middle", fill: "#666" }, String(k)));
    svg.append(s("text", { x: l + pw / 2, y: Ht - 3, "text-anchor": "middle", fill: "#666" }, tr("offset k")));
    const ticks = [];  // 0 and the extremes, leaving out any that would overlap one already placed
    for (const v of [0, built.hi, built.lo]) if (ticks.every((u) => Math.abs(y(u) - y(v)) >= 12)) ticks.push(v);
    for (const v of ticks) svg.append(s("text", { class: "attn-pe-ytick", x: l - 4, y: y(v) + 4, "text-anchor": "end", fill: "#666" }, fmt(v)));
    svg.append(s("polyline", { class: "attn-pe-curve", points: offsets.map((k, n) => `${x(k).toFixed(1)},${y(dots[n]).toFixed(1)}`).join(" "),
      fill: "none", stroke: "#2f6db3", "stroke-width": 1.6, "data-offsets": offsets.join(","), "data-dots": dots.map((v) => v.toFixed(4)).join(",") }));
    svg.append(s("circle", { cx: x(0), cy: y(dots[d.p]), r: 3.5, fill: "#2f6db3" }));
    return svg;
  }

  function circle(d) {
    const W = 330, Ht = 214, cx = 165, cy = 116;
    const svg = svgRoot("attn-svg attn-pe-circle", W, Ht, tr("dimensions {a} and {b} at position {p}", { a: 2 * d.i, b: 2 * d.i + 1, p: d.p }));
    svg.append(s("rect", { width: W, height: Ht, fill: "#fff" }));
    if (!d.pairs) {
      svg.append(s("text", { x: 12, y: 20, fill: "#666" }, tr("The table needs at least 2 dimensions for a pair.")));
      return svg;
    }
    const pts = d.T.map((_, p) => pairPoint(d.T, p, d.i));
    const R = 72 / Math.max(1, ...pts.map(([a, b]) => Math.hypot(a, b)));
    const X = (v) => cx + v * R, Y = (v) => cy - v * R;
    svg.append(s("text", { x: 12, y: 14, "font-size": 12, "font-weight": 600, fill: "#333" }, tr("pair i = {i}: dimensions {a} and {b}", { i: d.i, a: 2 * d.i, b: 2 * d.i + 1 })),
      s("line", { x1: cx - 88, x2: cx + 88, y1: cy, y2: cy, stroke: "#ddd" }), s("line", { x1: cx, x2: cx, y1: cy - 84, y2: cy + 84, stroke: "#ddd" }),
      s("circle", { cx, cy, r: R, fill: "none", stroke: "#bbb", "stroke-dasharray": "3 3" }),
      s("text", { x: cx + 90, y: cy + 4, fill: "#666" }, tr("dim {n}", { n: 2 * d.i + 1 })),
      s("text", { x: cx + 5, y: cy - 78, fill: "#666" }, tr("dim {n}", { n: 2 * d.i })));
    const trail = s("g", {});
    pts.forEach(([a, b], p) => trail.append(s("circle", { cx: X(a), cy: Y(b), r: 2, fill: p <= d.p ? "#8fb3dc" : "#e4e4e4" })));
    const [a, b] = pts[d.p];
    svg.append(trail, s("line", { x1: cx, y1: cy, x2: X(a), y2: Y(b), stroke: ACCENT, "stroke-width": 1.5 }),
      s("circle", { class: "attn-pe-point", cx: X(a), cy: Y(b), r: 5, fill: ACCENT, "data-x": a.toFixed(4), "data-y": b.toFixed(4) }),
      s("text", { x: 12, y: Ht - 8, fill: "#555" }, tr("p = {p}: ({a}, {b}), angle {deg}\u00b0", { p: d.p, a: a.toFixed(3), b: b.toFixed(3), deg: ((Math.atan2(b, a) * 180) / Math.PI).toFixed(1) })));
    return svg;
  }

  function update() {
    const d = data();
    if (encSel.options.length !== d.names.length || [...encSel.options].some((o, n) => o.value !== d.names[n])) {
      encSel.replaceChildren(...d.names.map((n) => h("option", { value: n }, n)));
    }
    encSel.value = d.name; encSel.disabled = d.names.length < 2;
    posIn.max = d.P - 1; posIn.value = posOut.textContent = d.p;
    pairIn.max = Math.max(0, d.pairs - 1); pairIn.value = d.i; pairIn.disabled = d.pairs < 2;
    pairOut.textContent = d.pairs ? tr("{i} (dims {a}, {b})", { i: d.i, a: 2 * d.i, b: 2 * d.i + 1 }) : "\u2013";
    Object.assign(root.dataset, { encoding: d.name, position: d.p, pair: d.i, positions: d.P, dModel: d.D });
    if (!built || built.key !== d.T) built = buildHeat(d);
    built.row.setAttribute("y", built.top + d.p * built.chh - 1);
    built.cols.setAttribute("x", built.left + 2 * d.i * built.cw - 1);
    built.cols.setAttribute("visibility", d.pairs ? "visible" : "hidden");
    side.replaceChildren(similarity(d), circle(d));
    readout.textContent = tr("Row {p} of the table (black outline) is the encoding of position {p}; ", { p: d.p }) +
      (d.pairs ? tr("its columns {a} and {b} (red outline) are the point on the circle.", { a: 2 * d.i, b: 2 * d.i + 1 }) : "");
  }

  const events = ["encodings", "names", "encoding", "position", "pair"].map((k) => `change:${k}`);
  events.forEach((ev) => model.on(ev, update));
  update();
  return () => { stop(); events.forEach((ev) => model.off(ev, update)); };
}

export default { render };
