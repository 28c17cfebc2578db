package dedup

import (
	"strings"
	"testing"
)

// FuzzCDXAnswerLine: whatever a CDX server sends as an answer line, the
// parser does not panic, and what it accepts has a real 14-digit
// timestamp and a digest; digests it normalises are canonical.
func FuzzCDXAnswerLine(f *testing.F) {
	for _, s := range []string{
		"20240102030405 JBD74VPOAFBTWYM63NM3DGGB7JB5OERO",
		"20240102030405 sha1:JBD74VPOAFBTWYM63NM3DGGB7JB5OERO",
		`com,example)/ 20240102030405 {"url": "http://example.com/", "digest": "JBD74VPOAFBTWYM63NM3DGGB7JB5OERO"}`,
		`{"timestamp": "20240102030405", "digest": "x"}`,
		"<html><body>oops</body></html>",
		"99999999999999 -",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		ts, d, err := parseCDXLine([]byte(line))
		if err == nil {
			if got := ts.Format("20060102150405"); len(got) != 14 {
				t.Fatalf("%q: timestamp %v", line, ts)
			}
			if d == "" {
				t.Fatalf("%q: empty digest accepted", line)
			}
		}
		if n, ok := sha1Base32(d); ok {
			if len(n) != 32 || strings.ToUpper(n) != n {
				t.Fatalf("%q: normalised to %q", d, n)
			}
			if again, ok := sha1Base32("sha1:" + n); !ok || again != n {
				t.Fatalf("%q: not stable: %q %v", n, again, ok)
			}
		}
	})
}
