// cdx.mjs: index WARC files the way a replay tool does, with warcio.js's
// CDX indexer, and check that every index entry leads back to its record.
//
// Usage: node cdx.mjs FILE...
//
// Each file is read as `warcio cdx-index` reads it (a 128 KiB stream, not
// member by member), with CDXAndRecordIndexer, which pairs each
// response/revisit with the request record next to it (same
// WARC-Target-URI), as pywb and ReplayWeb.page index. Then, as a replay
// tool resolving a capture, each entry's byte range [offset, offset+length)
// is cut from the file, inflated if the file is gzip (it must be whole gzip
// members), parsed again, and must hold exactly one record, of a
// response/revisit type, with the entry's URL and payload digest.
//
// The file is also walked with warcio.js's plain indexer, whose records must
// tile it from the first byte to the last (warcio.js stops quietly at a
// truncated gzip member). warcio.js reports some parse trouble through
// console.warn; anything it prints there is a problem too.
//
// Prints one JSON object on stdout:
//   {"warcio": VERSION, "node": VERSION, "files": [{"path", "entries":
//     [{"url", "urlkey", "timestamp", "status", "mime", "digest", "offset",
//       "length", "method", "hasRequest", "requestURI"}], "problems": ["..."]}]}
// and exits 1 if any file has a problem, 2 on bad usage.

import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { CDXAndRecordIndexer, Indexer, WARCParser } from "warcio";

const warcioVersion = JSON.parse(
  fs.readFileSync(new URL("./node_modules/warcio/package.json", import.meta.url), "utf8"),
).version;

const warnings = [];
console.warn = (...args) => {
  warnings.push(args.map(String).join(" "));
};

async function* once(buf) {
  yield buf;
}

// recheck parses the byte range of one entry on its own and returns a
// problem or null.
async function recheck(buf, compressed, entry) {
  const where = `entry ${entry.url} at offset ${entry.offset}`;
  const off = Number(entry.offset);
  const len = Number(entry.length);
  if (!Number.isInteger(off) || !Number.isInteger(len) || len <= 0 || off + len > buf.length) {
    return `${where}: bad range offset=${entry.offset} length=${entry.length} (file is ${buf.length} bytes)`;
  }
  let data = buf.subarray(off, off + len);
  if (compressed) {
    try {
      data = zlib.gunzipSync(data);
    } catch (e) {
      return `${where}: the range is not whole gzip members: ${e.message}`;
    }
  }
  const parser = new WARCParser(once(data), { parseHttp: true });
  const records = [];
  try {
    for await (const r of parser) {
      await r.readFully(false);
      records.push(r);
    }
  } catch (e) {
    return `${where}: the range does not parse: ${e.message}`;
  }
  if (records.length !== 1) {
    return `${where}: the range holds ${records.length} records, want 1`;
  }
  const r = records[0];
  if (r.warcType !== "response" && r.warcType !== "revisit") {
    return `${where}: the range holds a ${r.warcType} record`;
  }
  if (r.warcTargetURI !== entry.url) {
    return `${where}: the range holds a record for ${r.warcTargetURI}`;
  }
  const digest = (r.warcPayloadDigest || "").split(":", 2)[1] || null;
  if ((entry.digest || null) !== digest) {
    return `${where}: digest ${entry.digest}, the record says ${r.warcPayloadDigest}`;
  }
  return null;
}

// checkTiling walks every record with warcio.js's plain indexer and returns
// a problem unless the records tile the file: each starts where the one
// before ended and the last ends at the end of the file. warcio.js stops
// quietly at a truncated or corrupt gzip member, so an index of a damaged
// file would otherwise just be shorter.
async function checkTiling(p, size) {
  const indexer = new Indexer({ fields: ["offset", "length", "warc-type"] });
  const files = [
    { filename: path.basename(p), reader: fs.createReadStream(p, { highWaterMark: 128 * 1024 }) },
  ];
  let end = 0;
  let n = 0;
  try {
    for await (const r of indexer.iterIndex(files)) {
      if (r.offset !== end) {
        return `record ${n} (${r["warc-type"]}) starts at offset ${r.offset}, the one before ended at ${end}`;
      }
      end = r.offset + r.length;
      n++;
    }
  } catch (e) {
    return `warcio.js indexer failed: ${e && e.stack ? e.stack : e}`;
  }
  if (end !== size) {
    return `warcio.js read ${n} records ending at offset ${end}, the file is ${size} bytes`;
  }
  return null;
}

async function indexFile(p) {
  const result = { path: p, entries: [], problems: [] };
  const problem = (msg) => result.problems.push(msg);
  warnings.length = 0;
  const indexer = new CDXAndRecordIndexer({ format: "json" });
  const files = [
    { filename: path.basename(p), reader: fs.createReadStream(p, { highWaterMark: 128 * 1024 }) },
  ];
  try {
    for await (const { cdx, reqRecord } of indexer.iterIndex(files)) {
      result.entries.push({
        url: cdx.url ?? null,
        urlkey: cdx.urlkey ?? null,
        timestamp: cdx.timestamp ?? null,
        status: cdx.status == null ? null : String(cdx.status),
        mime: cdx.mime ?? null,
        digest: cdx.digest ?? null,
        offset: cdx.offset,
        length: cdx.length,
        method: cdx.method ?? null,
        hasRequest: reqRecord !== null,
        requestURI: reqRecord ? reqRecord.warcTargetURI : null,
      });
    }
  } catch (e) {
    problem(`warcio.js cdx indexer failed: ${e && e.stack ? e.stack : e}`);
  }
  let buf;
  try {
    buf = fs.readFileSync(p);
  } catch (e) {
    problem(`reading file: ${e.message}`);
    return result;
  }
  const compressed = buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
  const tiling = await checkTiling(p, buf.length);
  if (tiling) {
    problem(tiling);
  }
  for (const entry of result.entries) {
    const msg = await recheck(buf, compressed, entry);
    if (msg) {
      problem(msg);
    }
  }
  for (const w of warnings) {
    problem(`warcio.js warning: ${w}`);
  }
  return result;
}

async function main() {
  const paths = process.argv.slice(2);
  if (paths.length === 0 || paths.some((a) => a.startsWith("--"))) {
    console.error("usage: node cdx.mjs FILE...");
    process.exitCode = 2;
    return;
  }
  const out = { warcio: warcioVersion, node: process.version, files: [] };
  for (const p of paths) {
    out.files.push(await indexFile(p));
  }
  process.stdout.write(JSON.stringify(out) + "\n");
  if (out.files.some((f) => f.problems.length > 0)) {
    process.exitCode = 1;
  }
}

await main();
