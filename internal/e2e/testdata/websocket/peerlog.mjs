// One JSON line per message a peer sent or received, for the Go test to
// check the WARC's message log against.
import fs from "node:fs";

export function peerLog(path) {
  const fd = fs.openSync(path, "w");
  const line = (o) => fs.writeSync(fd, JSON.stringify(o) + "\n");
  return {
    message(dir, data, isBinary) {
      if (isBinary) {
        line({ dir, kind: "binary", data: Buffer.from(data).toString("base64") });
      } else {
        line({ dir, kind: "text", data: data.toString() });
      }
    },
    control(dir, kind, data) {
      line({ dir, kind, data: Buffer.from(data).toString("base64") });
    },
    close(dir, code, reason) {
      line({ dir, kind: "close", code, reason: reason.toString() });
    },
    end() {
      fs.closeSync(fd);
    },
  };
}
