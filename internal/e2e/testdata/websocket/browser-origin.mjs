// browser-origin.mjs: origins for a browser's WebSocket through the proxy.
// Each serves a page at / whose script opens a WebSocket to /socket on the
// same origin, and answers that socket with the ws package, logging every
// message it sends and receives. The page also shows what a replay can
// show without the socket: a paragraph and an image, /img.png.
//
// Usage: node browser-origin.mjs --servers JSON --log FILE [--cert F --key F]
//
//   --servers  a JSON array of {"name", "tls": bool, "deflate": bool}: one
//              origin each, on 127.0.0.1, HTTPS when tls (then --cert and
//              --key are the PEM files of its certificate), with
//              permessage-deflate offered to the browser when deflate
//   --log      where each end's messages go, one JSON line each:
//              {"server", "dir": "send"|"recv", "opcode", "data"} with the
//              text for opcode 1, base64 for the others; a fragmented
//              message is logged once, joined, with "fragments"; a close
//              frame as {"opcode": 8, "code", "reason"}
//
// Prints {"<name>": port, ...} on stdout once every origin listens, and
// serves until it is killed.
//
// The exchange, once the page has sent its text and binary message: the
// server sends a text, a binary, a text in two fragments and a binary in
// three, then a ping; when the browser's pong arrives it asks the page to
// close ("close please"), which the page does with code 4001 and reason
// "page done".

import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import { parseArgs } from "node:util";
import { WebSocketServer } from "ws";

const { values: opts } = parseArgs({
  options: {
    servers: { type: "string" },
    log: { type: "string" },
    cert: { type: "string" },
    key: { type: "string" },
  },
});
if (!opts.servers || !opts.log) {
  process.stderr.write("browser-origin.mjs: --servers and --log are required\n");
  process.exit(2);
}
const logFile = fs.openSync(opts.log, "a");
const log = (entry) => fs.writeSync(logFile, JSON.stringify(entry) + "\n");

// What the page shows whatever its socket does (TestReplayWebPageWebSocket
// looks for it in the replay), and its image, 24 by 24 pixels.
const staticText = "This page talks to its server over a WebSocket.";
const image = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAABgAAAAYCAIAAABvFaqvAAAAH0lEQVR42mOQ64miCmIYNWjUoFGDRg0aNWjUoIE3CADBF0kf1hHhawAAAABJRU5ErkJggg==",
  "base64",
);

// The page logs what it sends and receives in window.testLog, in the same
// shape, and writes "ws:closed CODE" into #result when the socket closed.
const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>websocket</title>
<link rel="icon" href="data:,">
</head><body>
<p id="static">${staticText}</p>
<img id="image" src="/img.png" alt="from the page's origin" width="24" height="24">
<p id="result">waiting</p>
<script>
const log = [];
window.testLog = log;
const out = (s) => { document.getElementById("result").textContent = s; };
const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)));
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/socket");
ws.binaryType = "arraybuffer";
ws.onopen = () => {
  const text = "hello from the page";
  const bin = new Uint8Array([0, 1, 2, 3, 127, 128, 253, 254, 255]);
  ws.send(text);
  log.push({dir: "send", opcode: 1, data: text});
  ws.send(bin);
  log.push({dir: "send", opcode: 2, data: b64(bin)});
};
ws.onmessage = (e) => {
  if (typeof e.data === "string") {
    log.push({dir: "recv", opcode: 1, data: e.data});
    if (e.data === "close please") {
      ws.close(4001, "page done");
      log.push({dir: "send", opcode: 8, code: 4001, reason: "page done"});
    }
  } else {
    log.push({dir: "recv", opcode: 2, data: b64(e.data)});
  }
};
ws.onclose = (e) => {
  log.push({dir: "recv", opcode: 8, code: e.code, reason: e.reason});
  out("ws:closed " + e.code);
};
ws.onerror = () => out("failed: websocket error");
</script>
</body></html>
`;

const b64 = (buf) => Buffer.from(buf).toString("base64");

function exchange(name, ws) {
  const send = (data, opts, entry) => {
    ws.send(data, opts);
    if (entry) log({ server: name, dir: "send", ...entry });
  };
  let received = 0;
  ws.on("message", (data, isBinary) => {
    log({ server: name, dir: "recv", opcode: isBinary ? 2 : 1, data: isBinary ? b64(data) : data.toString("utf8") });
    if (++received !== 2) return;
    send("hello from the server", {}, { opcode: 1, data: "hello from the server" });
    const bin = Buffer.from([255, 0, 254, 1, 10, 13]);
    send(bin, { binary: true }, { opcode: 2, data: b64(bin) });
    send("fragmented ", { fin: false });
    send("text message", { fin: true }, { opcode: 1, data: "fragmented text message", fragments: 2 });
    const parts = [Buffer.from([1, 2]), Buffer.from([3, 4, 5]), Buffer.from([6])];
    send(parts[0], { binary: true, fin: false });
    send(parts[1], { binary: true, fin: false });
    send(parts[2], { binary: true, fin: true }, { opcode: 2, data: b64(Buffer.concat(parts)), fragments: 3 });
    ws.ping("are you there");
    log({ server: name, dir: "send", opcode: 9, data: b64("are you there") });
  });
  ws.on("pong", (data) => {
    log({ server: name, dir: "recv", opcode: 10, data: b64(data) });
    send("close please", {}, { opcode: 1, data: "close please" });
  });
  ws.on("close", (code, reason) => {
    // ws answers a close frame with the same code and reason.
    log({ server: name, dir: "recv", opcode: 8, code, reason: reason.toString("utf8") });
    log({ server: name, dir: "send", opcode: 8, code, reason: reason.toString("utf8") });
  });
  ws.on("error", (err) => log({ server: name, error: err.message }));
}

function serveHTTP(req, res) {
  if (req.url === "/img.png") {
    res.writeHead(200, { "Content-Type": "image/png", "Cache-Control": "no-store" }).end(image);
    return;
  }
  if (req.url !== "/") {
    res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
    return;
  }
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" }).end(page);
}

async function start(spec) {
  const server = spec.tls
    ? https.createServer({ cert: fs.readFileSync(opts.cert), key: fs.readFileSync(opts.key) }, serveHTTP)
    : http.createServer(serveHTTP);
  const wss = new WebSocketServer({ server, path: "/socket", perMessageDeflate: Boolean(spec.deflate) });
  wss.on("connection", (ws, req) => {
    log({ server: spec.name, event: "open", extensions: ws.extensions, url: req.url });
    exchange(spec.name, ws);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return server.address().port;
}

const ports = {};
for (const spec of JSON.parse(opts.servers)) ports[spec.name] = await start(spec);
process.stdout.write(JSON.stringify(ports) + "\n");
