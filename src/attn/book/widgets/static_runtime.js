// The widget runtime of the static book: renders the anywidget explorers of a page from the widget
// state saved for it, with no kernel, no require.js and no generic widget bundle.
//
// myst-nb saves the state of every widget model of a page in one
//   <script type="application/vnd.jupyter.widget-state+json">{"state": {model_id: {model_module,
//     model_name, state: {...traits, _esm, _css}}}, ...}</script>
// and puts one <script type="application/vnd.jupyter.widget-view+json">{"model_id": ...}</script> where
// each widget is shown. On the built site the state tag is empty and names a file of the site instead
// (data-url="../_static/widget-state/<page>-<hash>.json", written by _ext/attn_widget_state.py), so the
// page paints without waiting for it; this module fetches that file, from the page's own host, when an
// explorer first nears the screen. For each view of an anywidget model (model_module "anywidget") it puts an
// element in front of the view tag, adds the widget's style sheet (_css) once, imports the widget's
// own ES module (_esm, the source text the notebook saved) and calls its render({model, el}) with the
// small model below: the part of the anywidget model API a widget uses (get, set, on, off,
// save_changes, send). Views of the same model share one model, as in Jupyter, so they stay in step.
// Other models (ipywidgets' own, e.g. the LayoutModel each widget refers to) are not drawn.
//
// In a browser each view is drawn when it comes within a screen of the viewport, and the rest from
// 2.5 s after the load, one per idle moment (a reader who jumps to a link, a search for text in an
// explorer, a folded section opened later): the first paint waits for neither the state nor the explorers.
//
// JupyterLab and Colab keep anywidget's own runtime; this file serves only the static site (scripts/
// assets.py copies it to _static/widgets/runtime.js; nb_ipywidgets_js loads it on pages with widgets).

export const STATE_TYPE = "application/vnd.jupyter.widget-state+json";
export const VIEW_TYPE = "application/vnd.jupyter.widget-view+json";

/** Deep equality of JSON values: a set that changes nothing fires no event (as Backbone's set). */
export function same(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return Number.isNaN(a) && Number.isNaN(b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && same(a[k], b[k]));
}

/**
 * A widget model held in the page: the saved traits, change events, and no kernel behind it.
 *
 * set(key, value) or set({key: value, ...}) stores the values and, for each that differs from the
 * one held, calls the "change:key" listeners with (model, value), then the "change" listeners once
 * with (model). on/off take one event name or several separated by spaces. save_changes and send
 * have no kernel to reach: they only count (save_changes also records the keys set since the last
 * call), so a test can see a widget use them.
 */
export class Model {
  constructor(state = {}, { id = "", models = null } = {}) {
    this.id = id;
    this._state = { ...state };
    this._listeners = new Map();
    this._unsaved = new Set();
    this.saves = [];
    this.sent = [];
    // anywidget's model.widget_manager: here, a way to reach another model of the page by its id
    // (a trait holding "IPY_MODEL_<id>" refers to one).
    this.widget_manager = {
      get_model: async (ref) => {
        const m = models && models.get(String(ref).replace(/^IPY_MODEL_/, ""));
        if (!m) throw new Error(`no widget model ${ref} in this page`);
        return m;
      },
    };
  }

  get(key) {
    return this._state[key];
  }

  set(key, value) {
    const changes = typeof key === "object" && key !== null ? key : { [key]: value };
    const changed = [];
    for (const [k, v] of Object.entries(changes)) {
      this._unsaved.add(k);
      if (same(this._state[k], v)) continue;
      this._state[k] = v;
      changed.push(k);
    }
    for (const k of changed) this._emit(`change:${k}`, this, this._state[k]);
    if (changed.length) this._emit("change", this);
  }

  save_changes() {
    this.saves.push([...this._unsaved]);
    this._unsaved.clear();
  }

  send(content, callbacks, buffers) {
    this.sent.push({ content, buffers: buffers || [] });
  }

