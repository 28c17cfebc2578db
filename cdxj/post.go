package cdxj

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxQuerySize is warcio.js's DEFAULT_MAX_QUERY_SIZE: the query built from
// a request body is cut to this many UTF-16 code units.
const maxQuerySize = 4096

// postQuery is warcio.js's postToGetUrl for a non-GET request: the
// requestBody field it records and the URL whose SURT becomes the urlkey.
func postQuery(url, method, contentType string, body []byte) (requestBody, keyURL string) {
	requestMime, _, _ := strings.Cut(contentType, ";")
	var query string
	switch requestMime {
	case "application/x-www-form-urlencoded":
		query = decodeUTF8(body)
	case "application/json", "text/plain":
		query = jsonToQueryString(decodeUTF8(body))
	case "multipart/form-data":
		query = mfdToQueryString(decodeUTF8(body), contentType)
	default:
		query = "__wb_post_data=" + base64.StdEncoding.EncodeToString(body)
	}
	query = sliceUTF16(query, maxQuerySize)
	requestBody = query
	decoded, err := decodeURI(query)
	if err != nil {
		decoded = ""
	}
	sep := "?"
	if strings.Index(url, "?") > 0 {
		sep = "&"
	}
	return requestBody, url + sep + "__wb_method=" + method + "&" + decoded
}

// decodeURI is JavaScript's decodeURI: percent-escapes of UTF-8 are
// decoded except those of ";/?:@&=+$,#", which stay as written.
func decodeURI(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	errMalformed := errors.New("URI malformed")
	hexByte := func(i int) (byte, bool) {
		if i+3 > len(s) || s[i] != '%' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		return byte(v), err == nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '%' {
			b.WriteByte(s[i])
			i++
			continue
		}
		c, ok := hexByte(i)
		if !ok {
			return "", errMalformed
		}
		if c < 0x80 {
			if strings.IndexByte(";/?:@&=+$,#", c) >= 0 {
				b.WriteString(s[i : i+3])
			} else {
				b.WriteByte(c)
			}
			i += 3
			continue
		}
		n := 0
		switch {
		case c&0xe0 == 0xc0:
			n = 2
		case c&0xf0 == 0xe0:
			n = 3
		case c&0xf8 == 0xf0:
			n = 4
		default:
			return "", errMalformed
		}
		seq := []byte{c}
		j := i + 3
		for k := 1; k < n; k++ {
			cc, ok := hexByte(j)
			if !ok || cc&0xc0 != 0x80 {
				return "", errMalformed
			}
			seq = append(seq, cc)
			j += 3
		}
		if _, size := utf8.DecodeRune(seq); size != n {
			return "", errMalformed
		}
		b.Write(seq)
		i = j
	}
	return b.String(), nil
}

// searchParams is an ordered URLSearchParams.
type searchParams struct{ names, values []string }

func (q *searchParams) has(name string) bool {
	for _, n := range q.names {
		if n == name {
			return true
		}
	}
	return false
}

// set is URLSearchParams.set: replace the first pair of that name and drop
// the others, or append.
func (q *searchParams) set(name, value string) {
	for i := 0; i < len(q.names); i++ {
		if q.names[i] != name {
			continue
		}
		q.values[i] = value
		for j := len(q.names) - 1; j > i; j-- {
			if q.names[j] == name {
				q.names = append(q.names[:j], q.names[j+1:]...)
				q.values = append(q.values[:j], q.values[j+1:]...)
			}
		}
		return
	}
	q.names = append(q.names, name)
	q.values = append(q.values, value)
}

// String is the application/x-www-form-urlencoded serializer.
func (q *searchParams) String() string {
	var b strings.Builder
	for i := range q.names {
		if i > 0 {
			b.WriteByte('&')
		}
		formEncode(&b, q.names[i])
		b.WriteByte('=')
		formEncode(&b, q.values[i])
	}
	return b.String()
}

func formEncode(b *strings.Builder, s string) {
	const upper = "0123456789ABCDEF"
	s = strings.ToValidUTF8(s, "\uFFFD")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte('+')
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '*', c == '-', c == '.', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(upper[c>>4])
			b.WriteByte(upper[c&0xf])
		}
	}
}

// jsonToQueryString is warcio.js's flattening of a JSON body into query
// parameters: every string, number and boolean (and null in an object)
// becomes name=value under its nearest key, repeated keys get ".2_",
// ".3_"... suffixes; a body that is not JSON gives "".
func jsonToQueryString(text string) string {
	v, ok := parseJSON(text)
	if !ok {
		return ""
	}
	q := &searchParams{}
	dupes := map[string]int{}
	getKey := func(key string) string {
		if !q.has(key) {
			return key
		}
		if _, ok := dupes[key]; !ok {
			dupes[key] = 1
		}
		dupes[key]++
		return key + "." + strconv.Itoa(dupes[key]) + "_"
	}
	var walk func(v jsValue, key string)
	walk = func(v jsValue, key string) {
		queryValue := ""
		switch v.kind {
		case jsNull:
			queryValue = "null"
		case jsObject:
			for _, m := range v.members {
				walk(m.value, m.key)
			}
		case jsArray:
			for _, e := range v.elems {
				walk(e, key)
			}
		case jsString, jsNumber, jsBool:
			queryValue = v.str
		}
		if queryValue != "" {
			q.set(getKey(key), queryValue)
		}
	}
	walk(v, "")
	return q.String()
}

