package crawllog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Line is a crawl log line read back by ParseLine, with Entry's field
// names. Text columns are as written: "-" stays "-" and %XX escapes are not
// undone. The extra-info members are decoded into their fields; a member
// that is absent leaves its field zero.
type Line struct {
	Logged        time.Time // UTC, millisecond precision
	Status        int
	ContentLength int64
	URL           string
	HopPath       string
	Via           string
	MIMEType      string
	Discovery     string    // Heritrix's discovery thread column, always "-" here
	FetchStart    time.Time // zero when the column is "-"
	FetchDuration time.Duration
	PayloadDigest string
	Seed          string
	Annotations   string // "duplicate:digest" or "-"
	Revisit       bool   // Annotations holds "duplicate:digest"

	// From the extra-info object.
	ContentSize      int64
	Exception        string
	ExceptionMessage string
	WARCFilename     string
	WARCOffset       int64
	Method           string // "" when the line has none: GET

	// Extra is the extra-info column as written.
	Extra string
}

// extraInfo is the extra-info object's members that Logger writes.
type extraInfo struct {
	ContentSize      int64  `json:"contentSize"`
	Exception        string `json:"exception"`
	ExceptionMessage string `json:"exceptionMessage"`
	WARCFilename     string `json:"warcFilename"`
	WARCFileOffset   int64  `json:"warcFileOffset"`
	Method           string `json:"method"`
}

// ParseLine parses one crawl log line, with or without its "\n". It is
// strict about the layout Logger writes: the padded status and length
// columns, single spaces between the other 13 columns, no empty column,
// well-formed timestamps and a JSON object at the end.
func ParseLine(s string) (Line, error) {
	var l Line
	s = strings.TrimSuffix(s, "\n")
	if strings.ContainsAny(s, "\n\r\t\v\f") {
		return l, errors.New("crawl log line: contains a line break or a tab")
	}
	if len(s) < len(logTimeLayout)+1 || s[len(logTimeLayout)] != ' ' {
		return l, errors.New("crawl log line: no log timestamp")
	}
	var err error
	l.Logged, err = time.Parse(logTimeLayout, s[:len(logTimeLayout)])
	if err != nil {
		return l, fmt.Errorf("crawl log line: log timestamp: %w", err)
	}
	rest := s[len(logTimeLayout)+1:]
	var status int64
	if status, rest, err = cutPadded(rest, 5); err != nil {
		return l, fmt.Errorf("crawl log line: status: %w", err)
	}
	l.Status = int(status)
	if l.ContentLength, rest, err = cutPadded(rest, 10); err != nil {
		return l, fmt.Errorf("crawl log line: content length: %w", err)
	}
	cols := strings.Split(rest, " ")
	if len(cols) != 10 {
		return l, fmt.Errorf("crawl log line: %d columns, want 13", len(cols)+3)
	}
	for i, c := range cols {
		if c == "" {
			return l, fmt.Errorf("crawl log line: column %d is empty", i+4)
		}
	}
	l.URL, l.HopPath, l.Via, l.MIMEType, l.Discovery = cols[0], cols[1], cols[2], cols[3], cols[4]
	if l.FetchStart, l.FetchDuration, err = parseFetchTime(cols[5]); err != nil {
		return l, fmt.Errorf("crawl log line: fetch timestamp %q: %w", cols[5], err)
	}
	l.PayloadDigest, l.Seed, l.Annotations, l.Extra = cols[6], cols[7], cols[8], cols[9]
	for a := range strings.SplitSeq(l.Annotations, ",") {
		l.Revisit = l.Revisit || a == revisitNote
	}
	if !strings.HasPrefix(l.Extra, "{") {
		return l, errors.New("crawl log line: extra info is not a JSON object")
	}
	var x extraInfo
	if err := json.Unmarshal([]byte(l.Extra), &x); err != nil {
		return l, fmt.Errorf("crawl log line: extra info: %w", err)
	}
	l.ContentSize, l.Exception, l.ExceptionMessage = x.ContentSize, x.Exception, x.ExceptionMessage
	l.WARCFilename, l.WARCOffset, l.Method = x.WARCFilename, x.WARCFileOffset, x.Method
	return l, nil
}

// cutPadded reads an integer right-aligned in width columns (or wider,
// when it does not fit) and the space after it.
func cutPadded(s string, width int) (int64, string, error) {
	var digits, rest string
	if len(s) > width && s[width] == ' ' {
		digits, rest = strings.TrimLeft(s[:width], " "), s[width+1:]
	} else {
		i := strings.IndexByte(s, ' ')
		if i <= width {
			return 0, "", fmt.Errorf("not right-aligned in %d columns", width)
		}
		digits, rest = s[:i], s[i+1:]
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, "", err
	}
	if strconv.FormatInt(n, 10) != digits {
		return 0, "", fmt.Errorf("%q is not a plain integer", digits)
	}
	return n, rest, nil
}

func parseFetchTime(s string) (time.Time, time.Duration, error) {
	if s == "-" {
		return time.Time{}, 0, nil
	}
	start, dur, ok := strings.Cut(s, "+")
	if !ok || len(start) != 17 || len(dur) < 3 || !allDigits(start) || !allDigits(dur) {
		return time.Time{}, 0, errors.New("want 17 digits, \"+\" and at least 3 digits")
	}
	t, err := time.Parse(fetchTimeLayout, start[:14])
	if err != nil {
		return time.Time{}, 0, err
	}
	ms, _ := strconv.Atoi(start[14:])
	d, err := strconv.ParseInt(dur, 10, 64)
	if err != nil {
		return time.Time{}, 0, err
	}
	return t.Add(time.Duration(ms) * time.Millisecond), time.Duration(d) * time.Millisecond, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ReadLines parses every line of a crawl log file. The content must end
// with "\n" (a file a crash cut short fails here).
func ReadLines(r io.Reader) ([]Line, error) {
	var lines []Line
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		s, err := br.ReadString('\n')
		if err == io.EOF {
			if s != "" {
				return lines, fmt.Errorf("line %d: no final newline", n)
			}
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		l, err := ParseLine(s)
		if err != nil {
			return lines, fmt.Errorf("line %d: %w", n, err)
		}
		lines = append(lines, l)
	}
}
