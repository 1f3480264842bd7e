// GenerationExplorer front end (anywidget ES module): the trained GPT continues the reader's prompt
// in the page, one character per step, and the KV cache fills row by row. Self-contained: _dom.js
// (h, s, labelled) and _nn.js (loadModel, forward, newCache, softmaxRow, argmax) are put in front of
// this file (see _state.front_end); the weights come from the synced state. Text is only ever set as
// text, never parsed as HTML.

const SPECIAL = "\u2400";  // how a generated <pad>, <s> or </s> is shown (as Python's continuation does)
const CELL = 2;  // px per number in a cache row
const ROW = 6;  // px per cached position

/** Problems with a prompt, as the sentence shown to the reader ("" when it can be generated from). */
export function promptProblem(vocab, maxLen, prompt, maxNew, tr = words("en")) {
  if (!prompt.length) return tr("Type a prompt: the model needs at least one character to continue.");
  const known = new Set(vocab.slice(3)), unknown = [...new Set([...prompt].filter((c) => !known.has(c)))];
  if (unknown.length) {
    return tr("The model does not know {chars}: it was trained on lower-case text (letters, digits, space and {others}).",
      { chars: unknown.map((c) => JSON.stringify(c)).join(", "), others: vocab.slice(3).filter((c) => !/[a-z0-9 ]/.test(c)).join("") });
  }
  if ([...prompt].length + maxNew > maxLen) {
    return tr("The prompt has {n} characters and {add} are to be added: {total} positions, but the model's context is " +
      "{max}. Shorten the prompt.", { n: [...prompt].length, add: maxNew, total: [...prompt].length + maxNew, max: maxLen });
  }
  return "";
}

/** Greedy continuation of `prompt` by `maxNew` characters with the KV cache (what Python's `generated` holds). */
export function continuation(spec, prompt, maxNew) {
  const m = loadModel(spec), cache = newCache(m), ids = encodeText(m, prompt), out = [];
  let input = ids;
  for (let t = 0; t < maxNew; t++) {
    const r = forward(m, input, { cache }), next = argmax(r.logits[r.logits.length - 1]);
    out.push(next > 2 ? m.vocab[next] : SPECIAL);
    input = [next];
  }
  return out.join("");
}

/**
 * The model reading `prompt`: every layer's and head's attention weights [layer][head] (rows: one per
 * query, query i's row has the i + 1 keys it may see) and, after each position, the probabilities of
 * the next character (P, V). `before` (a previous reading of this model) is reused as far as the two
 * prompts agree: the model is causal, so those positions are unchanged, and only the characters from
 * the first difference on go through the model, with the KV cache (typing at the end: one character).
 * Tests compare the result (and the page's data attributes) with PyTorch's full pass.
 */
export function reading(m, prompt, before = null) {
  const ids = encodeText(m, prompt), { num_layers: L, num_heads: H } = m.config;
  let keep = 0;
  if (before && before.model === m) while (keep < before.ids.length && keep < ids.length && before.ids[keep] === ids[keep]) keep++;
  const look = keep ? before : { model: m, cache: newCache(m), attention: Array.from({ length: L }, () => Array.from({ length: H }, () => [])), probs: [] };
  truncateCache(look.cache, keep);
  look.attention.forEach((heads) => heads.forEach((rows) => { rows.length = keep; }));
  look.probs.length = keep;
  if (ids.length > keep) {
    const r = forward(m, ids.slice(keep), { cache: look.cache });
    r.attention.forEach((heads, l) => heads.forEach((w, hd) => look.attention[l][hd].push(...w.map((row, i) => row.slice(0, keep + 1 + i)))));
    look.probs.push(...r.logits.map(softmaxRow));
  }
  return Object.assign(look, { ids, chars: [...prompt] });
}

/** For tests under node: reading() from the model's JSON, each query's row padded with zeros to P keys. */
export function readPrompt(spec, prompt, edits = []) {
  const m = loadModel(spec);
  let look = null;
  for (const p of [...edits, prompt]) look = reading(m, p, look);
  const P = look.ids.length, pad = (row) => row.concat(new Array(P - row.length).fill(0));
  return { attention: look.attention.map((heads) => heads.map((rows) => rows.map(pad))), probs: look.probs };
}

