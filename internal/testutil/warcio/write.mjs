// write.mjs: write a small WARC with webrecorder's warcio.js, an
// independent writer, for tests that read WARCs they did not write
// themselves (dedup import).
//
// Usage: node write.mjs OUT.warc.gz URL BODY-FILE DIGEST-ALGO
//
// Writes a warcinfo record, a response for URL whose payload is the bytes
// of BODY-FILE (served as application/octet-stream), its request, and a
// revisit of that response at URL + "?again" (same payload digest),
// gzip-compressed one member per record. DIGEST-ALGO is warcio.js's digest
// option: "sha-1" or "sha-256" (warcio.js's default), written in base32.
// Prints {"id": RESPONSE-RECORD-ID, "date": ITS WARC-DATE, "digest":
// ITS PAYLOAD DIGEST} on stdout.

import fs from "node:fs";
import { WARCRecord, WARCSerializer } from "warcio";

const [out, url, bodyFile, algo] = process.argv.slice(2);
if (!out || !url || !bodyFile || !algo) {
  console.error("usage: node write.mjs OUT.warc.gz URL BODY-FILE sha-1|sha-256");
  process.exit(2);
}
const body = fs.readFileSync(bodyFile);
const prefix = algo.replace("-", "") + ":";
const opts = { gzip: true, digest: { algo, prefix, base32: true } };
const date = "2024-05-06T07:08:09.123456Z";

async function* once(b) {
  yield b;
}

const info = WARCRecord.createWARCInfo({ filename: out, warcVersion: "WARC/1.0" }, { software: "warcio.js" });
const response = WARCRecord.create(
  {
    url,
    date,
    type: "response",
    warcVersion: "WARC/1.0",
    statusline: "HTTP/1.1 200 OK",
    httpHeaders: { "Content-Type": "application/octet-stream", "Content-Length": String(body.length) },
  },
  once(body),
);
const request = WARCRecord.create(
  {
    url,
    date,
    type: "request",
    warcVersion: "WARC/1.0",
    statusline: "GET " + new URL(url).pathname + " HTTP/1.1",
    httpHeaders: { Host: new URL(url).host },
    warcHeaders: { "WARC-Concurrent-To": "" },
  },
  once(new Uint8Array()),
);

const chunks = [];
chunks.push(await WARCSerializer.serialize(info, opts));
chunks.push(await WARCSerializer.serialize(response, opts));
const id = response.warcHeaders.headers.get("WARC-Record-ID");
const digest = response.warcHeaders.headers.get("WARC-Payload-Digest");
request.warcHeaders.headers.set("WARC-Concurrent-To", id);
chunks.push(await WARCSerializer.serialize(request, opts));

const revisit = WARCRecord.create(
  {
    url: url + "?again",
    date: "2024-05-07T00:00:00Z",
    type: "revisit",
    warcVersion: "WARC/1.0",
    statusline: "HTTP/1.1 200 OK",
    httpHeaders: { "Content-Type": "application/octet-stream", "Content-Length": String(body.length) },
    refersToUrl: url,
    refersToDate: date,
    warcHeaders: {
      "WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
      "WARC-Refers-To": id,
      "WARC-Payload-Digest": digest,
    },
  },
  once(new Uint8Array()),
);
chunks.push(await WARCSerializer.serialize(revisit, opts));

fs.writeFileSync(out, Buffer.concat(chunks));
process.stdout.write(JSON.stringify({ id, date: response.warcHeaders.headers.get("WARC-Date"), digest }) + "\n");
