// crawl.mjs: drive Chromium through a recording proxy as a browser crawl
// does: each visit in a browser context of its own (Chromium shares
// tunnels and cached proxy credentials within a context), with the proxy
// credentials of the visit's job given through page.authenticate, and
// report what each page ended up showing.
//
// Usage: node crawl.mjs --chromium PATH --proxy URL --visits JSON
//                       [--flags JSON] [--timeout MS]
//
//   --chromium  the browser binary (Debian's /usr/lib/chromium/chromium)
//   --proxy     the proxy, http://127.0.0.1:PORT (no credentials in it:
//               Chromium ignores them there)
//   --visits    a JSON array of {"url", "waitFor", "username", "password"}:
//               each URL is loaded in a fresh context, with the
//               credentials when a username is given, and the visit waits
//               until the element #result holds text starting with
//               waitFor (or "failed:", what the test pages write when
//               something broke); a page answered with a status other
//               than 2xx is reported at once
//   --flags     a JSON array of further Chromium flags (the test's quiet
//               flags and its --proxy-bypass-list)
//   --timeout   for each visit, in milliseconds
//
// Chromium trusts the proxy's CA through $HOME/.pki/nssdb, which the
// caller sets up (HOME is passed on to the browser).
//
// Prints one JSON object on stdout:
//   {"chromium": VERSION, "puppeteer": VERSION,
//    "visits": [{"url", "status": the page's HTTP status or 0,
//                "error": why the navigation or the wait failed, or "",
//                "result": #result's text, "pageLog": the page's
//                window.testLog (null without one), "elapsedMs"}]}
// and exits 0 when it could report (the caller judges what it says), 1 on
// a failure to drive the browser, 2 on bad usage.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import puppeteer from "puppeteer-core";

const versionOf = (pkg) =>
  JSON.parse(fs.readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), "utf8")).version;

function usage(msg) {
  process.stderr.write(`crawl.mjs: ${msg}\n`);
  process.exit(2);
}

function parseJSON(name, text, fallback) {
  if (text === undefined) return fallback;
  try {
    const v = JSON.parse(text);
    if (!Array.isArray(v)) usage(`--${name} must be a JSON array`);
    return v;
  } catch (e) {
    usage(`--${name}: ${e.message}`);
  }
}

function options() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        chromium: { type: "string" },
        proxy: { type: "string" },
        visits: { type: "string" },
        flags: { type: "string" },
        timeout: { type: "string", default: "30000" },
      },
    }));
  } catch (e) {
    usage(e.message);
  }
  for (const name of ["chromium", "proxy", "visits"]) {
    if (!values[name]) usage(`--${name} is required`);
  }
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) usage(`bad --timeout ${values.timeout}`);
  const visits = parseJSON("visits", values.visits, []);
  for (const v of visits) {
    if (!v.url || !v.waitFor) usage(`each visit needs url and waitFor: ${JSON.stringify(v)}`);
  }
  return { ...values, timeout, visits, flags: parseJSON("flags", values.flags, []) };
}

const resultText = (page) =>
  page.evaluate(() => {
    const el = document.getElementById("result");
    return el ? el.textContent : "";
  });

// visit loads one page in a context of its own, as the visit's job, and
// waits for the page to report.
async function visit(browser, v, timeout) {
  const started = Date.now();
  const out = { url: v.url, status: 0, error: "", result: "", pageLog: null, elapsedMs: 0 };
  const context = await browser.createBrowserContext();
  try {
    const page = await context.newPage();
    if (v.username) await page.authenticate({ username: v.username, password: v.password || "" });
    try {
      const resp = await page.goto(v.url, { waitUntil: "load", timeout });
      out.status = resp ? resp.status() : 0;
      // A page the browser did not get (a 407 it gave up on, shown as
      // the page) has no script to wait for.
      if (!resp || !resp.ok()) throw new Error(`the page's status is ${out.status}`);
      await page.waitForFunction(
        (want) => {
          const el = document.getElementById("result");
          const t = el ? el.textContent : "";
          return t.startsWith(want) || t.startsWith("failed:");
        },
        { polling: 100, timeout: Math.max(1, started + timeout - Date.now()) },
        v.waitFor,
      );
    } catch (e) {
      out.error = e.message;
    }
    out.result = await resultText(page).catch(() => "");
    out.pageLog = await page.evaluate(() => window.testLog ?? null).catch(() => null);
  } finally {
    await context.close();
  }
  out.elapsedMs = Date.now() - started;
  return out;
}

async function main() {
  const opts = options();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "crawl-profile-"));
  const browser = await puppeteer.launch({
    executablePath: opts.chromium,
    headless: true,
    userDataDir: profile,
    args: [...opts.flags, `--proxy-server=${opts.proxy}`],
  });
  try {
    const visits = [];
    for (const v of opts.visits) visits.push(await visit(browser, v, opts.timeout));
    const report = {
      chromium: await browser.version(),
      puppeteer: versionOf("puppeteer-core"),
      visits,
    };
    process.stdout.write(JSON.stringify(report) + "\n");
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`crawl.mjs: ${e.stack || e}\n`);
  process.exit(1);
});
