// AttentionExplorer front end (anywidget ES module): a head view of weights (layers, heads, L, S).
// Self-contained (no imports, no network) so the static book answers input offline. Everything is
// scoped to the widget's own element; tokens are only ever set as text (textContent), never as HTML.
// _dom.js (h, s, labelled, SVGNS, FONT) is put in front of this file when it is loaded: see _state.front_end.

const PALETTE = ["#3b75af", "#e8772e", "#3a923a", "#c03d3e", "#8c6bb1", "#8c564b", "#d45fb0", "#5f6b6d", "#a0a014", "#1ba3b6"];
const WIDTH = 660;  // the widest layout drawn; narrower screens get a narrower one, or a scrolling figure
const NARROW = 480;

/** A distinct colour per head: ten hand-picked, then golden-angle hues. */
export function headColor(h) {
  return h < PALETTE.length ? PALETTE[h] : `hsl(${Math.round((h * 137.508) % 360)}, 55%, 42%)`;
}

/** Short display form of a token (full text goes in a tooltip). */
export function shortToken(tok, max = 18) {
  const s = String(tok);
  if (s.trim() === "") return s.length ? "\u2423".repeat(Math.min(s.length, 3)) : "\u2205";
  return s.length > max ? s.slice(0, max - 1) + "\u2026" : s;
}

function fromBase64(b64) {
  const bin = atob(b64), out = new Uint8Array(bin.length);
  for (let n = 0; n < bin.length; n++) out[n] = bin.charCodeAt(n);
  return out;
}

/**
 * The weights (layers, heads, L, S) as nested arrays, decoded from the synced 8-bit form written by
 * attn/widgets/_state.py quantize_rows: per row float32 lo and hi, uint8 codes; w = lo + code * (hi - lo) / 255,
 * within (hi - lo) / 510 of the model's weight. Plain nested arrays (older saved notebooks) pass through.
 */
export function decodeWeights(enc) {
  if (Array.isArray(enc)) return enc;
  if (!enc || enc.scheme !== "uint8-row-minmax") throw new Error(`unknown weights encoding ${enc && enc.scheme}`);
  const [layers, heads, L, S] = enc.shape, codes = fromBase64(enc.codes);
  const f32 = (b64) => { const b = fromBase64(b64), v = new DataView(b.buffer); return (n) => v.getFloat32(4 * n, true); };
  const lo = f32(enc.lo), hi = f32(enc.hi);
  let row = 0;
  return Array.from({ length: layers }, () => Array.from({ length: heads }, () => Array.from({ length: L }, () => {
    const a = lo(row), step = (hi(row) - a) / 255, off = row * S, out = new Array(S);
    for (let j = 0; j < S; j++) out[j] = a + codes[off + j] * step;
    row++;
    return out;
  })));
}

/** The value that maps to full opacity: the largest weight, except for probabilities drawn as lines (1, so
 *  that a line's opacity is its weight). A heatmap always spans the data: weights of ~0.04 (a query spread
 *  over 25 keys) would look blank on a 0-1 scale; the legend states the top of the scale. */
export function weightScale(weights, normalized, view = "lines") {
  if (normalized && view !== "heatmap") return 1;
  let m = 0;
  for (const l of weights) for (const hd of l) for (const r of hd) for (const w of r) m = Math.max(m, w);
  return m > 0 ? m : 1;
}

const tip = (node, text) => { node.append(s("title", {}, text)); return node; };

// Text widths are measured (canvas, same font) so labels get the room they need, bold included.
let ctx2d = null;
function textW(str, size, bold = false) {
  if (ctx2d === null) { try { ctx2d = document.createElement("canvas").getContext("2d") || false; } catch (e) { ctx2d = false; } }
  if (!ctx2d) return String(str).length * size * (bold ? 0.66 : 0.6);
  ctx2d.font = `${bold ? 700 : 400} ${size}px ${FONT}`;
  return ctx2d.measureText(String(str)).width;
}
const widest = (toks, size, bold) => Math.max(0, ...toks.map((t) => textW(shortToken(t), size, bold)));

function download(el, url, name) {
  const a = h("a", { href: url, download: name, hidden: true });
  el.append(a); a.click(); a.remove();
}

