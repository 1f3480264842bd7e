// DOM helpers of the explorers' front ends. Not a module of its own: attn/widgets/_state.py
// (front_end) puts this file in front of each explorer's module, because a widget's ES module
// travels as one string in the saved widget state (JupyterLab, Colab and the static book load it
// from there), where an import of a sibling file has nothing to resolve against.

const SVGNS = "http://www.w3.org/2000/svg";
const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

/** An HTML element; text is always a text node: data is never parsed as HTML. */
function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v == null) continue;
    if (k === "class") e.className = v; else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) e.append(k);
  return e;
}

/** An SVG element, with optional text content. */
function s(tag, attrs = {}, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

/** A labelled control of the controls bar: its text, then the inputs; data-control names it. */
function labelled(key, text, ...controls) {
  return h("label", { class: "attn-field", "data-control": key }, h("span", {}, text), ...controls);
}

// ----- numbers the reader types (the live explorers). LIMIT is _state.LIMIT on the Python side.
const LIMIT = 1000;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A typed number: {value} or {error} ("is empty", "is not a number", "is outside -1000..1000"). */
function parseNumber(text) {
  const t = String(text).trim().replace(/\u2212/g, "-");  // a typographic minus is a minus
  if (t === "") return { error: "is empty" };
  if (!NUMBER.test(t)) return { error: "is not a number" };
  const value = Number(t);
  if (!(Math.abs(value) <= LIMIT)) return { error: `is outside -${LIMIT}..${LIMIT}` };
  return { value };
}

/** A comma- or space-separated list of numbers: {values} or {error} naming the first bad entry. */
function parseList(text) {
  const parts = String(text).split(/[,;\s]+/).filter((p) => p !== "");
  if (!parts.length) return { error: "is empty" };
  const values = [];
  for (const [n, p] of parts.entries()) {
    const r = parseNumber(p);
    if (r.error) return { error: `entry ${n + 1} ("${p}") ${r.error}` };
    values.push(r.value);
  }
  return { values };
}

/** A number as the live explorers show it: 3 decimals, no "-0.000". */
function fixed(v, digits = 3) {
  const t = v.toFixed(digits);
  return /^-0\.?0*$/.test(t) ? t.slice(1) : t;
}
