// Typesets the book's formulas once, when the site is built (_ext/attn_maths.py runs this once per edition).
//
// stdin:  {"pages": [{"page": "book/x.html", "fontURL": "../_static/...", "scale": 1.195, "formulas": [{"tex": "...", "display": false}, ...]}, ...]}
// stdout: {"pages": [{"page": ..., "html": ["<mjx-container ...>", ...], "css": "..."}], "errors": [{"page", "tex", "message"}]}
//
// The same MathJax (3.2.2) that pages loaded in the browser before, run here with its own HTML-free
// adaptor: TeX in, CHTML out, with the assistive MathML copy (mjx-assistive-mml) that the browser
// build adds for screen readers. Each page gets its own document, so its stylesheet holds only the
// glyphs that page draws (CHTML's adaptive CSS).
"use strict";

const { mathjax } = require("mathjax-full/js/mathjax.js");
const { TeX } = require("mathjax-full/js/input/tex.js");
const { CHTML } = require("mathjax-full/js/output/chtml.js");
const { liteAdaptor } = require("mathjax-full/js/adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = require("mathjax-full/js/handlers/html.js");
const { AssistiveMmlHandler } = require("mathjax-full/js/a11y/assistive-mml.js");
require("mathjax-full/js/input/tex/AllPackages.js"); // registers every package's configuration

// The browser build has base, ams, newcommand and configmacros, and loads the packages below the first
// time a page uses one of their macros (its autoload extension). Here they are all loaded up front: the
// same macros mean the same thing. Not loaded: noundefined (in the browser an unknown macro is drawn in
// red; here it is a TeX error, so it fails the build) and require/autoload (nothing to load on demand).
const PACKAGES = [
  "base", "ams", "newcommand", "configmacros",
  "action", "amscd", "bbox", "boldsymbol", "braket", "bussproofs", "cancel", "cases", "centernot", "color",
  "colortbl", "empheq", "enclose", "extpfeil", "gensymb", "html", "mathtools", "mhchem", "upgreek", "unicode",
  "verb",
];

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

// The text of the first mjx-merror in a rendered formula (MathJax's message for a TeX error), or null.
function texError(adaptor, node) {
  const errors = adaptor.tags(node, "mjx-merror");
  if (!errors.length) return null;
  return adaptor.getAttribute(errors[0], "data-mjx-error") || adaptor.textContent(errors[0]);
}

function renderPage(adaptor, page, errors) {
  const tex = new TeX({ packages: PACKAGES });
  // matchFontHeight needs the page's own font metrics, which only a browser has; `scale` is set by the
  // caller from what the browser build measured on the book's text font.
  const chtml = new CHTML({ fontURL: page.fontURL, adaptiveCSS: true, matchFontHeight: false, scale: page.scale || 1 });
  const doc = mathjax.document("", { InputJax: tex, OutputJax: chtml });
  const html = page.formulas.map(({ tex: source, display }) => {
    let node;
    try {
      node = doc.convert(source, { display });
    } catch (err) {
      errors.push({ page: page.page, tex: source, message: String(err && err.message ? err.message : err) });
      return "";
    }
    const error = texError(adaptor, node);
    if (error) errors.push({ page: page.page, tex: source, message: error });
    return adaptor.outerHTML(node);
  });
  const css = adaptor.textContent(chtml.styleSheet(doc));
  return { page: page.page, html, css };
}

async function main() {
  const request = JSON.parse(await readStdin());
  const adaptor = liteAdaptor();
  AssistiveMmlHandler(RegisterHTMLHandler(adaptor));
  const errors = [];
  const pages = request.pages.map((page) => renderPage(adaptor, page, errors));
  process.stdout.write(JSON.stringify({ pages, errors }));
}

main().catch((err) => {
  process.stderr.write(`mathjax_render: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
