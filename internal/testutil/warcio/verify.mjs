#!/usr/bin/env node
// verify.mjs: the independent half of warcproxy's WARC checks (the other half
// is gowarc, in internal/testutil/warccheck, which runs this script).
//
//   node verify.mjs [--no-open] FILE...
//
// Each file is parsed with webrecorder's warcio.js (WARCParser), and every
// digest is recomputed here rather than trusted to a library:
//   - WARC-Block-Digest over the raw block bytes (parseHttp is off, so
//     warcio.js hands over the block exactly as stored);
//   - WARC-Payload-Digest, for response/request/resource records holding an
//     HTTP message (Content-Type application/http), over the body after the
//     HTTP headers with Transfer-Encoding: chunked undone and any
//     Content-Encoding kept. warcio.js's own content reader is not used for
//     this: it also undoes Content-Encoding, and its dechunker silently falls
//     back to the raw bytes on a malformed chunk.
// Resource records without an HTTP message: the payload is the block.
// Revisit and segmented records: the payload digest describes another
// record, so only the block digest is checked.
// sha1, sha256, sha512 and md5 are supported, in base32 or hex.
//
// For gzip files the members are walked with node's zlib: each must be a
// complete gzip member (CRC and length checked) holding exactly one record.
//
// Prints one JSON object on stdout:
//   {"warcio": VERSION, "files": [{"path", "compressed", "members",
//     "records": [{"type", "id", "targetURI", "offset", "length"}],
//     "problems": ["..."]}]}
// and exits 1 if any file has a problem, 2 on bad usage.

import crypto from "node:crypto";
import fs from "node:fs";
import zlib from "node:zlib";
import { WARCParser } from "warcio";

// warcio does not export its package.json; read the installed copy.
const warcioVersion = JSON.parse(
  fs.readFileSync(new URL("./node_modules/warcio/package.json", import.meta.url), "utf8"),
).version;

const HASHES = {
  sha1: ["sha1", 20],
  "sha-1": ["sha1", 20],
  sha256: ["sha256", 32],
  "sha-256": ["sha256", 32],
  sha512: ["sha512", 64],
  "sha-512": ["sha512", 64],
  md5: ["md5", 16],
};

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32Decode(s) {
  s = s.toUpperCase().replace(/=+$/, "");
  const out = [];
  let bits = 0;
  let acc = 0;
  for (const ch of s) {
    const v = BASE32.indexOf(ch);
    if (v < 0) {
      throw new Error(`invalid base32 character ${JSON.stringify(ch)}`);
    }
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}

function base32Encode(buf) {
  let out = "";
  let bits = 0;
  let acc = 0;
  for (const byte of buf) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(acc >> bits) & 31];
    }
  }
  if (bits > 0) {
    out += BASE32[(acc << (5 - bits)) & 31];
  }
  while (out.length % 8 !== 0) {
    out += "=";
  }
  return out;
}

// parseDigest turns "sha1:BASE32" or "sha256:hex" into {alg, want} or throws.
function parseDigest(value) {
  const colon = value.indexOf(":");
  if (colon < 0) {
    throw new Error(`digest ${JSON.stringify(value)} has no "algorithm:" prefix`);
  }
  const name = value.slice(0, colon).trim().toLowerCase();
  const enc = value.slice(colon + 1).trim();
  const h = HASHES[name];
  if (!h) {
    throw new Error(`unsupported digest algorithm ${JSON.stringify(name)}`);
  }
  const [alg, size] = h;
  let want;
  let hex = false;
  if (enc.length === size * 2 && /^[0-9a-fA-F]+$/.test(enc)) {
    want = Buffer.from(enc, "hex");
    hex = true;
  } else if (
    enc.replace(/=+$/, "").length === Math.ceil((size * 8) / 5) &&
    /^[A-Za-z2-7]+=*$/.test(enc)
  ) {
    want = base32Decode(enc);
  } else {
    throw new Error(
      `digest ${JSON.stringify(value)} is neither hex nor base32 of a ${name} sum`,
    );
  }
  return { name, alg, want, hex };
}

// checkDigest hashes parts (an array of byte arrays) and compares the sum to
// the header value; it returns a problem string or null.
function checkDigest(field, value, parts) {
  let d;
  try {
    d = parseDigest(value);
  } catch (e) {
    return `${field}: ${e.message}`;
  }
  const h = crypto.createHash(d.alg);
  for (const p of parts) {
    h.update(p);
  }
  const got = h.digest();
  if (!got.equals(d.want)) {
    const computed = d.hex ? got.toString("hex") : base32Encode(got);
    return `${field} mismatch: header ${value}, computed ${d.name}:${computed}`;
  }
  return null;
}

// httpHeaderEnd returns the index just past the empty line that ends the
// HTTP header, or -1. A line of "\r\n" or "\n" ends it, as in gowarc.
function httpHeaderEnd(block) {
  let start = 0;
  while (start < block.length) {
    const nl = block.indexOf(10, start);
    if (nl < 0) {
      return -1;
    }
    const len = nl - start;
    if (len === 0 || (len === 1 && block[start] === 13)) {
      return nl + 1;
    }
    start = nl + 1;
  }
  return -1;
}

