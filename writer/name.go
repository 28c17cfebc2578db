package writer

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// placeholder kinds of a filename template.
const (
	phLiteral = iota
	phPrefix
	phTimestamp14
	phTimestamp17
	phSerialno
	phRandomtoken
	phHostname
	phShorthostname
	phPort
)

var placeholders = map[string]int{
	"prefix":        phPrefix,
	"timestamp14":   phTimestamp14,
	"timestamp17":   phTimestamp17,
	"serialno":      phSerialno,
	"randomtoken":   phRandomtoken,
	"hostname":      phHostname,
	"shorthostname": phShorthostname,
	"port":          phPort,
}

type segment struct {
	kind    int
	literal string
}

// namer renders file names. Serial numbers come from one counter per prefix
// shared by all workers, so two workers never pick the same name.
type namer struct {
	segments    []segment
	ext         string // ".warc", ".warc.gz" or ".warc.zst"
	randomtoken string
	hostname    string
	port        string

	mu      sync.Mutex
	serials map[string]int
}

func newNamer(o Options) (*namer, error) {
	segs, err := parseTemplate(o.FilenameTemplate)
	if err != nil {
		return nil, err
	}
	n := &namer{
		segments:    segs,
		ext:         ".warc" + o.Compression.Ext(),
		randomtoken: randomToken(),
		hostname:    o.Hostname,
		port:        strconv.Itoa(o.Port),
		serials:     make(map[string]int),
	}
	// A template, host name or port that yields a path is refused now
	// rather than at the first file.
	if name := n.render(o.Prefix, 0, time.Now(), 0); strings.ContainsAny(name, "/\\\x00") || name == n.ext {
		return nil, fmt.Errorf("filename template %q yields an invalid file name %q", o.FilenameTemplate, name)
	}
	return n, nil
}

// parseTemplate splits a template into literals and placeholders, Python
// str.format style as warcprox: "{name}", with "{{" and "}}" for braces.
func parseTemplate(t string) ([]segment, error) {
	var segs []segment
	var lit strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '{' && i+1 < len(t) && t[i+1] == '{', c == '}' && i+1 < len(t) && t[i+1] == '}':
			lit.WriteByte(c)
			i++
		case c == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("filename template %q: unclosed {", t)
			}
			name := t[i+1 : i+end]
			kind, ok := placeholders[name]
			if !ok {
				return nil, fmt.Errorf("filename template %q: unknown placeholder {%s}", t, name)
			}
			if lit.Len() > 0 {
				segs = append(segs, segment{kind: phLiteral, literal: lit.String()})
				lit.Reset()
			}
			segs = append(segs, segment{kind: kind})
			i += end
		case c == '}':
			return nil, fmt.Errorf("filename template %q: single } (write }} for a brace)", t)
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		segs = append(segs, segment{kind: phLiteral, literal: lit.String()})
	}
	return segs, nil
}

// nextSerial returns the next serial number of prefix.
func (n *namer) nextSerial(prefix string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.serials[prefix]
	n.serials[prefix] = s + 1
	return s
}

// giveBack returns serial, the last one nextSerial gave for prefix, when
// no file was kept under it (its creation or first write failed, as on a
// full disk): else every retry would leave a gap in the numbers, which an
// archive's checks take for a lost file. A serial given out since is kept.
func (n *namer) giveBack(prefix string, serial int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.serials[prefix] == serial+1 {
		n.serials[prefix] = serial
	}
}

// render returns the final file name (without ".open"); dup > 0 appends
// "-dup" before the extension.
func (n *namer) render(prefix string, serial int, now time.Time, dup int) string {
	now = now.UTC()
	b := make([]byte, 0, 96)
	for _, s := range n.segments {
		switch s.kind {
		case phLiteral:
			b = append(b, s.literal...)
		case phPrefix:
			b = append(b, prefix...)
		case phTimestamp14:
			b = now.AppendFormat(b, "20060102150405")
		case phTimestamp17:
			b = now.AppendFormat(b, "20060102150405.000")
			// drop the dot: 14 digits of seconds then 3 of milliseconds
			copy(b[len(b)-4:], b[len(b)-3:])
			b = b[:len(b)-1]
		case phSerialno:
			b = fmt.Appendf(b, "%05d", serial)
		case phRandomtoken:
			b = append(b, n.randomtoken...)
		case phHostname:
			b = append(b, n.hostname...)
		case phShorthostname:
			h, _, _ := strings.Cut(n.hostname, ".")
			b = append(b, h...)
		case phPort:
			b = append(b, n.port...)
		}
	}
	if dup > 0 {
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(dup), 10)
	}
	b = append(b, n.ext...)
	return string(b)
}

// randomToken returns 8 random characters from [a-z0-9], like warcprox's
// token: it tells apart files of processes started in the same millisecond.
func randomToken() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics on failure)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}
