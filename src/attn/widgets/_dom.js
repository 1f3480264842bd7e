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
