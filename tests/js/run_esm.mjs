// Calls named exports of a widget's ES module under node and prints the results as JSON.
//
//   node tests/js/run_esm.mjs src/attn/book/widgets/mask_explorer.js < calls.json
//
// calls.json is a list of {"fn": "buildMask", "args": [...]}; {"fn": "__exports__"} lists the module's
// named exports and the keys of its default export; "catches": true returns {"error": "Error: message"}
// (null if it did not throw) instead of stopping. The module is imported through a data: URL, so a
// plain .js file needs neither an .mjs copy nor a package.json saying "type": "module".
// JSON has no Infinity or NaN: both ways, a non-finite number travels as {"$float": "-Infinity"}
// (tests/test_nn_js.py writes and reads that form).
import { readFileSync } from "node:fs";

const source = readFileSync(process.argv[2], "utf8");
const mod = await import("data:text/javascript;base64," + Buffer.from(source).toString("base64"));
const revive = (k, v) => (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1
  && typeof v.$float === "string" ? Number(v.$float) : v);
const calls = JSON.parse(readFileSync(0, "utf8"), revive);
const results = calls.map(({ fn, args = [], catches = false }) => {
  if (fn === "__exports__") {
    const fns = Object.fromEntries(Object.entries(mod.default ?? {}).map(([k, v]) => [k, typeof v]));
    return { named: Object.keys(mod).filter((k) => k !== "default").sort(), default: fns };
  }
  if (typeof mod[fn] !== "function") throw new Error(`${process.argv[2]} has no exported function ${fn}`);
  if (!catches) return mod[fn](...args);
  try {
    mod[fn](...args);
  } catch (e) {
    return { error: `${e.constructor.name}: ${e.message}` };
  }
  return { error: null };
});
const keep = (k, v) => (typeof v === "number" && !Number.isFinite(v) ? { $float: String(v) } : v);
process.stdout.write(JSON.stringify(results, keep));
