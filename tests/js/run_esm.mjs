// Calls named exports of a widget's ES module under node and prints the results as JSON.
//
//   node tests/js/run_esm.mjs src/attn/widgets/mask_explorer.js < calls.json
//
// calls.json is a list of {"fn": "buildMask", "args": [...]}; {"fn": "__exports__"} lists the module's
// named exports and the keys of its default export. The module is imported through a data: URL, so a
// plain .js file needs neither an .mjs copy nor a package.json saying "type": "module".
import { readFileSync } from "node:fs";

const source = readFileSync(process.argv[2], "utf8");
const mod = await import("data:text/javascript;base64," + Buffer.from(source).toString("base64"));
const calls = JSON.parse(readFileSync(0, "utf8"));
const results = calls.map(({ fn, args = [] }) => {
  if (fn === "__exports__") {
    const fns = Object.fromEntries(Object.entries(mod.default ?? {}).map(([k, v]) => [k, typeof v]));
    return { named: Object.keys(mod).filter((k) => k !== "default").sort(), default: fns };
  }
  if (typeof mod[fn] !== "function") throw new Error(`${process.argv[2]} has no exported function ${fn}`);
  return mod[fn](...args);
});
process.stdout.write(JSON.stringify(results));