function render({ model, el }) {
  const tr = words(model.get("lang"));
  const root = h("div", { class: "attn-w attn-head-view", lang: langTag(model.get("lang")) });
  el.append(root);
  const layerSel = h("select", { name: "layer" });
  const viewBtns = [["lines", tr("lines")], ["heatmap", tr("heatmap")]].map(([v, text]) => h("button", { type: "button", name: "view", value: v }, text));
  const headBox = h("div", { class: "attn-heads", role: "group", "aria-label": tr("heads shown") });
  const allBtn = h("button", { type: "button", name: "all_heads" }, tr("all"));
  const pngBtn = h("button", { type: "button", name: "export", value: "png" }, tr("save PNG"));
  const svgBtn = h("button", { type: "button", name: "export", value: "svg" }, tr("save SVG"));
  root.append(
    h("div", { class: "attn-controls" },
      labelled("layer", tr("layer"), layerSel),
      h("span", { class: "attn-field", role: "group", "aria-label": tr("view"), "data-control": "view" }, h("span", {}, tr("view")), ...viewBtns),
      h("span", { class: "attn-field", "data-control": "export" }, pngBtn, svgBtn)),
    h("div", { class: "attn-controls", "data-control": "heads" }, h("span", { class: "attn-field" }, tr("heads")), headBox, allBtn));
  const figure = h("div", { class: "attn-figure" });
  const cue = h("div", { class: "attn-scroll-cue", hidden: true }, tr("\u2194 wider than the screen: scroll the figure sideways"));
  const readout = h("div", { class: "attn-readout", "aria-live": "polite" });
  root.append(cue, figure, readout);

  let hover = null, svg = null, parts = null;
  const get = (k) => model.get(k);
  const put = (k, v) => { model.set(k, v); model.save_changes(); };

  layerSel.addEventListener("change", () => put("layer", parseInt(layerSel.value, 10)));
  viewBtns.forEach((b) => b.addEventListener("click", () => put("view", b.value)));
  allBtn.addEventListener("click", () => put("heads", get("heads").map(() => true)));
  headBox.addEventListener("click", (e) => {
    const b = e.target.closest("button[name=head]");
    if (!b) return;
    const hs = get("heads").slice(); hs[+b.value] = !hs[+b.value];
    put("heads", hs);
  });
  const fileBase = () => `attention-layer${get("layer") + 1}-${get("view")}`;
  svgBtn.addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([serialize()], { type: "image/svg+xml" }));
    download(root, url, fileBase() + ".svg");
    setTimeout(() => URL.revokeObjectURL(url), 4000);
  });
  pngBtn.addEventListener("click", () => {
    const w = +svg.getAttribute("width"), ht = +svg.getAttribute("height"), k = 2;
    const img = new Image();
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = w * k; c.height = ht * k;
      const ctx = c.getContext("2d");
      ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, c.width, c.height);
      ctx.drawImage(img, 0, 0, c.width, c.height);
      download(root, c.toDataURL("image/png"), fileBase() + ".png");
    };
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(serialize());
  });
  const serialize = () => {
    const c = svg.cloneNode(true);
    c.setAttribute("xmlns", SVGNS);
    c.prepend(s("rect", { width: c.getAttribute("width"), height: c.getAttribute("height"), fill: "#fff" }));  // on screen: the page's own white
    c.querySelectorAll("[tabindex]").forEach((n) => n.removeAttribute("tabindex"));
    return new XMLSerializer().serializeToString(c);
  };

  // ----- which query is highlighted: the hovered/focused one, else the pinned one
  const current = () => (hover != null ? hover : get("query") >= 0 ? get("query") : null);
  const pin = (i) => put("query", get("query") === i ? -1 : i);
  function onTokenEvent(e) {
    const g = e.target.closest && e.target.closest("[data-q]");
    if (!g || !svg.contains(g)) return;
    const i = +g.dataset.q;
    if (e.type === "pointerover" || e.type === "focusin") { hover = i; highlight(); }
    else if (e.type === "click" && g.classList.contains("attn-tok")) pin(i);
    else if (e.type === "keydown" && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); pin(i); }
    else if (e.type === "keydown" && e.key === "Escape") put("query", -1);
  }
  for (const ev of ["pointerover", "focusin", "click", "keydown"]) figure.addEventListener(ev, onTokenEvent);
  figure.addEventListener("pointerleave", () => { hover = null; highlight(); });
  figure.addEventListener("focusout", (e) => { if (!figure.contains(e.relatedTarget)) { hover = null; highlight(); } });

  let cache = { enc: null, W: null };
  const weights = () => {
    const enc = get("weights");
    if (cache.enc !== enc) cache = { enc, W: decodeWeights(enc) };
    return cache.W;
  };

  function data() {
    const W = weights(), layer = Math.min(Math.max(0, get("layer")), W.length - 1);
    const H = W[0].length, shown = get("heads");
    const active = [...Array(H).keys()].filter((hd) => shown[hd] !== false);
    const names = get("layer_names") || [], name = names.length === W.length ? names[layer] : tr("Layer {n}", { n: layer + 1 });
    const d = { W: W[layer], layer, layers: W.length, names, name, H, active, q: get("tokens"), k: get("key_tokens"),
      view: get("view") === "heatmap" ? "heatmap" : "lines" };
    return { ...d, scale: weightScale(W, get("normalized"), d.view) };
  }

  function controls(d) {
    const labels = Array.from({ length: d.layers }, (_, l) => (d.names.length === d.layers ? d.names[l] : tr("{n} of {total}", { n: l + 1, total: d.layers })));
    if ([...layerSel.options].map((o) => o.textContent).join("\n") !== labels.join("\n")) {
      layerSel.replaceChildren(...labels.map((t, l) => h("option", { value: l }, t)));
    }
    layerSel.value = d.layer;
    viewBtns.forEach((b) => b.setAttribute("aria-pressed", String(b.value === d.view)));
    if (headBox.children.length !== d.H) {  // rebuilt only when the number of heads changes, so focus stays
      headBox.replaceChildren(...Array.from({ length: d.H }, (_, hd) => {
        const dot = h("span", { class: "attn-dot" }); dot.style.background = headColor(hd);
        return h("button", { type: "button", name: "head", value: hd, "aria-label": tr("head {n}", { n: hd + 1 }) }, dot, String(hd + 1));
      }));
    }
    [...headBox.children].forEach((b, hd) => b.setAttribute("aria-pressed", String(d.active.includes(hd))));
    Object.assign(root.dataset, { view: d.view, layer: d.layer, heads: d.active.join(","), query: get("query") });
  }

  /** Legend items laid out in rows no wider than `maxW`; returns the group (at y 0) and its height. */
  function legend(d, maxW) {
    const size = 11, g = s("g", { class: "attn-legend", "font-size": size, fill: "#555" }), items = [];
    for (const hd of d.active) {
      const label = tr("head {n}", { n: hd + 1 }), w = 14 + textW(label, size);
      items.push([w, (x, y) => [s("rect", { x, y: y - 9, width: 10, height: 10, rx: 2, fill: headColor(hd) }), s("text", { x: x + 14, y }, label)]]);
    }
    const lab = d.view === "lines" ? tr("line opacity = weight:") : tr("weight:"), top = d.scale === 1 ? "1" : d.scale.toFixed(3);
    const w0 = textW(lab + " 0", size) + 6, rampW = 90;
    items.push([w0 + rampW + 6 + textW(top, size), (x, y) => [
      s("text", { x, y }, lab + " 0"),
      ...Array.from({ length: 10 }, (_, n) => s("rect", { x: x + w0 + n * 9, y: y - 9, width: 9, height: 10, fill: "#222", "fill-opacity": n / 9 })),
      s("rect", { x: x + w0, y: y - 9, width: rampW, height: 10, fill: "none", stroke: "#ccc" }),
      s("text", { x: x + w0 + rampW + 6, y }, top)]]);
    let x = 0, y = 0;
    items.forEach(([w, make], n) => {
      if (x > 0 && x + w > maxW) { x = 0; y += 16; }
      if (n === items.length - 1 && x > 0) x += 8;  // a little space before the opacity scale
      if (x > 0 && x + w > maxW) { x = 0; y += 16; }
      g.append(...make(x, y));
      x += w + 12;
    });
    return { g, height: y + 16 };
  }

  const available = () => Math.min(WIDTH, Math.max(0, figure.clientWidth || root.clientWidth || WIDTH) - 2);

  function drawLines(d) {
    const rowH = 22, top = 46, L = d.q.length, S = d.k.length, avail = available();
    const qW = Math.max(50, Math.ceil(widest(d.q, 13, true)) + 6), kW = Math.max(36, Math.ceil(widest(d.k, 13)) + 4);
    const barLen = avail < NARROW ? 40 : 60, barsW = barLen + 10;
    const gap = Math.max(60, Math.min(320, avail - 24 - qW - kW - barsW));
    const x0 = 12 + qW, x1 = x0 + gap, W = Math.max(x1 + kW + barsW + 12, Math.min(avail, WIDTH));
    const leg = legend(d, W - 24), Ht = top + Math.max(L, S) * rowH + 14 + leg.height;
    // a group, not an image: it holds the query buttons (an image with controls inside hides them
    // from assistive technology: axe-core nested-interactive)
    const root_ = s("svg", { class: "attn-svg", width: W, height: Ht, viewBox: `0 0 ${W} ${Ht}`, "font-family": FONT, role: "group",
      "aria-label": tr("attention lines, {name}", { name: d.name }) });
    root_.append(
      s("text", { x: 12, y: 16, "font-size": 12, "font-weight": 600, fill: "#333" }, d.name),
      s("text", { x: x0, y: 36, "text-anchor": "end", "font-size": 11, fill: "#666" }, tr("queries")),
      s("text", { x: x1, y: 36, "font-size": 11, fill: "#666" }, tr("keys")));
    const yq = (i) => top + i * rowH + rowH / 2;
    const lines = s("g", { class: "attn-lines", "stroke-width": 2, "stroke-linecap": "round" });
    for (const hd of d.active) {
      const col = headColor(hd);
      d.W[hd].forEach((row, i) => row.forEach((w, j) => {
        if (w / d.scale < 0.005) return;
        lines.append(s("line", { class: "attn-line", x1: x0 + 6, y1: yq(i), x2: x1 - 6, y2: yq(j), stroke: col,
          "stroke-opacity": (w / d.scale).toFixed(3), "data-h": hd, "data-q": i, "data-k": j, "data-w": w }));
      }));
    }
    const qs = s("g", { class: "attn-queries", "font-size": 13 });
    d.q.forEach((tok, i) => {
      const g = s("g", { class: "attn-tok", "data-q": i, tabindex: 0, role: "button", "aria-pressed": "false",
        "aria-label": tr("query {i}: {tok}", { i, tok }) });
      g.append(s("rect", { x: 6, y: yq(i) - rowH / 2 + 2, width: qW + 2, height: rowH - 4, rx: 3, fill: "transparent" }),
        s("text", { x: x0, y: yq(i) + 4, "text-anchor": "end", fill: "#222" }, shortToken(tok)));
      qs.append(tip(g, tr("query {i}: {tok}", { i, tok })));
    });
    const ks = s("g", { class: "attn-keys", "font-size": 13 });
    d.k.forEach((tok, j) => {
      const g = s("g", { class: "attn-key", "data-k": j });
      g.append(s("text", { x: x1, y: yq(j) + 4, fill: "#222" }, shortToken(tok)));
      ks.append(tip(g, tr("key {j}: {tok}", { j, tok })));
    });
    const bars = s("g", { class: "attn-bars" });
    leg.g.setAttribute("transform", `translate(12, ${top + Math.max(L, S) * rowH + 22})`);
    root_.append(lines, qs, ks, bars, leg.g);
    return { svg: root_, lines, bars, barX: x1 + kW + 6, barLen, rowH, yq };
  }

  function drawHeatmap(d) {
    const L = d.q.length, S = d.k.length, n = d.active.length;
    const avail = available(), labW = Math.ceil(widest(d.q, 12, true)) + 4, topH = Math.ceil(widest(d.k, 11)) + 12;
    const cell = (cols) => Math.floor(((avail - 24 - (cols - 1) * 24) / cols - labW - 6) / S);
    const cols = n > 1 && cell(2) >= 10 ? 2 : 1;  // two maps side by side only where their cells stay readable
    const c = Math.max(6, Math.min(30, cell(cols)));
    const pw = labW + 6 + S * c, ph = 20 + topH + L * c, rows = Math.ceil(n / cols);
    const title = tr("{name}: rows = queries, columns = keys", { name: d.name });
    const W = Math.max(24 + cols * pw + (cols - 1) * 24, Math.min(avail, WIDTH), Math.ceil(textW(title, 12, true)) + 24);
    const leg = legend(d, W - 24), Ht = 24 + Math.max(1, rows) * (ph + 16) + 8 + leg.height;
    const svg_ = s("svg", { class: "attn-svg", width: W, height: Ht, viewBox: `0 0 ${W} ${Ht}`, "font-family": FONT, role: "group",
      "aria-label": tr("attention heatmaps, {name}", { name: d.name }) });  // a group: its row labels are buttons (as the lines view)
    svg_.append(
      s("text", { x: 12, y: 16, "font-size": 12, "font-weight": 600, fill: "#333" }, title));
    if (!n) svg_.append(s("text", { x: 12, y: 44, "font-size": 12, fill: "#666" }, tr("No head selected: turn one on above.")));
    const outlines = [];
    d.active.forEach((hd, a) => {
      const gx = 12 + (a % cols) * (pw + 24), gy = 26 + Math.floor(a / cols) * (ph + 16);
      const g = s("g", { class: "attn-heatmap", "data-h": hd, transform: `translate(${gx}, ${gy})`, "font-size": 11 });
      const ox = labW + 6, oy = 20 + topH, col = headColor(hd);
      g.append(s("text", { x: ox, y: 11, "font-size": 12, "font-weight": 600, fill: col }, tr("head {n}", { n: hd + 1 })));
      d.k.forEach((tok, j) => g.append(tip(s("text", { class: "attn-klabel", "data-k": j, transform: `translate(${ox + j * c + c / 2 + 4}, ${oy - 5}) rotate(-90)`,
        fill: "#555", "font-size": Math.min(11, c) }, shortToken(tok)), tr("key {j}: {tok}", { j, tok }))));
      d.q.forEach((tok, i) => {
        const t = s("text", { class: a === 0 ? "attn-tok" : "attn-qlabel", "data-q": i, x: ox - 5, y: oy + i * c + c / 2 + 4,
          "text-anchor": "end", fill: "#333", "font-size": Math.min(12, c + 1), tabindex: a === 0 ? 0 : null,
          role: a === 0 ? "button" : null, "aria-label": a === 0 ? tr("query {i}: {tok}", { i, tok }) : null }, shortToken(tok));
        g.append(tip(t, tr("query {i}: {tok}", { i, tok })));
      });
      g.append(s("rect", { x: ox - 0.5, y: oy - 0.5, width: S * c + 1, height: L * c + 1, fill: "#fff", stroke: "#ddd" }));
      d.W[hd].forEach((row, i) => row.forEach((w, j) => {
        g.append(tip(s("rect", { class: "attn-cell", x: ox + j * c, y: oy + i * c, width: c - (c > 8 ? 1 : 0), height: c - (c > 8 ? 1 : 0),
          fill: col, "fill-opacity": (w / d.scale).toFixed(3), "data-h": hd, "data-q": i, "data-k": j, "data-w": w }),
          tr("head {n}: {q} \u2192 {k} = {w}", { n: hd + 1, q: d.q[i], k: d.k[j], w: w.toFixed(4) })));
      }));
      const o = s("rect", { class: "attn-row-outline", x: ox - 1.5, width: S * c + 3, height: c + 2, fill: "none", stroke: "#111",
        "stroke-width": 1.5, visibility: "hidden" });
      g.append(o); outlines.push({ o, oy, c });
      svg_.append(g);
    });
    leg.g.setAttribute("transform", `translate(12, ${24 + Math.max(1, rows) * (ph + 16) + 12})`);
    if (n) svg_.append(leg.g);
    return { svg: svg_, outlines };
  }

  function highlight() {
    if (!svg) return;
    const d = data(), i = current(), pinned = get("query");
    root.dataset.query = pinned; root.dataset.highlight = i == null ? "" : i;
    svg.querySelectorAll(".attn-tok").forEach((g) => {
      const on = +g.dataset.q === i;
      g.setAttribute("aria-pressed", String(+g.dataset.q === pinned));
      const r = g.querySelector("rect"), t = g.querySelector("text") || g;
      if (r) r.setAttribute("fill", on ? "#eef3fa" : "transparent");
      t.setAttribute("font-weight", on ? "700" : "400");
    });
    svg.querySelectorAll(".attn-qlabel").forEach((t) => t.setAttribute("font-weight", +t.dataset.q === i ? "700" : "400"));
    if (d.view === "lines") {
      parts.lines.querySelectorAll("line").forEach((ln) => ln.setAttribute("visibility", i == null || +ln.dataset.q === i ? "visible" : "hidden"));
      const bars = [];
      if (i != null && d.active.length) {
        const bh = Math.max(2, (parts.rowH - 6) / d.active.length);
        d.k.forEach((_, j) => d.active.forEach((hd, a) => {
          const w = d.W[hd][i][j];
          bars.push(s("rect", { x: parts.barX, y: parts.yq(j) - (parts.rowH - 6) / 2 + a * bh, width: Math.max(0.5, (parts.barLen * w) / d.scale),
            height: bh - 0.5, fill: headColor(hd), "data-h": hd, "data-k": j }));
        }));
      }
      parts.bars.replaceChildren(...bars);
    } else {
      parts.outlines.forEach(({ o, oy, c }) => {
        o.setAttribute("visibility", i == null ? "hidden" : "visible");
        if (i != null) o.setAttribute("y", oy + i * c - 1.5);
      });
    }
    if (i == null) {
      readout.textContent = tr("Hover over or focus a query token to follow its attention; click it (or press Enter) to pin it.");
    } else {
      const tops = d.active.map((hd) => {
        const row = d.W[hd][i], j = row.indexOf(Math.max(...row));
        return tr("head {n} \u2192 \u201c{k}\u201d {w}", { n: hd + 1, k: shortToken(d.k[j]), w: row[j].toFixed(2) });
      });
      const args = { i, q: shortToken(d.q[i]), tops: tops.join(tr("; ")) || tr("no head shown") };
      readout.textContent = pinned === i
        ? tr("query {i} \u201c{q}\u201d (pinned): strongest key per head: {tops}", args)
        : tr("query {i} \u201c{q}\u201d: strongest key per head: {tops}", args);
    }
  }

  function draw() {
    const d = data();
    controls(d);
    parts = d.view === "lines" ? drawLines(d) : drawHeatmap(d);
    svg = parts.svg;
    figure.replaceChildren(svg);
    drawnFor = available();
    markScroll();
    highlight();
  }

  // A figure wider than its column scrolls inside it (never the page), and says so.
  let drawnFor = null, pending = null;
  function markScroll() {
    const scrolls = figure.scrollWidth > figure.clientWidth + 1;
    cue.hidden = !scrolls;
    root.dataset.scrolls = String(scrolls);
    for (const [k, v] of [["tabindex", "0"], ["role", "region"], ["aria-label", tr("figure, scrolls sideways")]]) {
      if (scrolls) figure.setAttribute(k, v); else figure.removeAttribute(k);
    }
  }
  const resized = new ResizeObserver(() => {
    if (pending) return;
    pending = requestAnimationFrame(() => {
      pending = null;
      if (Math.abs(available() - drawnFor) >= 8) draw(); else markScroll();
    });
  });
  resized.observe(root);

  const redraw = ["tokens", "key_tokens", "weights", "normalized", "layer", "heads", "view", "layer_names"].map((k) => `change:${k}`);
  redraw.forEach((ev) => model.on(ev, draw));
  model.on("change:query", highlight);
  draw();
  return () => {
    resized.disconnect(); if (pending) cancelAnimationFrame(pending);
    redraw.forEach((ev) => model.off(ev, draw)); model.off("change:query", highlight);
  };
}

export default { render };
