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

// ----- the explorers' words in the reader's language
//
// Every text a reader sees or hears (labels, buttons, titles, aria-labels, hover texts, messages,
// legends) is English in the code and goes through tr = words(lang): tr(text, {q: 3, k: 5}) with text
// a literal such as "query {q} \u2192 key {k}" (each {name} filled from the object).
// ZH (English -> Chinese) comes from strings_zh.json: front_end (attn/book/widgets/_state.py) writes, in
// front of this file, the entries whose English this module has as a string literal. A text kept for
// later (a table of labels) is marked with N_ so the tests find it; it is translated where it is shown.
// The language is the widget's lang trait (Python: attn.set_language / ATTN_LANG); on the static site
// the page's <html lang> wins (static_runtime.js).

/** The translation function of language `lang` ("en", "zh", "zh-CN", ...): English when there is no table. */
function words(lang) {
  const table = /^zh\b/i.test(String(lang || "")) && typeof ZH !== "undefined" ? ZH : {};
  return (text, args = {}) => (Object.prototype.hasOwnProperty.call(table, text) ? table[text] : text)
    .replace(/\{(\w+)\}/g, (m, k) => (k in args ? String(args[k]) : m));
}

/** The language tag of an explorer's root element (lang="zh-CN" or "en"): screen readers voice it in that
 * language, and the style sheet can set its text (:lang(zh)) even in a notebook whose page is English. */
function langTag(lang) {
  return /^zh\b/i.test(String(lang || "")) ? "zh-CN" : "en";
}

/** Marks an English text that is translated later, where it is shown (tr(LABELS[k])). */
function N_(text) {
  return text;
}

/** A labelled control of the controls bar: its text, then the inputs; data-control names it. */
function labelled(key, text, ...controls) {
  return h("label", { class: "attn-field", "data-control": key }, h("span", {}, text), ...controls);
}

// ----- numbers the reader types (the live explorers). LIMIT is _state.LIMIT on the Python side.
const LIMIT = 1000;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A typed number: {value} or {error} ("is empty", "is not a number", "is outside -1000..1000"), in tr's language. */
function parseNumber(text, tr = words("en")) {
  const t = String(text).trim().replace(/\u2212/g, "-");  // a typographic minus is a minus
  if (t === "") return { error: tr("is empty") };
  if (!NUMBER.test(t)) return { error: tr("is not a number") };
  const value = Number(t);
  if (!(Math.abs(value) <= LIMIT)) return { error: tr("is outside -{limit}..{limit}", { limit: LIMIT }) };
  return { value };
}

/** A comma- or space-separated list of numbers: {values} or {error} naming the first bad entry. */
function parseList(text, tr = words("en")) {
  const parts = String(text).split(/[,;\s]+/).filter((p) => p !== "");
  if (!parts.length) return { error: tr("is empty") };
  const values = [];
  for (const [n, p] of parts.entries()) {
    const r = parseNumber(p, tr);
    if (r.error) return { error: tr("entry {n} (\"{text}\") {error}", { n: n + 1, text: p, error: r.error }) };
    values.push(r.value);
  }
  return { values };
}

/** A number as the live explorers show it: 3 decimals, no "-0.000". */
function fixed(v, digits = 3) {
  const t = v.toFixed(digits);
  return /^-0\.?0*$/.test(t) ? t.slice(1) : t;
}
