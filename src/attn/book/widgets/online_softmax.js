// OnlineSoftmaxExplorer front end (anywidget ES module): one query's tiled pass, block by block.
// _dom.js (h, labelled, parseList, parseNumber, fixed) and _nn.js (onlineSoftmaxSteps, attention) are
// put in front of this file when it is loaded: see _state.front_end. Self-contained, no network.

/** Attention over all keys at once for one query: softmax(scores) . values (q = [1], k_j = [s_j], scale 1). */
export function fullOutput(scores, values) {
  return attention([[1]], scores.map((s) => [s]), values.map((v) => [v]), { scale: 1 }).out[0][0];
}

/** onlineSoftmaxSteps, each step with estimate = a / ell and difference = estimate - fullOutput. */
export function steppedPass(scores, values, blockSize) {
  const full = fullOutput(scores, values);
  return onlineSoftmaxSteps(scores, values, blockSize).map((st) => ({ ...st, estimate: st.a / st.ell, difference: st.a / st.ell - full }));
}

const BLOCK_COLOURS = ["#e9eef5", "#fdebd3"];
const sci = (v) => (v === 0 ? "0" : Math.abs(v) < 1e-3 ? v.toExponential(1) : fixed(v));

function render({ model, el }) {
  const tr = words(model.get("lang"));
  const root = h("div", { class: "attn-w attn-live attn-online", lang: langTag(model.get("lang")) });
  el.append(root);
  const scoresIn = h("input", { type: "text", name: "scores", inputmode: "decimal", "aria-label": tr("scores, one per key") });
  const valuesIn = h("input", { type: "text", name: "values", inputmode: "decimal", "aria-label": tr("values, one per key") });
  const blockIn = h("input", { type: "number", name: "block_size", min: 1, step: 1, "aria-label": tr("keys per block") });
  const message = h("div", { class: "attn-note", role: "alert", hidden: true });
  const btn = (name, text, title) => h("button", { type: "button", name, title }, text);
  const first = btn("first", tr("\u00ab start"), tr("back to the start")), back = btn("back", tr("\u25c0 back"), tr("one block back"));
  const next = btn("next", tr("step \u25b6"), tr("next block")), last = btn("last", tr("end \u00bb"), tr("all blocks"));
  const where = h("output", { class: "attn-where" });
  root.append(
    h("div", { class: "attn-controls attn-lists" }, labelled("scores", tr("scores"), scoresIn), labelled("values", tr("values"), valuesIn),
      labelled("block_size", tr("block size"), blockIn)),
    message,
    h("div", { class: "attn-controls" }, first, back, next, last, where));
  const keys = h("div", { class: "attn-keys", role: "img" });
  const now = h("div", { class: "attn-step", tabindex: 0, "aria-live": "polite",
    "aria-label": tr("the current block; left and right arrow keys step") });
  const history = h("div", { class: "attn-figure" });
  root.append(keys, now, history);

  let last_ = null;  // the last valid input: {scores, values, blockSize}

  const put = (changes) => { for (const [k, v] of Object.entries(changes)) model.set(k, v); model.save_changes(); };
  const nBlocks = (d) => Math.ceil(d.scores.length / d.blockSize);

  /** Read the three fields: {scores, values, blockSize} or null with the message shown. */
  function readFields() {
    const s = parseList(scoresIn.value, tr), v = parseList(valuesIn.value, tr), b = parseNumber(blockIn.value, tr);
    let problem = s.error ? tr("scores: {error}", { error: s.error }) : v.error ? tr("values: {error}", { error: v.error }) : null;
    let lists = false, block = false;  // which fields the problem is about, besides a bad entry of a list
    if (!problem && s.values.length !== v.values.length) {
      problem = tr("scores has {n} numbers but values has {m}: give one value per key", { n: s.values.length, m: v.values.length });
      lists = true;
    } else if (!problem && s.values.length > 32) {
      problem = tr("scores has {n} keys: at most 32", { n: s.values.length });
      lists = true;
    } else if (!problem && (b.error || !Number.isInteger(b.value) || b.value < 1 || b.value > s.values.length)) {
      problem = tr("block size: \"{text}\" must be a whole number from 1 to {n} (the number of keys)", { text: blockIn.value, n: s.values.length });
      block = true;
    }
    scoresIn.setAttribute("aria-invalid", s.error || lists ? "true" : "false");
    valuesIn.setAttribute("aria-invalid", v.error || lists ? "true" : "false");
    blockIn.setAttribute("aria-invalid", block ? "true" : "false");
    message.hidden = !problem;
    message.textContent = problem ? tr("Not updated: {problem}. The steps below are for the last valid input.", { problem }) : "";
    root.dataset.state = problem ? "invalid" : "ok";
    return problem ? null : { scores: s.values, values: v.values, blockSize: b.value };
  }

  function edited() {
    const d = readFields();
    if (!d) return;
    const step = Math.min(model.get("step"), nBlocks(d));
    draw(d, step);
    put({ scores: d.scores, values: d.values, block_size: d.blockSize, step });
  }

  function go(step) {
    if (!last_) return;
    const s = Math.max(0, Math.min(nBlocks(last_), step));
    draw(last_, s);
    put({ step: s });
  }

  function draw(d, step) {
    let steps, full;
    try {
      steps = steppedPass(d.scores, d.values, d.blockSize);
      full = fullOutput(d.scores, d.values);
    } catch (err) {  // readFields lets nothing through that throws; this keeps the page whole if it ever did
      message.textContent = tr("Cannot compute: {error}.", { error: err.message });
      message.hidden = false;
      root.dataset.state = "invalid";
      return;
    }
    last_ = d;
    const n = steps.length;
    where.textContent = tr("{step} of {n} blocks done", { step, n });
    first.disabled = back.disabled = step === 0;
    next.disabled = last.disabled = step === n;
    keys.setAttribute("aria-label", tr("{keys} keys in {n} blocks of {size}", { keys: d.scores.length, n, size: d.blockSize }));
    keys.replaceChildren(...d.scores.map((s, j) => {
      const b = Math.floor(j / d.blockSize), state = b < step - 1 ? "done" : b === step - 1 ? "current" : "pending";
      return h("div", { class: `attn-key attn-key-${state}`, style: `background:${BLOCK_COLOURS[b % 2]}`, "data-block": b },
        h("div", {}, tr("key {j}", { j: j + 1 })), h("div", {}, `s = ${fixed(s, 2)}`), h("div", {}, `v = ${fixed(d.values[j], 2)}`));
    }));
    if (step === 0) {
      now.replaceChildren(h("p", {}, tr("Nothing processed yet: m = \u2212\u221e, \u2113 = 0, a = 0. Step to take the first block.")));
      Object.assign(now.dataset, { step: 0, m: "-Infinity", ell: 0, a: 0, full: String(full) });
      delete now.dataset.estimate; delete now.dataset.difference; delete now.dataset.rescale;
    } else {
      const st = steps[step - 1], r = fixed(st.rescale), rose = step > 1 && st.m > st.m_old;
      now.replaceChildren(h("div", { class: "attn-panel-title" }, tr("block {b}: keys {from}\u2013{to}", { b: step, from: st.start + 1, to: Math.min(st.start + d.blockSize, d.scores.length) })),
        h("dl", { class: "attn-dl" },
          h("dt", {}, tr("running max m")), h("dd", {}, step > 1 ? `${fixed(st.m_old)} \u2192 ${fixed(st.m)}${rose ? tr(" (rose)") : ""}` : fixed(st.m)),
          h("dt", {}, tr("rescale e^(m_old \u2212 m)")), h("dd", {}, step > 1 ? r : tr("\u2013 (nothing carried)")),
          h("dt", {}, tr("running sum \u2113")), h("dd", {}, `${step > 1 ? `${r} \u00d7 ${fixed(st.ell_old)} + ` : ""}${fixed(st.block_ell)} = ${fixed(st.ell)}`),
          h("dt", {}, tr("output so far a")), h("dd", {}, `${step > 1 ? `${r} \u00d7 ${fixed(st.a_old)} + ` : ""}${fixed(st.block_a)} = ${fixed(st.a)}`),
          h("dt", {}, tr("estimate a / \u2113")), h("dd", {}, fixed(st.estimate, 4)),
          h("dt", {}, tr("full attention (all keys)")), h("dd", {}, fixed(full, 4)),
          h("dt", {}, tr("difference")), h("dd", {}, sci(st.difference))));
      Object.assign(now.dataset, { step, m: String(st.m), ell: String(st.ell), a: String(st.a), rescale: String(st.rescale),
        estimate: String(st.estimate), difference: String(st.difference), full: String(full) });
    }
    const head = h("tr", {}, ...[tr("block"), "m", tr("rescale"), "\u2113", "a", "a / \u2113", tr("\u2212 full")].map((c) => h("th", { scope: "col" }, c)));
    const rows = steps.slice(0, step).map((st, b) => h("tr", { "data-block": b, "data-m": String(st.m), "data-rescale": String(st.rescale),
      "data-ell": String(st.ell), "data-a": String(st.a), "data-estimate": String(st.estimate), "data-difference": String(st.difference) },
    h("th", { scope: "row" }, String(b + 1)), ...[st.m, st.rescale, st.ell, st.a, st.estimate].map((v) => h("td", {}, fixed(v))),
    h("td", {}, sci(st.difference))));
    history.replaceChildren(h("table", { class: "attn-matrix attn-history" }, h("thead", {}, head), h("tbody", {}, ...rows)));
    Object.assign(root.dataset, { step, blocks: n, keys: d.scores.length, blockSize: d.blockSize });
    root.dataset.drawn = String((Number(root.dataset.drawn) || 0) + 1);  // tests wait on it
  }

  function fromModel() {
    const active = root.ownerDocument.activeElement;
    const list = (xs) => xs.map((x) => String(x)).join(", ");
    const same = (input, xs) => { const r = parseList(input.value); return r.values && r.values.length === xs.length && r.values.every((x, j) => x === xs[j]); };
    if (scoresIn !== active && !same(scoresIn, model.get("scores"))) scoresIn.value = list(model.get("scores"));
    if (valuesIn !== active && !same(valuesIn, model.get("values"))) valuesIn.value = list(model.get("values"));
    if (blockIn !== active) blockIn.value = String(model.get("block_size"));
    blockIn.max = model.get("scores").length;
    const d = readFields();
    if (d) draw(d, Math.max(0, Math.min(nBlocks(d), model.get("step") | 0)));
  }

  for (const input of [scoresIn, valuesIn, blockIn]) input.addEventListener("input", edited);
  first.addEventListener("click", () => go(0));
  back.addEventListener("click", () => go(model.get("step") - 1));
  next.addEventListener("click", () => go(model.get("step") + 1));
  last.addEventListener("click", () => go(Infinity));
  root.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT") return;  // arrows move the caret there
    const to = { ArrowRight: model.get("step") + 1, ArrowLeft: model.get("step") - 1, Home: 0, End: Infinity }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    go(to);
  });

  const events = ["scores", "values", "block_size", "step"].map((k) => `change:${k}`);
  events.forEach((ev) => model.on(ev, fromModel));
  fromModel();
  return () => events.forEach((ev) => model.off(ev, fromModel));
}

export default { render };
