// InductionExplorer front end (anywidget ES module): the trained two-layer attention-only model reads
// a segment of letters repeated to fill its context, in the page. Under each letter its guess for the
// next one (right or wrong); for the chosen query, one head's attention over the keys, the keys one past
// the earlier occurrences of the query's letter marked; toggles silence heads (_nn.js forward's
// headMask, as attn's MultiHeadAttention.head_mask). Self-contained: _dom.js (h, labelled) and _nn.js
// (loadModel, forward, softmaxRow, argmax) are put in front of this file (see _state.front_end). Text is
// only ever set as text, never parsed as HTML.

/** Every string the reader sees, in one place (a translation replaces this table). */
/** The words shown, in tr's language (tr = words(lang), _dom.js). */
const texts = (tr) => ({
  segment: tr("segment"),
  random: tr("random"),
  head: tr("show head"),
  previous: tr("previous-token"),
  induction: tr("induction"),
  name: (l, hd) => `L${l + 1}H${hd + 1}`,
  ablate: tr("silence heads (zero ablation)"),
  layer: (l) => tr("layer {n}", { n: l + 1 }),
  empty: tr("Type a segment: at least one letter a-z."),
  unknown: (chars) => tr("The model knows only the lowercase letters a-z, not {chars}.", { chars }),
  tooLong: (n, max) => tr("The segment has {n} letters; at most {max} (the model learned periods up to {max}).", { n, max }),
  summary: (first, repeat) => tr("Next letter guessed right: first pass {a} of {b}, repeat {c} of {d}. Mean probability " +
    "given to the right letter: {p} and {q}.", { a: first[0], b: first[1], c: repeat[0], d: repeat[1], p: first[2].toFixed(2),
    q: repeat[2].toFixed(2) }),
  role: (kind, score) => `${kind} ${score.toFixed(2)}`,
  all: tr("all"),
  key: tr("Big: the sequence, one row per pass of the segment. Small, under each letter: the model's guess for " +
    "the next letter (green: right; red, struck out: wrong)."),
  legend: tr("Shading: the chosen head's attention from the framed query to the letters up to it; dashed: the " +
    "letters that followed the query's letter before. Choose the query by a tap or the arrow keys. Under each " +
    "head: its larger score, previous-token or induction (the mean weight on the letter before, or on the letters " +
    "after earlier occurrences), measured on held-out sequences."),
  grid: tr("the sequence: choose the query with the arrow keys"),
  cell: (i, ch, g, p, right) => (right == null
    ? tr("position {i}, {ch}: guesses {g} next ({p})", { i: i + 1, ch, g, p: pct(p) })
    : right ? tr("position {i}, {ch}: guesses {g} next ({p}), right", { i: i + 1, ch, g, p: pct(p) })
      : tr("position {i}, {ch}: guesses {g} next ({p}), wrong", { i: i + 1, ch, g, p: pct(p) })),
  query: (i, ch, g, p, right) => (right == null
    ? tr("Query {i}, \"{ch}\": the model guesses \"{g}\" next ({p}).", { i: i + 1, ch, g, p: pct(p) })
    : right ? tr("Query {i}, \"{ch}\": the model guesses \"{g}\" next ({p}), right.", { i: i + 1, ch, g, p: pct(p) })
      : tr("Query {i}, \"{ch}\": the model guesses \"{g}\" next ({p}), wrong.", { i: i + 1, ch, g, p: pct(p) })),
  attends: (name, j, ch, w) => tr(" {name} attends most to {j}, \"{ch}\" ({w})", { name, j: j + 1, ch, w: pct(w) }),
  target: (ch, w) => tr("; on the letters after earlier \"{ch}\": {w}.", { ch, w: pct(w) }),
  first: tr(". This letter has not occurred before: there is nothing to copy yet."),
  silenced: tr(" This head is silenced: it still computes its weights, but its output is set to zero."),
  failed: (msg) => tr("The model could not run here: {msg}", { msg }),
  described: (grid, said) => tr("{grid}. {said}", { grid, said }),
});
const ENGLISH = texts(words("en"));

function pct(p) {
  return `${(100 * p).toFixed(0)}%`;
}

const LETTERS = "abcdefghijklmnopqrstuvwxyz";

/** What is wrong with a typed segment, as the sentence shown ("" when it can be read). */
export function segmentProblem(segment, max = 20, TEXT = ENGLISH) {
  if (!segment.length) return TEXT.empty;
  const unknown = [...new Set([...segment].filter((c) => !LETTERS.includes(c)))];
  if (unknown.length) return TEXT.unknown(unknown.map((c) => JSON.stringify(c)).join(", "));
  if (segment.length > max) return TEXT.tooLong(segment.length, max);
  return "";
}

