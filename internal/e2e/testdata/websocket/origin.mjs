// A ws origin server: node origin.mjs LOGFILE [--tls CERT KEY] [--deflate]
// Prints {"port": N} once listening. On each connection it sends a text,
// a binary, a fragmented message and a ping; once the client has sent
// three data messages it answers "done". It logs every message it sends
// and receives (peerlog.mjs).
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import { WebSocketServer } from "ws";
import { peerLog } from "./peerlog.mjs";

const args = process.argv.slice(2);
const logPath = args[0];
const tlsAt = args.indexOf("--tls");
const deflate = args.includes("--deflate");

const server =
  tlsAt >= 0
    ? https.createServer({ cert: fs.readFileSync(args[tlsAt + 1]), key: fs.readFileSync(args[tlsAt + 2]) })
    : http.createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: deflate ? { threshold: 0 } : false });
const log = peerLog(logPath);

wss.on("connection", (ws) => {
  let data = 0;
  const send = (payload, opts = {}) => {
    ws.send(payload, opts);
  };
  ws.on("message", (msg, isBinary) => {
    log.message("recv", msg, isBinary);
    if (++data === 3) {
      send("done");
      log.message("send", "done", false);
    }
  });
  ws.on("ping", (p) => log.control("recv", "ping", p));
  ws.on("pong", (p) => log.control("recv", "pong", p));
  ws.on("close", (code, reason) => log.close("recv", code, reason));

  send("hello from the server");
  log.message("send", "hello from the server", false);
  const bin = Buffer.from([9, 8, 7, 0, 255]);
  send(bin, { binary: true });
  log.message("send", bin, true);
  send("server-", { fin: false });
  send("fragment", { fin: true });
  log.message("send", "server-fragment", false);
  ws.ping("srv-ping");
  log.control("send", "ping", Buffer.from("srv-ping"));
});

process.on("SIGTERM", () => {
  log.end();
  process.exit(0);
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});
