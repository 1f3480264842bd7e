// Drives the static runtime's Model (src/attn/book/widgets/static_runtime.js) under node and prints what
// the listeners saw, as JSON, for tests/test_light_runtime.py.
//
//   node tests/js/runtime_model.mjs src/attn/book/widgets/static_runtime.js
import { readFileSync } from "node:fs";

const source = readFileSync(process.argv[2], "utf8");
const { Model, same, widgetOf } = await import("data:text/javascript;base64," + Buffer.from(source).toString("base64"));

const seen = [];
const m = new Model({ a: 1, list: [1, 2], obj: { x: [1] } });
const onA = (model, v) => seen.push(["change:a", v, model === m]);
m.on("change:a change:list", onA);
m.on("change", () => seen.push(["change"]));
m.set("a", 2);                       // change:a, change
m.set("a", 2);                       // nothing: same value
m.set("list", [1, 2]);               // nothing: equal array
m.set({ a: 3, list: [1, 2, 3] });    // change:a, change:list, change (once)
m.set("obj", { x: [1] });            // nothing: equal nested object
m.save_changes();
m.off("change:a", onA);
m.set("a", 4);                       // only "change"
m.send({ hello: 1 });
const mod = await widgetOf({ default: () => ({ render() {} }) });
let refused = null;
try { await widgetOf({ default: {} }); } catch (e) { refused = String(e.message); }
const other = new Model({ b: 1 }, { id: "other", models: new Map([["other", new Model({ b: 5 })]]) });
const found = (await other.widget_manager.get_model("IPY_MODEL_other")).get("b");
process.stdout.write(JSON.stringify({
  seen, a: m.get("a"), list: m.get("list"), saves: m.saves, sent: m.sent,
  factory: typeof mod.render, refused, found,
  same: [same(NaN, NaN), same([1, { y: 2 }], [1, { y: 2 }]), same([1], { 0: 1 }), same({ a: 1 }, { a: 1, b: undefined })],
}));
