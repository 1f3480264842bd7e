// Lighthouse on many pages from one Node process, a fresh Chromium for each (scripts/audit.py drives it).
//
//   node scripts/lighthouse.mjs            reads one job a line on stdin: {"url", "out", "multiplier"?}
//
// For each job it runs Lighthouse (its default config: the mobile profile) on url, writes the JSON
// report to out and answers one line on stdout: {"out"} or {"error"}. Node and Lighthouse start once:
// the command line tool starts them for each page, about 3 s of a 15 s audit. Each page gets a browser
// of its own, as the command line gives it: in one browser shared by the audits a chapter's audit was
// sometimes slowed by the one before (zh/book/causal_attention, quiet machine, three pairs: LCP 2.11-2.33 s
// and TBT up to 178 ms shared, 2.10-2.12 s and 0-3 ms with a browser each). The full-page screenshot is
// left out: no audit scores it, it only illustrates the HTML report (1.6 s of a chapter's audit).
import fs from "node:fs";
import readline from "node:readline";
import lighthouse from "lighthouse";
import * as chromeLauncher from "chrome-launcher";

const launch = () => chromeLauncher.launch({
  chromePath: process.env.CHROME_PATH || "/usr/bin/chromium",
  chromeFlags: ["--headless=new", "--no-sandbox", "--disable-gpu"],
});
let chrome = null;
const answer = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
try {
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const job = JSON.parse(line);
    chrome = await launch();
    const flags = { port: chrome.port, output: "json", logLevel: "error", disableFullPageScreenshot: true };
    if (job.multiplier != null) flags.throttling = { cpuSlowdownMultiplier: job.multiplier };
    try {
      const result = await lighthouse(job.url, flags);
      if (!result) throw new Error("Lighthouse returned no result");
      const error = result.lhr.runtimeError;
      if (error) throw new Error(`${error.code}: ${error.message}`);
      fs.writeFileSync(job.out, result.report);
      answer({ out: job.out });
    } catch (e) {
      answer({ error: String(e && e.stack || e) });
    } finally {
      await chrome.kill();
      chrome = null;
    }
  }
} finally {
  if (chrome) await chrome.kill();
}