  on(names, callback) {
    for (const name of String(names).split(/\s+/).filter(Boolean)) {
      if (!this._listeners.has(name)) this._listeners.set(name, []);
      this._listeners.get(name).push(callback);
    }
  }

  off(names, callback) {
    if (names == null) {
      if (callback == null) this._listeners.clear();
      else for (const [name, fs] of this._listeners) this._listeners.set(name, fs.filter((f) => f !== callback));
      return;
    }
    for (const name of String(names).split(/\s+/).filter(Boolean)) {
      const fs = this._listeners.get(name) || [];
      this._listeners.set(name, callback == null ? [] : fs.filter((f) => f !== callback));
    }
  }

  _emit(name, ...args) {
    for (const f of (this._listeners.get(name) || []).slice()) f(...args);
  }
}

/** The widget's module: an anywidget module exports default {render, initialize} or a function returning it. */
export async function widgetOf(mod) {
  const d = mod && "default" in mod ? mod.default : mod;
  const w = typeof d === "function" ? await d() : d;
  if (!w || (typeof w.render !== "function" && typeof w.initialize !== "function")) {
    throw new Error("the widget's module exports no render (expected: export default { render })");
  }
  return w;
}

/** Import ES module source text (or a URL) once per distinct text. */
export function moduleLoader(importer = (url) => import(url)) {
  const cache = new Map();
  return (esm) => {
    if (!cache.has(esm)) {
      const isUrl = /^(https?:|\.{0,2}\/)\S*$/.test(esm);
      const url = isUrl ? esm : URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
      cache.set(esm, importer(url));
    }
    return cache.get(esm);
  };
}

function addStyle(doc, css, seen) {
  if (!css || seen.has(css)) return;
  seen.add(css);
  if (/^(https?:|\.{0,2}\/)\S*$/.test(css)) {
    doc.head.append(Object.assign(doc.createElement("link"), { rel: "stylesheet", href: css }));
  } else {
    const style = doc.createElement("style");
    style.textContent = css;
    doc.head.append(style);
  }
}

/**
 * The page's saved widget models ({model_id: {model_module, model_name, state}}): from the state tag's
 * text, or from the site's file it names (data-url, relative to the page). A missing file is an error
 * that names it; from a page opened as file:// a browser refuses the fetch: serve the site (make serve).
 */
export async function readState(doc = document, get = (url) => fetch(url)) {
  const tag = doc.querySelector(`script[type="${STATE_TYPE}"]`);
  if (!tag) return {};
  if (!tag.dataset.url) return JSON.parse(tag.textContent).state || {};
  const url = new URL(tag.dataset.url, doc.baseURI).href;
  let res;
  try {
    res = await get(url);
  } catch (err) {
    throw new Error(`could not fetch the widget state ${url} (${err.message}); pages opened as file:// cannot fetch it: serve the site`);
  }
  if (!res.ok) throw new Error(`the widget state ${url} answered HTTP ${res.status}`);
  return (await res.json()).state || {};
}

const REST_AFTER_LOAD_MS = 2500;

// in the page's language
const notShown = (lang) => (/^zh\b/i.test(lang) ? "此处无法显示这个探索器；运行笔记本即可使用它。"
  : "This explorer could not be shown here; run the notebook to use it.");

/**
 * due(el) resolves when `el` comes within a screen of the viewport, or (fallback) a while after the page
 * has loaded, in an idle moment. Without IntersectionObserver: at once.
 */
