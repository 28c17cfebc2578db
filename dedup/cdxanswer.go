package dedup

import (
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// parseCDXLine reads the timestamp and digest of one answer line:
// "TIMESTAMP DIGEST" (the fields asked for), "URLKEY TIMESTAMP {json}"
// (pywb's CDXJ) or "{json}" (NDJSON).
func parseCDXLine(line []byte) (time.Time, string, error) {
	var ts, digest string
	fields := strings.Fields(string(line))
	switch {
	case len(line) > 0 && line[0] == '{':
		var doc struct{ Timestamp, Digest string }
		if err := json.Unmarshal(line, &doc); err != nil {
			return time.Time{}, "", fmt.Errorf("line %.80q: %w", line, err)
		}
		ts, digest = doc.Timestamp, doc.Digest
	case len(fields) >= 3 && strings.HasPrefix(fields[2], "{"):
		var doc struct{ Digest string }
		parts := strings.SplitN(strings.TrimSpace(string(line)), " ", 3)
		if len(parts) != 3 {
			return time.Time{}, "", fmt.Errorf("line %.80q: want URLKEY TIMESTAMP {json}", line)
		}
		if err := json.Unmarshal([]byte(parts[2]), &doc); err != nil {
			return time.Time{}, "", fmt.Errorf("line %.80q: %w", line, err)
		}
		ts, digest = fields[1], doc.Digest
	case len(fields) == 2:
		ts, digest = fields[0], fields[1]
	default:
		return time.Time{}, "", fmt.Errorf("line %.80q: want TIMESTAMP DIGEST", line)
	}
	t, err := parseTimestamp14(ts)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("line %.80q: %w", line, err)
	}
	if digest == "" || digest == "-" {
		return time.Time{}, "", fmt.Errorf("line %.80q: no digest", line)
	}
	return t, digest, nil
}

// parseTimestamp14 parses a CDX timestamp, YYYYMMDDhhmmss in UTC.
func parseTimestamp14(s string) (time.Time, error) {
	if len(s) != 14 {
		return time.Time{}, fmt.Errorf("timestamp %q: want 14 digits", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, fmt.Errorf("timestamp %q: want 14 digits", s)
		}
	}
	t, err := time.Parse("20060102150405", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q: %w", s, err)
	}
	return t, nil
}

// sha1Base32 normalises a SHA-1 digest, with or without its "sha1:" label,
// in base32 or hex, to upper-case base32 without the label. ok is false for
// anything else (another algorithm, bad characters).
func sha1Base32(d string) (string, bool) {
	if i := strings.IndexByte(d, ':'); i >= 0 {
		if !strings.EqualFold(d[:i], "sha1") {
			return "", false
		}
		d = d[i+1:]
	}
	switch len(d) {
	case 32:
		b, err := base32.StdEncoding.DecodeString(strings.ToUpper(d))
		if err != nil || len(b) != 20 {
			return "", false
		}
		return base32.StdEncoding.EncodeToString(b), true
	case 40:
		b, err := hex.DecodeString(d)
		if err != nil {
			return "", false
		}
		return base32.StdEncoding.EncodeToString(b), true
	}
	return "", false
}
