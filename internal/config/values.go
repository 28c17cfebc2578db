package config

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// The flag.Value implementations below are shared by the command line and
// the config file, so a value means the same wherever it is written.

// parseDuration parses a duration as Go writes it ("90s", "1h30m") or, as
// warcprox's options take it, a bare number of seconds ("60", "0.5").
// Negative durations are refused.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	seconds := isDecimal(strings.TrimLeft(t, "+-"))
	src := t
	if seconds {
		src = t + "s"
	}
	d, err := time.ParseDuration(src)
	if err != nil && seconds {
		return 0, errors.New("too large") // the only way a number of seconds fails
	}
	if err != nil {
		return 0, errors.New("not a duration: want a number of seconds (60, 0.5) or a Go duration (90s, 2m)")
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// formatDuration writes d the way it is typed: 2m rather than 2m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// sizeUnits are the size suffixes, matched case-insensitively. The decimal
// ones follow SI (and disk vendors), the binary ones IEC. Single letters
// (k, m, g) are refused rather than guessed: "512k" means 512000 to some
// readers and 524288 to others.
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9},
	{"MiB", 1 << 20}, {"MB", 1e6},
	{"KiB", 1 << 10}, {"KB", 1e3},
	{"B", 1},
}

// parseSize parses a byte count: a bare integer ("1000000000"), or a number
// with a unit, KB MB GB TB (powers of 1000) or KiB MiB GiB TiB (powers of
// 1024), case-insensitive, optionally with a fraction that comes to whole
// bytes ("1.5GiB"). Negative sizes are refused.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if strings.HasPrefix(t, "-") {
		return 0, errors.New("must not be negative")
	}
	if !isDecimal(num) {
		return 0, errors.New("not a size: want bytes (1000000) or a number and a unit (512KiB, 1GB)")
	}
	mult := int64(1)
	if unit != "" {
		mult = 0
		for _, u := range sizeUnits {
			if strings.EqualFold(unit, u.name) {
				mult = u.mult
				break
			}
		}
		if mult == 0 {
			if len(unit) == 1 && strings.ContainsAny(unit, "kKmMgGtT") {
				u := strings.ToUpper(unit)
				return 0, fmt.Errorf("ambiguous unit %q: write %s%siB (powers of 1024) or %s%sB (powers of 1000)", unit, num, u, num, u)
			}
			return 0, fmt.Errorf("unknown unit %q: want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB", unit)
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, errors.New("not a size")
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, errors.New("not a whole number of bytes")
	}
	if !r.Num().IsInt64() {
		return 0, errors.New("too large")
	}
	return r.Num().Int64(), nil
}

// formatSize writes n with the largest unit that divides it exactly, so
// that parseSize(formatSize(n)) == n.
func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range sizeUnits[:len(sizeUnits)-1] {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// isDecimal reports whether s is digits with an optional fraction: "60",
// "0.5", "5.", ".5". Signs, exponents, hex, inf and nan are not.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] >= '0' && s[i] <= '9':
			digits++
		case s[i] == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

type stringValue struct{ p *string }

func (v stringValue) Set(s string) error { *v.p = s; return nil }

// Get makes a stringValue a flag.Getter of a string: any text is a value
// of it (suggest.FlagError reads -dri as --dir mistyped, not -d ri).
func (v stringValue) Get() any { return *v.p }

func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

// enumValue is a string restricted to a few choices, matched
// case-insensitively and stored as written in choices.
type enumValue struct {
	p       *string
	choices []string
}

func (v enumValue) Set(s string) error {
	for _, c := range v.choices {
		if strings.EqualFold(s, c) {
			*v.p = c
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(v.choices, ", "))
}

func (v enumValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

type intValue struct{ p *int }

func (v intValue) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 0)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return errors.New("out of range")
		}
		return errors.New("not an integer")
	}
	*v.p = int(n)
	return nil
}

func (v intValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}

type boolValue struct{ p *bool }

func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return errors.New("want true or false")
	}
	*v.p = b
	return nil
}

func (v boolValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatBool(*v.p)
}

func (v boolValue) IsBoolFlag() bool { return true }

type durationValue struct{ p *time.Duration }

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}

func (v durationValue) String() string {
	if v.p == nil {
		return ""
	}
	return formatDuration(*v.p)
}

type sizeValue struct{ p *int64 }

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

func (v sizeValue) String() string {
	if v.p == nil {
		return ""
	}
	return formatSize(*v.p)
}

// listValue collects a repeatable flag. The first Set replaces the value it
// started with (the default, or the config file's list), later ones append.
// With upper set, values are stored in capitals.
type listValue struct {
	p       *[]string
	started *bool
	upper   bool
}

func newListValue(p *[]string, upper bool) listValue {
	return listValue{p: p, started: new(bool), upper: upper}
}

func (v listValue) Set(s string) error {
	if !*v.started {
		*v.p = nil
		*v.started = true
	}
	if v.upper {
		s = strings.ToUpper(s)
	}
	*v.p = append(*v.p, s)
	return nil
}

// reset empties the list before a config file's sequence is added to it.
func (v listValue) reset() {
	*v.p = nil
	*v.started = true
}

func (v listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}