export function nearScreen(win = window) {
  if (typeof win.IntersectionObserver !== "function") return () => Promise.resolve();
  const waiting = new Map();
  // Nothing is drawn while the page scrolls: an explorer drawn above the screen in the middle of a smooth
  // scroll (a link to a section further down) would push the target away, since the browser fixed where
  // the scroll ends when it began; once the scrolling has settled, the browser's scroll anchoring keeps
  // what the reader sees in place as explorers above it grow.
  const near = new Set();
  let settling = null;
  const draw = (el) => {
    const gos = waiting.get(el);
    if (!gos) return;
    observer.unobserve(el);
    waiting.delete(el);
    near.delete(el);
    gos.forEach((go) => go());
  };
  const observer = new win.IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!waiting.has(e.target)) continue;
      if (e.isIntersecting) near.add(e.target);
      else near.delete(e.target);
    }
    if (settling === null) [...near].forEach(draw);
  }, { rootMargin: "100% 0px" });
  win.addEventListener("scroll", () => {
    win.clearTimeout(settling);
    settling = win.setTimeout(() => { settling = null; [...near].forEach(draw); }, 200);
  }, { passive: true });
  // the rest: a while after the load (the reader's first seconds of reading and scrolling stay smooth),
  // one view per idle moment of the browser, never while the page scrolls
  const idle = (f) => (win.requestIdleCallback ? win.requestIdleCallback(f, { timeout: 3000 }) : win.setTimeout(f, 200));
  const next = () => {
    const el = waiting.keys().next().value;
    if (el === undefined) return;
    if (settling === null) draw(el);
    idle(next);
  };
  const rest = () => win.setTimeout(() => idle(next), REST_AFTER_LOAD_MS);
  if (win.document.readyState === "complete") rest();
  else win.addEventListener("load", rest, { once: true });
  return (el) => new Promise((go) => {
    if (!waiting.has(el)) { waiting.set(el, []); observer.observe(el); }
    waiting.get(el).push(go);
  });
}

/**
 * Render every anywidget view of `doc` from the page's saved state. Returns {models, views}: the models
 * by id and, per view drawn, its model id, element and the cleanup its render returned. `due(el)` says
 * when the view at `el` (the view tag's parent) is to be drawn: at once unless told (nearScreen in a
 * browser); the state is read when the first view is due. A widget that fails is reported on the
 * console (console.error) and in its element; the others still render.
 */
export async function renderPage(doc = document, load = moduleLoader(), { due = async () => {}, get } = {}) {
  const models = new Map(), views = [], started = new Map(), styles = new Set();
  // the page's language wins (the Chinese site reuses the English state)
  const pageLang = (doc.documentElement && doc.documentElement.getAttribute("lang")) || "";
  let saved = null;
  const state = () => (saved ||= readState(doc, get).then((entries) => {
    for (const [id, entry] of Object.entries(entries)) {
      const traits = pageLang ? { ...entry.state, lang: pageLang } : entry.state;
      if (entry.model_module === "anywidget") models.set(id, new Model(traits, { id, models }));
    }
  }, (err) => {
    console.error("widgets:", err.message);
    throw err;
  }));
  const jobs = [...doc.querySelectorAll(`script[type="${VIEW_TYPE}"]`)].map(async (viewTag) => {
    const id = JSON.parse(viewTag.textContent).model_id;
    await due(viewTag.parentElement || viewTag);
    try {
      await state();
    } catch {
      viewTag.before(Object.assign(doc.createElement("div"), {
        className: "attn-widget-view", textContent: notShown(pageLang),
      }));
      return;
    }
    const model = models.get(id);
    if (!model) return;
    const el = doc.createElement("div");
    el.className = "attn-widget-view";
    el.dataset.modelId = id;
    viewTag.before(el);
    try {
      addStyle(doc, model.get("_css"), styles);
      const widget = await widgetOf(await load(model.get("_esm")));
      if (!started.has(id)) started.set(id, Promise.resolve(widget.initialize && widget.initialize({ model })));
      await started.get(id);
      const cleanup = widget.render ? await widget.render({ model, el }) : undefined;
      views.push({ id, el, cleanup });
    } catch (err) {
      el.textContent = notShown(pageLang);
      console.error(`widget ${model.get("_anywidget_id") || id}:`, err);
    }
  });
  await Promise.all(jobs);
  return { models, views };
}

// In a browser page (not when a test imports this file under node): render the page's widgets, each as
// it nears the screen. window.attnWidgets is set once all are drawn (the tests wait for it).
if (typeof document !== "undefined" && typeof window !== "undefined") {
  const start = () => renderPage(document, moduleLoader(), { due: nearScreen(window) }).then((r) => { window.attnWidgets = r; });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
}
