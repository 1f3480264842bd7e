// GenerationExplorer front end (anywidget ES module): the trained GPT continues the reader's prompt
// in the page, one character per step, and the KV cache fills row by row. Self-contained: _dom.js
// (h, s, labelled) and _nn.js (loadModel, forward, newCache, softmaxRow, argmax) are put in front of
// this file (see _state.front_end); the weights come from the synced state. Text is only ever set as
// text, never parsed as HTML.

const SPECIAL = "\u2400";  // how a generated <pad>, <s> or </s> is shown (as Python's continuation does)
const CELL = 2;  // px per number in a cache row
const ROW = 6;  // px per cached position

/** Problems with a prompt, as the sentence shown to the reader ("" when it can be generated from). */
export function promptProblem(vocab, maxLen, prompt, maxNew) {
  if (!prompt.length) return "Type a prompt: the model needs at least one character to continue.";
  const known = new Set(vocab.slice(3)), unknown = [...new Set([...prompt].filter((c) => !known.has(c)))];
  if (unknown.length) {
    return `The model does not know ${unknown.map((c) => JSON.stringify(c)).join(", ")}: it was trained on ` +
      `lower-case text (letters, digits, space and ${vocab.slice(3).filter((c) => !/[a-z0-9 ]/.test(c)).join("")}).`;
  }
  if ([...prompt].length + maxNew > maxLen) {
    return `The prompt has ${[...prompt].length} characters and ${maxNew} are to be added: ` +
      `${[...prompt].length + maxNew} positions, but the model's context is ${maxLen}. Shorten the prompt.`;
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

function render({ model, el }) {
  const root = h("div", { class: "attn-w attn-gen-explorer" });
  el.append(root);
  const promptIn = h("input", { type: "text", name: "prompt", spellcheck: "false", autocomplete: "off", size: 26 });
  const stepBtn = h("button", { type: "button", name: "step" }, "step \u25b8");
  const playBtn = h("button", { type: "button", name: "play", "aria-pressed": "false" }, "\u25b6 play");
  const resetBtn = h("button", { type: "button", name: "reset" }, "\u21ba reset");
  const layerSel = h("select", { name: "layer" });
  root.append(h("div", { class: "attn-controls" }, labelled("prompt", "prompt", promptIn), stepBtn, playBtn, resetBtn,
    labelled("layer", "cache of layer", layerSel)));
  const note = h("div", { class: "attn-note", role: "alert", hidden: true });
  const text = h("div", { class: "attn-gen-text", "aria-live": "polite" });
  const pred = h("div", { class: "attn-readout attn-gen-pred" });
  const fig = h("div", { class: "attn-figure" });
  root.append(note, text, pred, fig);

  let m = null, specSeen = null, run = null, timer = null;
  const modelOf = () => {
    const spec = model.get("model");
    if (spec !== specSeen) { m = loadModel(spec); specSeen = spec; }
    return m;
  };
  const maxNew = () => Math.max(1, model.get("max_new_tokens") | 0);

  function stop() {
    clearInterval(timer); timer = null;
    playBtn.setAttribute("aria-pressed", "false"); playBtn.textContent = "\u25b6 play";
  }

  /** A fresh run for the prompt typed: ids, an empty cache; null (and a visible message) if it cannot run. */
  function start() {
    stop();
    const mm = modelOf(), prompt = promptIn.value, problem = promptProblem(mm.vocab, mm.config.max_len, prompt, maxNew());
    note.hidden = !problem; note.textContent = problem;
    root.dataset.valid = String(!problem);
    if (problem) { run = null; draw(); return; }
    if (prompt !== model.get("prompt")) { model.set("prompt", prompt); model.save_changes(); }
    run = { ids: encodeText(mm, prompt), cache: newCache(mm), out: [], probs: null, weights: null, P: [...prompt].length };
    draw();
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
      pred.textContent = `step ${done}: picked ${JSON.stringify(shown(run.out[done - 1]))}; most likely: ` +
        top.map(([p, i]) => `${JSON.stringify(shown(i))} ${(100 * p).toFixed(1)}%`).join(", ");
    } else {
      pred.textContent = `Press step: the prompt's ${run.P} characters go through the model at once and fill the cache.`;
    }
    fig.replaceChildren(cacheFigure(mm, layer, shown));
  }

  /** Keys and values cached by one layer, a row per position (heads side by side), and the newest query's weights. */
  function cacheFigure(mm, layer, shown) {
    const c = mm.config, D = c.d_model, H = c.num_heads, store = run.cache.layers[layer], S = run.cache.length;
    const lab = 26, gap = 12, bars = 48, W = lab + 2 * D * CELL + 2 * gap + bars, top = 30, Ht = top + Math.max(1, S) * ROW + 8;
    const svg = s("svg", { class: "attn-svg attn-gen-cache", width: W, height: Ht, viewBox: `0 0 ${W} ${Ht}`, "font-family": FONT,
      "font-size": 10, role: "img", "aria-label": `KV cache of layer ${layer + 1}: ${S} positions, keys and values of ${H} heads` });
    const xk = lab, xv = lab + D * CELL + gap, xb = xv + D * CELL + gap;
    svg.append(s("rect", { width: W, height: Ht, fill: "#fff" }),
      s("text", { x: xk, y: 12, "font-weight": 600, fill: "#333" }, `keys (${H} heads)`),
      s("text", { x: xv, y: 12, "font-weight": 600, fill: "#333" }, "values"),
      s("text", { x: xb, y: 12, "font-weight": 600, fill: "#333" }, "weight"),
      s("text", { x: xk, y: 24, fill: "#666" }, `layer ${layer + 1}, ${S} row${S === 1 ? "" : "s"}`));
    let vmax = 1e-9;
    for (const side of [store.k, store.v]) for (const head of side) for (const r of head) for (const x of r) vmax = Math.max(vmax, Math.abs(x));
    const colour = (x) => {
      const t = Math.max(-1, Math.min(1, x / vmax)), end = t < 0 ? [33, 102, 172] : [178, 24, 43];
      return `rgb(${[247, 247, 247].map((a, k) => Math.round(a + (end[k] - a) * Math.abs(t))).join(",")})`;
    };
    const ids = run.ids.concat(run.out);
    const w = run.weights ? run.weights[layer] : null;
    for (let p = 0; p < S; p++) {
      const y = top + p * ROW, newest = p === S - 1;
      const g = s("g", { class: "attn-gen-row", "data-pos": p, "data-char": shown(ids[p]) });
      g.append(s("text", { x: lab - 4, y: y + ROW - 1, "text-anchor": "end", fill: newest ? "#111" : "#777", "font-size": 8 },
        shown(ids[p]) === " " ? "\u2423" : shown(ids[p])));
      for (const [x0, side] of [[xk, store.k], [xv, store.v]]) {
        for (let hd = 0; hd < H; hd++) {
          side[hd][p].forEach((x, e) => g.append(s("rect", { x: x0 + (hd * side[hd][p].length + e) * CELL, y, width: CELL, height: ROW - 1, fill: colour(x) })));
        }
      }
      if (w) {
        const mean = w.reduce((a, row) => a + (row[p] || 0), 0) / H;
        g.append(s("rect", { class: "attn-gen-weight", x: xb, y, width: Math.max(0.5, mean * bars), height: ROW - 1, fill: "#2f6db3",
          "data-weight": mean.toFixed(6) }));
      }
      if (newest) g.append(s("rect", { x: xk - 1, y: y - 0.5, width: xb - xk - gap + 2, height: ROW, fill: "none", stroke: "#f29d0f" }));
      svg.append(g);
    }
    return svg;
  }

  promptIn.value = model.get("prompt") || "";
  promptIn.addEventListener("input", start);
  stepBtn.addEventListener("click", () => { stop(); step(); });
  resetBtn.addEventListener("click", start);
  layerSel.addEventListener("change", draw);
  playBtn.addEventListener("click", () => {
    if (timer) return stop();
    if (!run || run.out.length >= maxNew()) start();
    if (!run) return;
    playBtn.setAttribute("aria-pressed", "true"); playBtn.textContent = "\u275a\u275a pause";
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
    note.hidden = false; note.textContent = `The model could not run here: ${e.message}`;
    text.replaceChildren(h("span", {}, model.get("prompt") || ""), h("span", { class: "attn-gen-new" }, model.get("generated") || ""));
  }
  return () => { stop(); Object.entries(handlers).forEach(([ev, f]) => model.off(ev, f)); };
}

export default { render };
