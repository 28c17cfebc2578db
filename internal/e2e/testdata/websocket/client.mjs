// A ws client through an HTTP proxy, by CONNECT (as browsers reach ws://
// and wss:// through a proxy):
//   node client.mjs URL PROXY_HOST:PORT CA_FILE LOGFILE MODE [--deflate]
// MODE close: sends a text, a binary, a fragmented message and a ping,
// and once the server says "done" closes with 4000 "client done".
// MODE drop: the same, then drops the connection without a close frame.
// MODE hold=MS: sends a message every 100 ms for MS, then closes.
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import tls from "node:tls";
import WebSocket from "ws";
import { peerLog } from "./peerlog.mjs";

const [url, proxy, caFile, logPath, mode] = process.argv.slice(2);
const deflate = process.argv.includes("--deflate");
const target = new URL(url);
const secure = target.protocol === "wss:";
const [proxyHost, proxyPort] = proxy.split(":");

// tunnel opens a CONNECT tunnel to the target, then TLS in it for wss.
function tunnel(options, cb) {
  const hostport = `${target.hostname}:${target.port || (secure ? 443 : 80)}`;
  const req = http.request({ host: proxyHost, port: proxyPort, method: "CONNECT", path: hostport });
  req.on("connect", (res, socket) => {
    if (res.statusCode !== 200) {
      cb(new Error(`CONNECT answered ${res.statusCode}`));
      return;
    }
    if (!secure) {
      cb(null, socket);
      return;
    }
    const t = tls.connect({ socket, servername: target.hostname, ca: fs.readFileSync(caFile), ALPNProtocols: ["http/1.1"] });
    t.once("secureConnect", () => cb(null, t));
    t.once("error", cb);
  });
  req.on("error", cb);
  req.end();
}

const Agent = secure ? https.Agent : http.Agent;
class TunnelAgent extends Agent {
  createConnection(options, cb) {
    tunnel(options, cb);
  }
}

const log = peerLog(logPath);
const ws = new WebSocket(url, { agent: new TunnelAgent(), perMessageDeflate: deflate ? { threshold: 0 } : false });
let timer;

ws.on("open", () => {
  const send = (payload, opts, logged, isBinary) => {
    ws.send(payload, opts);
    log.message("send", logged, isBinary);
  };
  send("hello from the client", {}, "hello from the client", false);
  const bin = Buffer.from([0, 1, 2, 3, 254]);
  send(bin, { binary: true }, bin, true);
  ws.send("client-", { fin: false });
  send("fragment", { fin: true }, "client-fragment", false);
  ws.ping("cli-ping");
  log.control("send", "ping", Buffer.from("cli-ping"));
  if (mode.startsWith("hold=")) {
    let n = 0;
    timer = setInterval(() => {
      const m = `tick ${n++}`;
      ws.send(m);
      log.message("send", m, false);
    }, 100);
    setTimeout(() => {
      clearInterval(timer);
      ws.close(4000, "client done");
    }, Number(mode.slice(5)));
  }
});
ws.on("message", (msg, isBinary) => {
  log.message("recv", msg, isBinary);
  if (!isBinary && msg.toString() === "done") {
    if (mode === "close") {
      ws.close(4000, "client done");
    } else if (mode === "drop") {
      ws.terminate();
    }
  }
});
ws.on("ping", (p) => log.control("recv", "ping", p));
ws.on("pong", (p) => log.control("recv", "pong", p));
ws.on("close", (code, reason) => {
  log.close("recv", code, reason);
  log.end();
  process.exit(0);
});
ws.on("error", (err) => {
  console.error(`client: ${err.message}`);
  process.exit(1);
});