// isChunked reports whether the HTTP header's Transfer-Encoding ends in
// "chunked" (the only transfer coding a payload digest undoes here).
function isChunked(header) {
  const lines = Buffer.from(header).toString("latin1").split(/\r?\n/);
  let codings = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon < 0) {
      continue;
    }
    if (line.slice(0, colon).trim().toLowerCase() === "transfer-encoding") {
      codings = codings.concat(
        line
          .slice(colon + 1)
          .split(",")
          .map((s) => s.trim().toLowerCase())
          .filter((s) => s),
      );
    }
  }
  return codings.length > 0 && codings[codings.length - 1] === "chunked";
}

// dechunk splits a chunked body into its data parts. Trailers after the last
// chunk are ignored. With truncated set, a body cut short is accepted.
function dechunk(body, truncated) {
  const parts = [];
  let p = 0;
  for (;;) {
    const nl = body.indexOf(10, p);
    if (nl < 0) {
      if (truncated) {
        return parts;
      }
      throw new Error(`chunked body: no chunk-size line at body offset ${p}`);
    }
    let line = Buffer.from(body.subarray(p, nl)).toString("latin1");
    const semi = line.indexOf(";");
    if (semi >= 0) {
      line = line.slice(0, semi);
    }
    line = line.trim();
    if (!/^[0-9a-fA-F]{1,15}$/.test(line)) {
      throw new Error(
        `chunked body: bad chunk size ${JSON.stringify(line)} at body offset ${p}`,
      );
    }
    const size = parseInt(line, 16);
    p = nl + 1;
    if (size === 0) {
      return parts;
    }
    if (p + size > body.length) {
      if (truncated) {
        parts.push(body.subarray(p));
        return parts;
      }
      throw new Error(
        `chunked body: chunk of ${size} bytes at body offset ${p} runs past the end (${body.length})`,
      );
    }
    parts.push(body.subarray(p, p + size));
    p += size;
    if (body[p] !== 13 || body[p + 1] !== 10) {
      if (truncated && p + 2 > body.length) {
        return parts;
      }
      throw new Error(`chunked body: chunk data not followed by CRLF at body offset ${p}`);
    }
    p += 2;
  }
}

// gzipMembers walks the gzip members of buf. It returns the members found
// ({offset, end, data}) and a problem string if the walk stopped early.
function gzipMembers(buf) {
  const members = [];
  let pos = 0;
  while (pos < buf.length) {
    if (buf.length - pos < 18 || buf[pos] !== 0x1f || buf[pos + 1] !== 0x8b || buf[pos + 2] !== 8) {
      return { members, problem: `offset ${pos}: bytes that are not a gzip member` };
    }
    const flags = buf[pos + 3];
    let p = pos + 10;
    if (flags & 4) {
      p += 2 + buf.readUInt16LE(p);
    }
    for (const bit of [8, 16]) {
      if (flags & bit) {
        const z = buf.indexOf(0, p);
        if (z < 0) {
          return { members, problem: `offset ${pos}: truncated gzip header` };
        }
        p = z + 1;
      }
    }
    if (flags & 2) {
      p += 2;
    }
    let consumed;
    try {
      consumed = zlib.inflateRawSync(buf.subarray(p), { info: true }).engine.bytesWritten;
    } catch (e) {
      return { members, problem: `gzip member at offset ${pos}: ${e.message}` };
    }
    const end = p + consumed + 8;
    if (end > buf.length) {
      return { members, problem: `gzip member at offset ${pos}: truncated (no trailer)` };
    }
    let data;
    try {
      // Checks the trailer (CRC-32 and length) too.
      data = zlib.gunzipSync(buf.subarray(pos, end));
    } catch (e) {
      return { members, problem: `gzip member at offset ${pos}: ${e.message}` };
    }
    members.push({ offset: pos, end, data });
    pos = end;
  }
  return { members, problem: null };
}

// chunks yields buf in pieces: one gzip member per piece when members are
// known (so warcio.js inflates each member in one go and its offsets are
// exact), else 64 KiB slices.
async function* chunks(buf, members) {
  let pos = 0;
  for (const m of members) {
    yield buf.subarray(m.offset, m.end);
    pos = m.end;
  }
  while (pos < buf.length) {
    const end = Math.min(pos + 65536, buf.length);
    yield buf.subarray(pos, end);
    pos = end;
  }
}

const recordWarnings = [];
console.warn = (...args) => {
  recordWarnings.push(args.map(String).join(" "));
};