/** `segment` repeated to fill `length` positions: token i is segment[i % n]. */
export function repeatTo(segment, length) {
  return Array.from({ length }, (_, i) => segment[i % segment.length]).join("");
}

/** A random segment of 8 to 12 distinct letters, the same for the same seed (mulberry32). */
export function randomSegment(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pool = [...LETTERS], n = 8 + Math.floor(next() * 5);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(next() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n).join("");
}

/** [[layer, head], ...] silenced -> the headMask of _nn.js's forward: number[layers][heads], 0 = silenced. */
export function headMaskOf(ablated, layers, heads) {
  const mask = Array.from({ length: layers }, () => new Array(heads).fill(1));
  for (const [l, hd] of ablated) mask[l][hd] = 0;
  return mask;
}

/**
 * The model reading `text` with the heads in `ablated` silenced: every layer's and head's weights
 * [layer][head] (L, L), after each position the next-letter probabilities (L, V), the top guess
 * (ids), and whether the guess after position i is the letter at i + 1 (L - 1 booleans).
 */
export function readSequence(m, text, ablated = []) {
  const ids = [...text].map((c) => LETTERS.indexOf(c)), { num_layers: L, num_heads: H } = m.config;
  const r = forward(m, ids, { headMask: ablated.length ? headMaskOf(ablated, L, H) : null });
  const probs = r.logits.map(softmaxRow), guesses = probs.map(argmax);
  return { ids, attention: r.attention, probs, guesses, right: ids.slice(1).map((t, i) => guesses[i] === t) };
}

/** The keys j <= query one past an earlier occurrence of the query's letter (text[j - 1] === text[query]). */
export function successors(text, query) {
  const out = [];
  for (let j = 1; j <= query; j++) if (text[j - 1] === text[query]) out.push(j);
  return out;
}

/**
 * The guesses made in the first pass (queries i < n) and in the repeat (n <= i < L - 1): [right, of, the
 * mean probability given to the right letter], from readSequence's reading.
 */
export function accuracy(look, n) {
  const part = (from, to) => {
    let right = 0, p = 0;
    for (let i = from; i < to; i++) { right += look.right[i] ? 1 : 0; p += look.probs[i][look.ids[i + 1]]; }
    return [right, to - from, to > from ? p / (to - from) : 0];
  };
  const last = look.ids.length - 1;
  return { first: part(0, Math.min(n, last)), repeat: part(Math.min(n, last), last) };
}

/** For tests under node: readSequence from the model's JSON, for the segment repeated to the context. */
export function inductionReading(spec, segment, ablated = []) {
  const m = loadModel(spec), r = readSequence(m, repeatTo(segment, m.config.max_len), ablated);
  return { attention: r.attention, probs: r.probs, right: r.right, accuracy: accuracy(r, segment.length) };
}

