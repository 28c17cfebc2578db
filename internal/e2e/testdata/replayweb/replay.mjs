// replay.mjs: open a page that embeds ReplayWeb.page (<replay-web-page>),
// let it load its archive and replay one URL, and report what the replayed
// page shows, as a person looking at it would check it.
//
// Usage: node replay.mjs --chromium PATH --embed URL --target URL
//                        [--wait-for TEXT] [--screenshot FILE] [--timeout MS]
//                        [--lookup URL]
//
//   --chromium    the browser binary (Debian's /usr/lib/chromium/chromium)
//   --embed       the embedding page, served on loopback
//   --target      the archived URL the replayed frame must show (after any
//                 redirect the archive holds)
//   --wait-for    text the replayed page's body must contain before the
//                 report is taken (e.g. what a script writes into the DOM)
//   --screenshot  also save a PNG of the whole embedding page there, with
//                 the app's list of pages open beside the replay
//   --lookup      also ask the app's service worker what its index holds at
//                 this URL (its API's c/<collection>/urls), e.g. a record
//                 the replayed page never asks for
//
// ReplayWeb.page nests its replay: the embedding page's <replay-web-page>
// holds, in its shadow DOM, an iframe with the app, whose own shadow DOM
// holds the iframe of the replayed page, served by its service worker under
// .../w/<collection>/<timestamp>mp_/<archived URL>. Chromium lists every
// frame whatever shadow root holds it, so the replayed one is found by its
// URL.
//
// Prints one JSON object on stdout:
//   {"puppeteer", "replaywebpage", "chromium": VERSION, "found": bool,
//    "frameURL", "frames": [{"url", "html": its first 300 characters}],
//    "title", "text": body innerText, "h1Color": computed colour of the first
//    h1, "images": [{"src", "complete", "naturalWidth"}],
//    "offHost": [URLs the page or its frames asked for off 127.0.0.1],
//    "console": [console errors, each with the URL it names, if any],
//    "lookup": {"urls": [{"url", "mime", "status", "ts", "date"}]} or
//    {"error"} (with --lookup), "elapsedMs"}
// and exits 0 when it could report (the caller judges what it says), 1 on a
// failure to drive the browser, 2 on bad usage.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import puppeteer from "puppeteer-core";

const versionOf = (pkg) =>
  JSON.parse(fs.readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), "utf8")).version;

// Keep the browser off the network: no background services, updates,
// metrics or Safe Browsing, and a resolver that fails every name but
// 127.0.0.1 without asking DNS, so nothing the app or the archive names
// can leave the machine.
const quietFlags = [
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-default-apps",
  "--disable-extensions",
  "--disable-component-extensions-with-background-pages",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-client-side-phishing-detection",
  "--disable-domain-reliability",
  "--disable-breakpad",
  "--no-pings",
  "--metrics-recording-only",
  "--safebrowsing-disable-auto-update",
  "--password-store=basic",
  "--use-mock-keychain",
  "--disable-features=OptimizationHints,OptimizationGuideModelDownloading,Translate,MediaRouter," +
    "DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater," +
    "InterestFeedContentSuggestions,PrivacySandboxSettings4,NetworkTimeServiceQuerying," +
    "SafeBrowsingEnhancedProtection,HttpsUpgrades",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

function usage(msg) {
  process.stderr.write(`replay.mjs: ${msg}\n`);
  process.exit(2);
}

function options() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        chromium: { type: "string" },
        embed: { type: "string" },
        target: { type: "string" },
        "wait-for": { type: "string" },
        screenshot: { type: "string" },
        lookup: { type: "string" },
        timeout: { type: "string", default: "30000" },
      },
    }));
  } catch (e) {
    usage(e.message);
  }
  for (const name of ["chromium", "embed", "target"]) {
    if (!values[name]) usage(`--${name} is required`);
  }
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) usage(`bad --timeout ${values.timeout}`);
  return { ...values, timeout };
}

// replayedFrame finds the frame ReplayWeb.page replays target in: its URL
// is the service worker's .../<timestamp>mp_/<target>.
function replayedFrame(page, target) {
  return page.frames().find((f) => {
    const i = f.url().indexOf("mp_/");
    return i >= 0 && f.url().slice(i + 4) === target;
  });
}

// inspect reads what the replayed page shows.
function inspect(frame) {
  return frame.evaluate(() => {
    const h1 = document.querySelector("h1");
    return {
      title: document.title,
      text: document.body ? document.body.innerText : "",
      h1Color: h1 ? getComputedStyle(h1).color : "",
      images: [...document.images].map((img) => ({
        src: img.currentSrc || img.src,
        complete: img.complete,
        naturalWidth: img.naturalWidth,
      })),
    };
  });
}