async function verifyFile(path, noOpen) {
  const result = { path, compressed: false, members: null, records: [], problems: [] };
  const problem = (msg) => result.problems.push(msg);

  if (noOpen && path.endsWith(".open")) {
    problem("file is still open (name ends in .open): it was not closed and renamed");
  }

  let buf;
  try {
    buf = fs.readFileSync(path);
  } catch (e) {
    problem(`reading file: ${e.message}`);
    return result;
  }

  let members = [];
  if (buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) {
    result.compressed = true;
    const walk = gzipMembers(buf);
    members = walk.members;
    result.members = members.length;
    if (walk.problem) {
      problem(walk.problem);
    }
    for (const m of members) {
      const d = m.data;
      if (d.length < 5 || d.subarray(0, 5).toString("latin1") !== "WARC/") {
        problem(`gzip member at offset ${m.offset} does not start with a WARC record`);
      }
      if (d.length < 4 || d.subarray(d.length - 4).toString("latin1") !== "\r\n\r\n") {
        problem(`gzip member at offset ${m.offset} does not end with a record's CRLF CRLF`);
      }
      m.data = null;
    }
  }

  recordWarnings.length = 0;
  try {
    const parser = new WARCParser(chunks(buf, members), { parseHttp: false });
    for await (const record of parser) {
      const offset = parser.offset;
      const h = record.warcHeaders.headers;
      const type = h.get("WARC-Type") || "";
      const id = h.get("WARC-Record-ID") || "";
      const where = `record at offset ${offset} (${type || "no WARC-Type"} ${id || "no WARC-Record-ID"})`;
      const version = record.warcHeaders.statusline;
      if (version !== "WARC/1.0" && version !== "WARC/1.1") {
        problem(`${where}: version line ${JSON.stringify(version)}, want WARC/1.0 or WARC/1.1`);
      }
      const clHeader = h.get("Content-Length");
      if (clHeader === null || !/^[0-9]+$/.test(clHeader.trim())) {
        problem(`${where}: bad Content-Length ${JSON.stringify(clHeader)}`);
      }
      const block = await record.readFully(false);
      result.records.push({
        type,
        id,
        targetURI: h.get("WARC-Target-URI") || "",
        offset,
        length: block.length,
      });
      if (clHeader !== null && block.length !== Number(clHeader.trim())) {
        problem(`${where}: block is ${block.length} bytes, Content-Length says ${clHeader}`);
      }

      const blockDigest = h.get("WARC-Block-Digest");
      if (blockDigest) {
        const p = checkDigest("WARC-Block-Digest", blockDigest, [block]);
        if (p) {
          problem(`${where}: ${p}`);
        }
      }

      const payloadDigest = h.get("WARC-Payload-Digest");
      const segmented = h.get("WARC-Segment-Number") !== null;
      if (!payloadDigest || segmented || !["response", "request", "resource"].includes(type)) {
        continue;
      }
      const ct = (h.get("Content-Type") || "").trim().toLowerCase();
      if (!ct.startsWith("application/http")) {
        if (type === "resource") {
          const p = checkDigest("WARC-Payload-Digest", payloadDigest, [block]);
          if (p) {
            problem(`${where}: ${p}`);
          }
        }
        continue;
      }
      const end = httpHeaderEnd(block);
      if (end < 0) {
        problem(`${where}: HTTP message has no empty line ending its header`);
        continue;
      }
      const body = block.subarray(end);
      let parts = [body];
      if (body.length > 0 && isChunked(block.subarray(0, end))) {
        try {
          parts = dechunk(body, h.get("WARC-Truncated") !== null);
        } catch (e) {
          problem(`${where}: ${e.message}`);
          continue;
        }
      }
      const p = checkDigest("WARC-Payload-Digest", payloadDigest, parts);
      if (p) {
        problem(`${where}: ${p}`);
      }
    }
  } catch (e) {
    problem(`warcio.js failed to parse: ${e && e.stack ? e.stack : e}`);
  }
  for (const w of recordWarnings) {
    problem(`warcio.js warning: ${w}`);
  }

  if (result.records.length === 0) {
    problem("no records");
  } else if (result.records[0].type !== "warcinfo") {
    problem(`first record is ${JSON.stringify(result.records[0].type)}, want warcinfo`);
  }
  if (result.compressed && result.records.length !== members.length) {
    problem(
      `${result.records.length} records in ${members.length} gzip members: every record must be its own gzip member`,
    );
  }
  const seen = new Set();
  for (const r of result.records) {
    if (result.compressed && seen.has(r.offset)) {
      problem(
        `two records reported at offset ${r.offset}: more than one record in one gzip member`,
      );
    }
    seen.add(r.offset);
  }
  return result;
}

async function main() {
  const args = process.argv.slice(2);
  let noOpen = false;
  const paths = [];
  for (const a of args) {
    if (a === "--no-open") {
      noOpen = true;
    } else if (a.startsWith("--")) {
      console.error(`verify.mjs: unknown flag ${a}`);
      process.exitCode = 2;
      return;
    } else {
      paths.push(a);
    }
  }
  if (paths.length === 0) {
    console.error("usage: node verify.mjs [--no-open] FILE...");
    process.exitCode = 2;
    return;
  }
  const out = { warcio: warcioVersion, node: process.version, files: [] };
  for (const p of paths) {
    out.files.push(await verifyFile(p, noOpen));
  }
  process.stdout.write(JSON.stringify(out) + "\n");
  if (out.files.some((f) => f.problems.length > 0)) {
    process.exitCode = 1;
  }
}

await main();