function render({ model, el }) {
  const TEXT = texts(words(model.get("lang")));
  const root = h("div", { class: "attn-w attn-ind-explorer", lang: langTag(model.get("lang")) });
  el.append(root);
  const segIn = h("input", { type: "text", name: "segment", spellcheck: "false", autocomplete: "off",
    autocapitalize: "none", size: 20 });
  const randomBtn = h("button", { type: "button", name: "random" }, TEXT.random);
  const headSel = h("select", { name: "head" });
  root.append(h("div", { class: "attn-controls" }, labelled("segment", TEXT.segment, segIn), randomBtn,
    labelled("head", TEXT.head, headSel)));
  const note = h("div", { class: "attn-note", role: "alert", hidden: true });
  const summary = h("div", { class: "attn-readout attn-ind-summary", "aria-live": "polite" });
  const grid = h("div", { class: "attn-ind-seq", tabindex: "0", role: "group", "aria-label": TEXT.grid });
  const said = h("div", { class: "attn-readout attn-ind-said", "aria-live": "polite" });
  const key = h("div", { class: "attn-readout attn-ind-key" }, TEXT.key);
  const legend = h("div", { class: "attn-readout attn-ind-legend" }, TEXT.legend);
  const ablate = h("fieldset", { class: "attn-ind-ablate" }, h("legend", {}, TEXT.ablate));
  root.append(note, summary, key, grid, said, ablate, legend);

  let m = null, specSeen = null, look = null, text = "", n = 0, query = 0, cells = [], boxes = [], writing = false;
  const modelOf = () => {
    const spec = model.get("model");
    if (spec !== specSeen) { m = loadModel(spec); specSeen = spec; }
    return m;
  };
  const heads = () => model.get("heads") || {};
  const ablated = () => boxes.filter((b) => b.checked).map((b) => [+b.dataset.layer, +b.dataset.head]);
  /** A head's measured role: the larger of its two scores (Python's head_scores), e.g. "induction 0.77". */
  const tag = (l, hd) => {
    const k = heads(), p = k.previous_scores, s = k.induction_scores;
    if (!p || !s) return "";
    return p[l][hd] >= s[l][hd] ? TEXT.role(TEXT.previous, p[l][hd]) : TEXT.role(TEXT.induction, s[l][hd]);
  };
  const best = (l, hd) => [heads().previous, heads().induction].some((b) => Array.isArray(b) && b[0] === l && b[1] === hd);
  const nameOf = (l, hd) => TEXT.name(l, hd) + (tag(l, hd) ? ` ${tag(l, hd)}` : "");
  let layerBoxes = [];
  /** Each layer's "all" box: checked when all its heads are silenced, mixed when some are. */
  const syncLayers = () => layerBoxes.forEach((lb) => {
    const mine = boxes.filter((b) => b.dataset.layer === lb.dataset.layer), on = mine.filter((b) => b.checked).length;
    lb.checked = on === mine.length; lb.indeterminate = on > 0 && on < mine.length;
  });

  /** The head selector and the ablation toggles, one per layer and head, named as Python measured them. */
  function buildHeads() {
    const { num_layers: L, num_heads: H } = modelOf().config, k = heads();
    const first = (k.induction || [L - 1, 0]), options = [];
    for (let l = 0; l < L; l++) for (let hd = 0; hd < H; hd++) options.push(h("option", { value: `${l},${hd}` }, nameOf(l, hd)));
    headSel.replaceChildren(...options);
    headSel.value = `${first[0]},${first[1]}`;
    const off = new Set((model.get("ablated") || []).map(([l, hd]) => `${l},${hd}`));
    boxes = [];
    layerBoxes = [];
    const rows = Array.from({ length: L }, (_, l) => {
      const all = h("input", { type: "checkbox", name: "ablate-layer", "data-layer": l });
      layerBoxes.push(all);
      return h("div", { class: "attn-ind-layer" },
        h("label", { class: "attn-ind-toggle" }, all, h("span", {}, TEXT.layer(l), " ", h("small", {}, TEXT.all))),
        ...Array.from({ length: H }, (_, hd) => {
          const box = h("input", { type: "checkbox", name: "ablate", "data-layer": l, "data-head": hd });
          box.checked = off.has(`${l},${hd}`);
          boxes.push(box);
          const kind = tag(l, hd);  // the measured role under the name; the accessible name is the text shown
          return h("label", { class: "attn-ind-toggle" + (best(l, hd) ? " attn-ind-named" : "") }, box,
            h("span", {}, TEXT.name(l, hd), ...(kind ? [" ", h("small", {}, kind)] : [])));
        }));
    });
    ablate.replaceChildren(ablate.firstChild, ...rows);
    syncLayers();
  }

  /** Read the typed segment (or show why not, keeping the last reading) and draw. */
  function compute({ resetQuery = false } = {}) {
    const mm = modelOf(), seg = segIn.value, problem = segmentProblem(seg, 20, TEXT);
    note.hidden = !problem; note.textContent = problem;
    segIn.setAttribute("aria-invalid", String(!!problem));
    root.dataset.state = problem ? "invalid" : "ok";
    if (problem) return;
    const newPeriod = seg.length !== n || !look;
    n = seg.length; text = repeatTo(seg, mm.config.max_len);
    look = readSequence(mm, text, ablated());
    if (resetQuery || newPeriod) query = Math.min(text.length - 2, n + 2);
    const mine = ablated();
    if (seg !== model.get("segment") || JSON.stringify(mine) !== JSON.stringify(model.get("ablated") || [])) {
      writing = true;  // our own change: the handlers below have nothing to do
      try { model.set("segment", seg); model.set("ablated", mine); model.save_changes(); } finally { writing = false; }
    }
    draw();
  }

  /** The sequence as rows of n letters (each row one pass), the guesses, one head's weights from the query. */
  function draw() {
    const [l, hd] = headSel.value.split(",").map(Number), W = look.attention[l][hd], row = W[query], P = text.length;
    const acc = accuracy(look, n);
    summary.textContent = TEXT.summary(acc.first, acc.repeat);
    Object.assign(root.dataset, { period: String(n), query: String(query), head: `${l},${hd}`,
      first: acc.first.slice(0, 2).join("/"), repeat: acc.repeat.slice(0, 2).join("/"),
      firstProb: String(acc.first[2]), repeatProb: String(acc.repeat[2]) });
    if (cells.length !== P || grid.dataset.period !== String(n)) {
      cells = Array.from({ length: P }, (_, i) => h("div", { class: "attn-ind-cell", "data-pos": i },
        h("span", { class: "attn-ind-tok" }), h("span", { class: "attn-ind-guess" })));
      grid.style.gridTemplateColumns = `repeat(${n}, minmax(0, 1.6em))`;
      grid.dataset.period = String(n);
      grid.replaceChildren(...cells);
    }
    const targets = new Set(successors(text, query));
    let onTargets = 0;
    for (const j of targets) onTargets += row[j];
    let best = 0;
    for (let j = 1; j <= query; j++) if (row[j] > row[best]) best = j;
    cells.forEach((c, i) => {
      const g = look.guesses[i], p = look.probs[i][g], right = i < P - 1 ? look.right[i] : null, w = i <= query ? row[i] : 0;
      c.firstChild.textContent = text[i];
      c.lastChild.textContent = LETTERS[g];
      c.lastChild.className = "attn-ind-guess" + (right == null ? "" : right ? " attn-ind-right" : " attn-ind-wrong");
      c.className = "attn-ind-cell" + (i === query ? " attn-ind-query" : "") + (targets.has(i) ? " attn-ind-target" : "") +
        (w > 0.5 ? " attn-ind-dark" : "");
      c.style.backgroundColor = w > 0.005 ? `rgba(47, 109, 179, ${(0.9 * w).toFixed(3)})` : "";
      Object.assign(c.dataset, { weight: String(w), guess: LETTERS[g], prob: String(p), right: String(right) });
      c.setAttribute("title", TEXT.cell(i, text[i], LETTERS[g], p, right));
    });
    const g = look.guesses[query];
    said.textContent = TEXT.query(query, text[query], LETTERS[g], look.probs[query][g], query < P - 1 ? look.right[query] : null) +
      TEXT.attends(nameOf(l, hd), best, text[best], row[best]) +
      (targets.size ? TEXT.target(text[query], onTargets) : TEXT.first) +
      (boxes.some((b) => b.checked && +b.dataset.layer === l && +b.dataset.head === hd) ? TEXT.silenced : "");
    grid.setAttribute("aria-label", TEXT.described(TEXT.grid, said.textContent));
  }

  function choose(i) {
    if (!look) return;
    query = Math.max(0, Math.min(text.length - 1, i));
    draw();
  }

  grid.addEventListener("click", (e) => {
    const c = e.target.closest(".attn-ind-cell");
    if (c) { choose(+c.dataset.pos); grid.focus(); }
  });
  grid.addEventListener("keydown", (e) => {
    const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -n, ArrowDown: n }[e.key];
    if (step != null) choose(query + step);
    else if (e.key === "Home") choose(0);
    else if (e.key === "End") choose(text.length - 1);
    else return;
    e.preventDefault();
  });
  segIn.addEventListener("input", () => compute());
  headSel.addEventListener("change", () => { if (look) draw(); });
  ablate.addEventListener("change", (e) => {
    if (e.target.name === "ablate-layer") {
      boxes.forEach((b) => { if (b.dataset.layer === e.target.dataset.layer) b.checked = e.target.checked; });
    }
    syncLayers();
    compute();
  });
  let clicks = 0;
  randomBtn.addEventListener("click", () => {
    clicks += 1;
    segIn.value = randomSegment(clicks * 7919 + segIn.value.length);
    compute({ resetQuery: true });
  });
  // From Python (or another view): a new segment or set of silenced heads is shown and read.
  const onSegment = () => { if (!writing && segIn.value !== model.get("segment")) { segIn.value = model.get("segment") || ""; compute(); } };
  const onAblated = () => {
    if (writing) return;
    const off = new Set((model.get("ablated") || []).map(([l, hd]) => `${l},${hd}`));
    boxes.forEach((b) => { b.checked = off.has(`${b.dataset.layer},${b.dataset.head}`); });
    syncLayers();
    compute();
  };
  const onModel = () => { buildHeads(); look = null; compute(); };
  const handlers = { "change:segment": onSegment, "change:ablated": onAblated, "change:model": onModel, "change:heads": onModel };
  Object.entries(handlers).forEach(([ev, f]) => model.on(ev, f));
  segIn.value = model.get("segment") || "";
  try {
    buildHeads();
    compute();
  } catch (e) {  // a model this front end cannot load: say so, and show Python's guesses as text
    note.hidden = false; note.textContent = TEXT.failed(e.message);
    root.dataset.state = "failed";
    summary.textContent = `${repeatTo(model.get("segment") || "?", 40)} \u2192 ${model.get("guesses") || ""}`;
  }
  return () => Object.entries(handlers).forEach(([ev, f]) => model.off(ev, f));
}

export default { render };