// serviceWorkerActive waits until ReplayWeb.page's service worker, which
// the embed registers on the first visit, is active. Until it is, the
// app's frame may load from the network and stay blank: on a first visit
// ReplayWeb.page reloads that frame only if the worker is not in control
// by the time it has loaded, and the worker can take control in between.
// A returning visitor has the worker from the start: after this the page
// is loaded again, as that visitor.
async function serviceWorkerActive(page, deadline) {
  await page
    .waitForFunction(
      async () => {
        const embed = document.querySelector("replay-web-page");
        const scope = new URL(embed.getAttribute("replaybase") || "./replay/", location.href).href;
        const reg = await navigator.serviceWorker.getRegistration(scope);
        return Boolean(reg && reg.active && reg.active.state === "activated");
      },
      { polling: 100, timeout: Math.max(1, deadline - Date.now()) },
    )
    .catch((e) => {
      throw new Error(`ReplayWeb.page's service worker never became active: ${e.message}`);
    });
}

// describeFrame is a frame's URL and the start of its document, for the
// caller's failure message.
async function describeFrame(frame) {
  const html = await frame
    .evaluate(() => document.documentElement.outerHTML.slice(0, 300))
    .catch((e) => `(unreadable: ${e.message})`);
  return { url: frame.url(), html };
}

// lookup asks ReplayWeb.page's service worker which captures of url its
// index of the replayed collection holds. The app's frame, under the
// worker's scope and free of the replay's rewriting, asks; the collection
// is the replayed frame's .../w/<collection>/....
async function lookup(page, replayed, url) {
  const m = replayed && replayed.url().match(/^(.*\/)w\/([^/]+)\//);
  if (!m) return { error: "no replayed frame to take the collection from" };
  const [, base, coll] = m;
  const app = page.frames().find((f) => f.url().startsWith(base) && !f.url().startsWith(base + "w/"));
  if (!app) return { error: `no app frame under ${base}` };
  // mime= is needed: without it the worker splits a null and fails.
  const api = `${base}w/api/c/${coll}/urls?count=100&mime=&url=${encodeURIComponent(url)}`;
  return app
    .evaluate(async (u) => (await fetch(u)).json(), api)
    .catch((e) => ({ error: `${api}: ${e.message}` }));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// waitForReplay polls until the replayed frame shows waitFor (or, without
// it, has loaded) with all its images settled, or the deadline passes;
// it returns the last look, and whether the frame was found at all.
async function waitForReplay(page, target, waitFor, deadline) {
  let last = null;
  let frame;
  while (Date.now() < deadline) {
    frame = replayedFrame(page, target);
    if (frame) {
      try {
        last = await inspect(frame);
        const ready = waitFor ? last.text.includes(waitFor) : true;
        if (ready && last.images.every((i) => i.complete)) break;
      } catch {
        // The frame navigated or went away between the lookup and the
        // evaluation: look again.
      }
    }
    await sleep(200);
  }
  return { frame, last };
}

async function main() {
  const opts = options();
  const started = Date.now();
  const deadline = started + opts.timeout;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "replayweb-profile-"));
  const args = [...quietFlags];
  if (process.getuid && process.getuid() === 0) args.push("--no-sandbox"); // Chromium refuses root otherwise
  const browser = await puppeteer.launch({
    executablePath: opts.chromium,
    headless: true,
    userDataDir: profile,
    args,
    defaultViewport: { width: 1000, height: 620 },
  });
  const offHost = [];
  const consoleErrors = [];
  try {
    const page = await browser.newPage();
    page.on("request", (req) => {
      const u = new URL(req.url());
      if (/^(https?|wss?):$/.test(u.protocol) && u.hostname !== "127.0.0.1") offHost.push(req.url());
    });
    page.on("console", (msg) => {
      if (msg.type() !== "error") return;
      // "Failed to load resource" names no URL: its location does.
      const where = msg.location() && msg.location().url;
      consoleErrors.push(where ? `${msg.text()} (${where})` : msg.text());
    });
    await page.goto(opts.embed, { waitUntil: "load", timeout: opts.timeout });
    await serviceWorkerActive(page, deadline);
    if (opts.screenshot) {
      // The picture shows the app's pages list beside the replay: the app
      // keeps that choice in the origin's localStorage, read at its start.
      await page.evaluate(() => localStorage.setItem("pages:showSidebar", "1"));
    }
    await page.reload({ waitUntil: "load", timeout: Math.max(1, deadline - Date.now()) });
    const { frame, last } = await waitForReplay(page, opts.target, opts["wait-for"], deadline);
    if (opts.screenshot) {
      await page.screenshot({ path: opts.screenshot, type: "png" });
    }
    const report = {
      puppeteer: versionOf("puppeteer-core"),
      replaywebpage: versionOf("replaywebpage"),
      chromium: await browser.version(),
      found: Boolean(frame),
      frameURL: frame ? frame.url() : "",
      frames: await Promise.all(page.frames().map(describeFrame)),
      ...(last || { title: "", text: "", h1Color: "", images: [] }),
      offHost,
      console: consoleErrors,
      ...(opts.lookup ? { lookup: await lookup(page, frame, opts.lookup) } : {}),
      elapsedMs: Date.now() - started,
    };
    process.stdout.write(JSON.stringify(report) + "\n");
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`replay.mjs: ${e.stack || e}\n`);
  process.exit(1);
});
