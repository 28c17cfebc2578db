package dedupimport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/warcproxy/warcproxy/dedup"
)

// maxLine bounds a CDXJ line (a URL of a megabyte still fits).
const maxLine = 4 << 20

// errSkipLine marks a line that is not an index line at all: empty, or a
// comment or header (" !meta" lines of some indexers).
var errSkipLine = errors.New("not an index line")

// cdxjLine is what an index line says about its capture: warcproxy's and
// warcio.js's lines, and pywb's (cdxj-indexer) alike.
type cdxjLine struct {
	Timestamp string
	URL       string `json:"url"`
	Mime      string `json:"mime"`
	Status    string `json:"status"`
	Digest    string `json:"digest"`
}

// parseLine reads "URLKEY TIMESTAMP {json}".
func parseLine(line []byte) (cdxjLine, error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 || line[0] == '!' || line[0] == '#' {
		return cdxjLine{}, errSkipLine
	}
	_, rest, ok1 := bytes.Cut(line, []byte(" "))
	ts, js, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || len(js) == 0 || js[0] != '{' {
		return cdxjLine{}, fmt.Errorf("%.80q: want URLKEY TIMESTAMP {json}", line)
	}
	var l struct {
		cdxjLine
		Status json.RawMessage `json:"status"` // a string, or a number in some indexers
	}
	if err := json.Unmarshal(js, &l); err != nil {
		return cdxjLine{}, fmt.Errorf("%.80q: %w", line, err)
	}
	l.cdxjLine.Status = string(bytes.Trim(l.Status, `"`))
	l.Timestamp = string(ts)
	return l.cdxjLine, nil
}

// importCDXJ reads an index. A line has no record ID, so its entry has
// none, and the date is the line's timestamp (seconds, in UTC, as a CDX
// dedup hit's).
func (im *importer) importCDXJ(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		l, err := parseLine(sc.Bytes())
		if errors.Is(err, errSkipLine) {
			continue
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := im.line(l); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("after line %d: %w", n, err)
	}
	return nil
}

func (im *importer) line(l cdxjLine) error {
	if err := im.read(); err != nil {
		return err
	}
	switch {
	case l.Mime == "warc/revisit":
		im.skip(SkipRevisit)
		return nil
	case l.Status == "" || l.Status == "-":
		// Response lines carry the HTTP status; resource and metadata
		// records have none (request records are not indexed, or
		// carry no status either).
		im.skip(SkipNotResponse)
		return nil
	case l.URL == "":
		im.skip(SkipNoURL)
		return nil
	case l.Digest == "" || l.Digest == "-":
		im.skip(SkipNoDigest)
		return nil
	}
	date, ok := warcDate(l.Timestamp)
	if !ok {
		im.skip(SkipBadTimestamp)
		return nil
	}
	alg, sum, err := parseDigest(l.Digest)
	if err != nil {
		im.skip(SkipBadDigest)
		return nil
	}
	d, ok := im.normal(alg, sum)
	switch {
	case !ok:
		im.skip(SkipOtherDigest)
		return nil
	case isEmpty(alg, sum):
		im.skip(SkipEmpty)
		return nil
	}
	return im.add(d, dedup.Entry{URL: l.URL, Date: date})
}

// warcDate turns a 14-digit CDX timestamp into a WARC-Date.
func warcDate(ts string) (string, bool) {
	if len(ts) != 14 {
		return "", false
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return "", false
		}
	}
	return ts[0:4] + "-" + ts[4:6] + "-" + ts[6:8] + "T" + ts[8:10] + ":" + ts[10:12] + ":" + ts[12:14] + "Z", true
}