// mfdToQueryString is warcio.js's reading of a multipart/form-data body:
// the first line of each part's value under its name.
func mfdToQueryString(text, contentType string) string {
	q := &searchParams{}
	parts := strings.Split(contentType, "boundary=")
	boundary := "undefined"
	if len(parts) > 1 {
		boundary = parts[1]
	}
	sep, err := regexp.Compile("(?i)-*" + boundary + "-*")
	if err != nil {
		return ""
	}
	field := regexp.MustCompile(`(?i)name="([^"]+)"\r\n\r\n([^\n\r\x{2028}\x{2029}]*)`)
	for _, part := range sep.Split(text, -1) {
		if m := field.FindStringSubmatch(jsTrim(part)); m != nil {
			q.set(m[1], m[2])
		}
	}
	return q.String()
}

// JSON values, parsed as JSON.parse does, with JavaScript's property order:
// integer keys first in ascending order, then the others as first written.
type jsKind int

const (
	jsNull jsKind = iota
	jsBool
	jsNumber
	jsString
	jsArray
	jsObject
)

type jsMember struct {
	key   string
	value jsValue
}

type jsValue struct {
	kind    jsKind
	str     string // string value, or the number/boolean as String() writes it
	elems   []jsValue
	members []jsMember
}

type jsonParser struct {
	s string
	i int
}

func parseJSON(s string) (jsValue, bool) {
	p := &jsonParser{s: s}
	p.ws()
	v, ok := p.value(0)
	if !ok {
		return jsValue{}, false
	}
	p.ws()
	return v, p.i == len(p.s)
}

func (p *jsonParser) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *jsonParser) lit(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *jsonParser) value(depth int) (jsValue, bool) {
	if depth > 512 || p.i >= len(p.s) {
		return jsValue{}, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		p.i++
		v := jsValue{kind: jsArray}
		p.ws()
		if p.lit("]") {
			return v, true
		}
		for {
			p.ws()
			e, ok := p.value(depth + 1)
			if !ok {
				return v, false
			}
			v.elems = append(v.elems, e)
			p.ws()
			if p.lit("]") {
				return v, true
			}
			if !p.lit(",") {
				return v, false
			}
		}
	case c == '"':
		s, ok := p.str()
		return jsValue{kind: jsString, str: s}, ok
	case p.lit("true"):
		return jsValue{kind: jsBool, str: "true"}, true
	case p.lit("false"):
		return jsValue{kind: jsBool, str: "false"}, true
	case p.lit("null"):
		return jsValue{kind: jsNull}, true
	default:
		return p.number()
	}
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`)

func (p *jsonParser) number() (jsValue, bool) {
	m := jsonNumber.FindString(p.s[p.i:])
	if m == "" {
		return jsValue{}, false
	}
	p.i += len(m)
	f, err := strconv.ParseFloat(m, 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || !errors.Is(ne.Err, strconv.ErrRange) {
			return jsValue{}, false
		}
	}
	return jsValue{kind: jsNumber, str: formatJSFloat(f)}, true
}

func (p *jsonParser) str() (string, bool) {
	p.i++ // opening quote
	var units []uint16
	var b strings.Builder
	flush := func() {
		if len(units) > 0 {
			b.WriteString(string(utf16.Decode(units)))
			units = units[:0]
		}
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			flush()
			return b.String(), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			e := p.s[p.i+1]
			p.i += 2
			if e == 'u' {
				if p.i+4 > len(p.s) {
					return "", false
				}
				v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 16)
				if err != nil {
					return "", false
				}
				units = append(units, uint16(v))
				p.i += 4
				continue
			}
			flush()
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				return "", false
			}
		default:
			flush()
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteRune(r)
			p.i += n
		}
	}
	return "", false
}

func (p *jsonParser) object(depth int) (jsValue, bool) {
	p.i++
	v := jsValue{kind: jsObject}
	index := map[string]int{}
	p.ws()
	if p.lit("}") {
		return v, true
	}
	for {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return v, false
		}
		k, ok := p.str()
		if !ok {
			return v, false
		}
		p.ws()
		if !p.lit(":") {
			return v, false
		}
		p.ws()
		e, ok := p.value(depth + 1)
		if !ok {
			return v, false
		}
		if i, dup := index[k]; dup {
			v.members[i].value = e
		} else {
			index[k] = len(v.members)
			v.members = append(v.members, jsMember{k, e})
		}
		p.ws()
		if p.lit("}") {
			break
		}
		if !p.lit(",") {
			return v, false
		}
	}
	// Integer-like keys come first, in numeric order.
	var ints, rest []jsMember
	for _, m := range v.members {
		if isArrayIndex(m.key) {
			ints = append(ints, m)
		} else {
			rest = append(rest, m)
		}
	}
	sortMembers(ints)
	v.members = append(ints, rest...)
	return v, true
}

func isArrayIndex(k string) bool {
	if k == "" || (len(k) > 1 && k[0] == '0') {
		return false
	}
	n, err := strconv.ParseUint(k, 10, 32)
	return err == nil && n < 1<<32-1
}

func sortMembers(ms []jsMember) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0; j-- {
			a, _ := strconv.ParseUint(ms[j-1].key, 10, 32)
			b, _ := strconv.ParseUint(ms[j].key, 10, 32)
			if a <= b {
				break
			}
			ms[j-1], ms[j] = ms[j], ms[j-1]
		}
	}
}