/** The k most likely ids of a probability row, most likely first: [[p, id], ...]. */
function topK(probs, k) {
  return probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]).slice(0, k);
}

function render({ model, el }) {
  const tr = words(model.get("lang"));
  const root = h("div", { class: "attn-w attn-gen-explorer", lang: langTag(model.get("lang")) });
  el.append(root);
  const promptIn = h("input", { type: "text", name: "prompt", spellcheck: "false", autocomplete: "off", size: 26 });
  const stepBtn = h("button", { type: "button", name: "step" }, tr("step \u25b8"));
  // Its text says what a press does (play, then pause): no aria-pressed as well, or a screen reader would
  // say "pause, toggle button, pressed" (a toggle button keeps one name; WAI-ARIA APG, button pattern).
  const playBtn = h("button", { type: "button", name: "play" }, tr("\u25b6 play"));
  const resetBtn = h("button", { type: "button", name: "reset" }, tr("\u21ba reset"));
  const layerSel = h("select", { name: "layer" });
  root.append(h("div", { class: "attn-controls" }, labelled("prompt", tr("prompt"), promptIn), stepBtn, playBtn, resetBtn,
    labelled("layer", tr("cache of layer"), layerSel)));
  const note = h("div", { class: "attn-note", role: "alert", hidden: true });
  const text = h("div", { class: "attn-gen-text", "aria-live": "polite" });
  const pred = h("div", { class: "attn-readout attn-gen-pred" });
  const fig = h("div", { class: "attn-figure" });
  // The live view: the typed prompt read by the model at once, every layer and head, and its prediction.
  const querySel = h("input", { type: "range", name: "query", min: 0, max: 0, step: 1, value: 0 });
  const queryOut = h("output", { class: "attn-gen-query" });
  const live = h("section", { class: "attn-gen-live", "aria-label": tr("the prompt's attention, every layer and head") });
  const liveHead = h("div", { class: "attn-controls" }, labelled("query", tr("query"), querySel, queryOut));
  const grid = h("div", { class: "attn-gen-grid" });
  const topList = h("ol", { class: "attn-gen-top" });
  const topCap = h("div", { class: "attn-readout" });
  const legend = h("div", { class: "attn-readout" }, tr("Each square is one head as it reads the prompt: a row per query " +
    "character, a column per key (darker: more weight; grey: later characters, hidden by the causal mask). " +
    "The framed row is the query: move it with the slider or the arrow keys."));
  live.append(liveHead, legend, grid, topCap, topList);
  root.append(note, live, text, pred, fig);

  let m = null, specSeen = null, run = null, timer = null, look = null, queryAtEnd = true, maps = [];
  const modelOf = () => {
    const spec = model.get("model");
    if (spec !== specSeen) { m = loadModel(spec); specSeen = spec; }
    return m;
  };
  const maxNew = () => Math.max(1, model.get("max_new_tokens") | 0);

  function stop() {
    clearInterval(timer); timer = null;
    playBtn.textContent = tr("\u25b6 play");
  }

  /** A fresh run for the prompt typed: ids, an empty cache; null (and a visible message) if it cannot run. */
  function start() {
    stop();
    const mm = modelOf(), prompt = promptIn.value, problem = promptProblem(mm.vocab, mm.config.max_len, prompt, maxNew(), tr);
    note.hidden = !problem; note.textContent = problem;
    root.dataset.valid = String(!problem);
    if (problem) { run = null; live.dataset.state = "invalid"; draw(); return; }
    if (prompt !== model.get("prompt")) { model.set("prompt", prompt); model.save_changes(); }
    run = { ids: encodeText(mm, prompt), cache: newCache(mm), out: [], probs: null, weights: null, P: [...prompt].length };
    look = reading(mm, prompt, look);
    const P = look.chars.length, q = parseInt(querySel.value, 10);
    querySel.max = String(P - 1);
    querySel.value = String(queryAtEnd || !(q < P) ? P - 1 : q);
    live.dataset.state = "ok";
    drawLive();
    draw();
  }

  /**
   * Every layer's and head's weights for the prompt as small heatmaps (rows: queries, columns: keys;
   * the chosen query's row framed), and the chosen query's next-character prediction. Each heatmap
   * carries the chosen row in full precision (data-weights), each prediction its probability
   * (data-prob): what the browser tests compare with PyTorch.
   */
  function drawLive() {
    const mm = modelOf(), { num_layers: L, num_heads: H } = mm.config, P = look.chars.length;
    const q = parseInt(querySel.value, 10), shown = (ch) => (ch === " " ? "\u2423" : ch);
    Object.assign(live.dataset, { query: String(q), length: String(P) });
    queryOut.textContent = tr("{q} of {P}: {ch}", { q: q + 1, P, ch: JSON.stringify(look.chars[q]) });
    querySel.setAttribute("aria-valuetext", tr("position {q} of {P}, the character {ch}", { q: q + 1, P, ch: JSON.stringify(look.chars[q]) }));
    if (maps.length !== L * H) {  // the grid is built once; an edit redraws its canvases in place
      maps = [];
      const cells = [];
      for (let l = 0; l < L; l++) {
        cells.push(h("div", { class: "attn-gen-layer" }, tr("layer {n}", { n: l + 1 })));
        for (let hd = 0; hd < H; hd++) {
          const cv = h("canvas", { class: "attn-gen-map", role: "img", "data-layer": l, "data-head": hd });
          maps.push(cv);
          const box = h("div", { class: "attn-gen-mapbox" }, cv, h("div", { class: "attn-gen-qrow", "aria-hidden": "true" }));
          cells.push(h("figure", { class: "attn-gen-head" }, box, h("figcaption", {}, tr("head {n}", { n: hd + 1 }))));
        }
      }
      grid.style.gridTemplateColumns = `auto repeat(${H}, minmax(0, 1fr))`;
      grid.replaceChildren(...cells);
    }
    maps.forEach((cv) => {
      const l = +cv.dataset.layer, hd = +cv.dataset.head, W = look.attention[l][hd], row = W[q];
      let best = 0;
      for (let j = 1; j <= q; j++) if (row[j] > row[best]) best = j;
      const label = tr("layer {l}, head {hd}: query {q} attends most to {k} at {j} ({p}%)", { l: l + 1, hd: hd + 1,
        q: JSON.stringify(look.chars[q]), k: JSON.stringify(look.chars[best]), j: best + 1, p: (100 * row[best]).toFixed(0) });
      heatmap(cv, W, q);
      cv.dataset.weights = row.concat(new Array(P - row.length).fill(0)).join(",");  // all P keys, as PyTorch's row
      cv.setAttribute("aria-label", label);
      cv.setAttribute("title", label);
    });
    topCap.textContent = tr("after {text} the model expects next:", { text: JSON.stringify(look.chars.slice(0, q + 1).join("")) });
    const probs = look.probs[q];
    topList.replaceChildren(...topK(probs, 5).map(([p, i]) => {
      const ch = i > 2 ? mm.vocab[i] : SPECIAL;
      const bar = h("span", { class: "attn-gen-bar" });
      bar.style.width = `${(100 * p).toFixed(1)}%`;
      return h("li", { "data-char": ch, "data-prob": String(p) },
        h("code", {}, shown(ch)), h("span", { class: "attn-gen-barbox" }, bar), h("span", {}, `${(100 * p).toFixed(1)}%`));
    }));
  }

  /**
   * One head's (P, P) weights into its canvas, a pixel a weight (white 0 to blue 1; grey: future keys),
   * scaled up by CSS without smoothing; the chosen query's row is framed by an element over it.
   */
  function heatmap(cv, W, q) {
    const P = W.length;
    if (cv.width !== P) { cv.width = P; cv.height = P; }
    const frame = cv.nextSibling;
    frame.style.top = `${(100 * q) / P}%`;
    frame.style.height = `${100 / P}%`;
    const g = cv.getContext("2d");
    if (!g) return;
    const img = g.createImageData(P, P), px = new Uint32Array(img.data.buffer);
    const rgba = (r, gg, b) => ((255 << 24) | (b << 16) | (gg << 8) | r) >>> 0;  // RGBA bytes, little-endian as every browser
    const grey = rgba(236, 236, 236);
    for (let i = 0; i < P; i++) {
      for (let j = 0; j < P; j++) {
        const w = W[i][j];
        px[i * P + j] = j > i ? grey : rgba(Math.round(255 - 222 * w), Math.round(255 - 153 * w), Math.round(255 - 83 * w));
      }
    }
    g.putImageData(img, 0, 0);
  }

  function step() {
    if (!run || run.out.length >= maxNew()) return false;
    const mm = modelOf(), input = run.out.length ? [run.out[run.out.length - 1]] : run.ids;
    const r = forward(mm, input, { cache: run.cache }), logits = r.logits[r.logits.length - 1];
    run.out.push(argmax(logits));
    run.probs = softmaxRow(logits);
    run.weights = r.attention.map((heads) => heads.map((w) => w[w.length - 1]));  // [layer][head] (S): the newest query
    draw();
    return run.out.length < maxNew();
  }

  function draw() {
    const mm = modelOf(), L = mm.config.num_layers;
    if (layerSel.options.length !== L) layerSel.replaceChildren(...Array.from({ length: L }, (_, i) => h("option", { value: i }, `${i + 1}`)));
    const layer = Math.min(L - 1, parseInt(layerSel.value || "0", 10));
    const shown = (id) => (id > 2 ? mm.vocab[id] : SPECIAL);
    const done = run ? run.out.length : 0;
    stepBtn.disabled = playBtn.disabled = !run || done >= maxNew();
    live.hidden = !run;
    if (!run) {
      const stored = model.get("generated") || "";
      text.replaceChildren(h("span", {}, model.get("prompt") || ""), h("span", { class: "attn-gen-new" }, stored));
      pred.textContent = "";
      fig.replaceChildren();
      return;
    }
    const generated = run.out.map(shown).join("");
    Object.assign(root.dataset, { generated, cacheLength: String(run.cache.length), steps: String(done) });
    text.replaceChildren(h("span", {}, promptIn.value), h("span", { class: "attn-gen-new" }, generated),
      h("span", { class: "attn-gen-cursor" }, done < maxNew() ? "\u2581" : ""));
    if (run.probs) {
      const top = run.probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]).slice(0, 5);
      pred.textContent = tr("step {n}: picked {ch}; most likely: {top}", { n: done, ch: JSON.stringify(shown(run.out[done - 1])),
        top: top.map(([p, i]) => `${JSON.stringify(shown(i))} ${(100 * p).toFixed(1)}%`).join(", ") });
    } else {
      pred.textContent = tr("Press step: the prompt's {n} characters go through the model at once and fill the cache.", { n: run.P });
    }
    fig.replaceChildren(cacheFigure(mm, layer, shown));
  }

  /**
   * Keys and values cached by one layer, a row per position (heads side by side), and the newest
   * query's weight on each row (mean over heads). Drawn on a canvas: a step redraws thousands of
   * cells as one image (as SVG elements they took 60 ms a step at 30 rows). What the figure shows is
   * also on the element as data: data-rows, data-chars (JSON) and data-weights.
   */
  function cacheFigure(mm, layer, shown) {
    const c = mm.config, D = c.d_model, H = c.num_heads, store = run.cache.layers[layer], S = run.cache.length;
    const lab = 26, gap = 12, bars = 48, W = lab + 2 * D * CELL + 2 * gap + bars, top = 30, Ht = top + Math.max(1, S) * ROW + 8;
    const ids = run.ids.concat(run.out).slice(0, S), chars = ids.map(shown);
    const w = run.weights ? run.weights[layer] : null;
    const means = w ? Array.from({ length: S }, (_, p) => w.reduce((a, row) => a + (row[p] || 0), 0) / H) : [];
    const ratio = (typeof window !== "undefined" && window.devicePixelRatio) || 1;
    const cv = h("canvas", { class: "attn-gen-cache", width: Math.round(W * ratio), height: Math.round(Ht * ratio), role: "img",
      "aria-label": tr("KV cache of layer {l}: {S} positions, keys and values of {H} heads", { l: layer + 1, S, H }),
      "data-rows": S, "data-chars": JSON.stringify(chars), "data-weights": means.map((x) => x.toFixed(6)).join(",") });
    cv.style.width = `${W}px`;
    cv.style.height = `${Ht}px`;
    const g = cv.getContext("2d");
    if (!g) return cv;
    g.scale(ratio, ratio);
    const xk = lab, xv = lab + D * CELL + gap, xb = xv + D * CELL + gap;
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, Ht);
    g.font = `600 10px ${FONT}`; g.fillStyle = "#333";
    g.fillText(tr("keys ({H} heads)", { H }), xk, 12); g.fillText(tr("values"), xv, 12); g.fillText(tr("weight"), xb, 12);
    g.font = `10px ${FONT}`; g.fillStyle = "#666";
    g.fillText(S === 1 ? tr("layer {l}, {S} row", { l: layer + 1, S }) : tr("layer {l}, {S} rows", { l: layer + 1, S }), xk, 24);
    let vmax = 1e-9;
    for (const side of [store.k, store.v]) for (const head of side) for (const r of head) for (const x of r) vmax = Math.max(vmax, Math.abs(x));
    const rgb = (x) => {  // blue (-vmax) - white (0) - red (+vmax)
      const t = Math.max(-1, Math.min(1, x / vmax)), end = t < 0 ? [33, 102, 172] : [178, 24, 43];
      return [247, 247, 247].map((a, k) => Math.round(a + (end[k] - a) * Math.abs(t)));
    };
    // The cells as pixels, written once into an image (a fillRect per cell is what made steps slow).
    const cw = 2 * D * CELL + gap, off = document.createElement("canvas");
    off.width = cw; off.height = Math.max(1, S * ROW);
    const og = off.getContext("2d"), img = og.createImageData(cw, off.height);
    for (let p = 0; p < S; p++) {
      [store.k, store.v].forEach((side, sideIndex) => {
        for (let hd = 0; hd < H; hd++) {
          const row = side[hd][p], E = row.length;
          for (let e = 0; e < E; e++) {
            const [r, gg, b] = rgb(row[e]), x0 = sideIndex * (D * CELL + gap) + (hd * E + e) * CELL;
            for (let dy = 0; dy < ROW - 1; dy++) {
              for (let dx = 0; dx < CELL; dx++) {
                const at = 4 * ((p * ROW + dy) * cw + x0 + dx);
                img.data[at] = r; img.data[at + 1] = gg; img.data[at + 2] = b; img.data[at + 3] = 255;
              }
            }
          }
        }
      });
    }
    og.putImageData(img, 0, 0);
    g.imageSmoothingEnabled = false;
    g.drawImage(off, xk, top);
    g.font = `8px ${FONT}`; g.textAlign = "end";
    for (let p = 0; p < S; p++) {
      const y = top + p * ROW, newest = p === S - 1;
      g.fillStyle = newest ? "#111" : "#777";
      g.fillText(chars[p] === " " ? "␣" : chars[p], lab - 4, y + ROW - 1);
      if (w) { g.fillStyle = "#2f6db3"; g.fillRect(xb, y, Math.max(0.5, means[p] * bars), ROW - 1); }
      if (newest) { g.strokeStyle = "#f29d0f"; g.strokeRect(xk - 1, y - 0.5, xb - xk - gap + 2, ROW); }
    }
    return cv;
  }

  promptIn.value = model.get("prompt") || "";
  promptIn.addEventListener("input", start);
  stepBtn.addEventListener("click", () => { stop(); step(); });
  resetBtn.addEventListener("click", start);
  layerSel.addEventListener("change", draw);
  querySel.addEventListener("input", () => {
    queryAtEnd = querySel.value === querySel.max;
    if (look) drawLive();
  });
  playBtn.addEventListener("click", () => {
    if (timer) return stop();
    if (!run || run.out.length >= maxNew()) start();
    if (!run) return;
    playBtn.textContent = tr("\u275a\u275a pause");
    timer = setInterval(() => { if (!step()) stop(); }, 120);
  });
  // From Python (or another view): a new prompt is shown and run; our own model.set of it changes nothing.
  const onPrompt = () => { if (promptIn.value !== model.get("prompt")) { promptIn.value = model.get("prompt") || ""; start(); } };
  const handlers = { "change:prompt": onPrompt, "change:max_new_tokens": start, "change:model": start };
  Object.entries(handlers).forEach(([ev, f]) => model.on(ev, f));
  try {
    start();
  } catch (e) {  // a model this front end cannot load: say so, and keep Python's stored continuation on show
    run = null;
    live.hidden = true;
    note.hidden = false; note.textContent = tr("The model could not run here: {msg}", { msg: e.message });
    text.replaceChildren(h("span", {}, model.get("prompt") || ""), h("span", { class: "attn-gen-new" }, model.get("generated") || ""));
  }
  return () => { stop(); Object.entries(handlers).forEach(([ev, f]) => model.off(ev, f)); };
}

export default { render };
