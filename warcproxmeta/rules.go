package warcproxmeta

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// maxDecompressedBlocks bounds what compressed_blocks may expand to.
const maxDecompressedBlocks = 32 << 20

// Rule is one block rule, with urlcanon.MatchRule semantics: every condition
// given must hold. Conditions whose value is null or "" are absent, so a
// rule without conditions matches every URL.
type Rule struct {
	Raw    json.RawMessage // the rule as sent, compacted; echo it in "blocked-by-rule"
	Fields map[string]any

	surt, ssurt, domain, substring string
	regex                          *regexp.Regexp
	parentURLRegex                 bool // warcprox passes no parent url: such a rule never applies
	exact                          bool
	insts                          int // program size of its regexes (see maxHeaderInsts)
}

var ruleStringKeys = map[string]bool{
	"surt": true, "ssurt": true, "regex": true, "domain": true, "substring": true,
	"parent_url_regex": true, "url_match": true, "value": true,
}

func (p *Parser) parseRules(field string, raw []byte) ([]*Rule, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fieldErr(field, "must be a list of rule objects")
	}
	rules := make([]*Rule, 0, len(items))
	insts := 0
	for i, it := range items {
		r, err := p.parseRule(it)
		if err != nil {
			return nil, fieldErr(field, "rule %d: %v", i, err)
		}
		if insts += r.insts; insts > maxHeaderInsts {
			return nil, fieldErr(field, "rule %d: the rules' regexes compile to more than the %d instructions a header may use", i, maxHeaderInsts)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func (p *Parser) parseRule(raw json.RawMessage) (*Rule, error) {
	var obj map[string]json.RawMessage
	if firstByte(raw) != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, reason("must be a JSON object")
	}
	r := &Rule{}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	r.Raw = buf.Bytes()
	if err := json.Unmarshal(raw, &r.Fields); err != nil {
		return nil, err
	}
	str := map[string]string{}
	for k, v := range obj {
		switch {
		case ruleStringKeys[k]:
			if isNull(v) {
				continue
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("%q must be a string", k)
			}
			str[k] = s
		case k == "exact":
			if isNull(v) {
				continue
			}
			if err := json.Unmarshal(v, &r.exact); err != nil {
				return nil, reason(`"exact" must be true or false`)
			}
		default:
			return nil, fmt.Errorf("unknown condition %q (known: surt, ssurt, regex, domain, substring, parent_url_regex, exact, url_match, value)", k)
		}
	}
	r.surt, r.ssurt, r.domain, r.substring = str["surt"], str["ssurt"], str["domain"], str["substring"]
	regex := str["regex"]
	r.parentURLRegex = str["parent_url_regex"] != ""
	if r.parentURLRegex {
		_, n, err := p.compileFull(str["parent_url_regex"])
		if err != nil {
			return nil, fmt.Errorf(`"parent_url_regex": %v`, err)
		}
		r.insts += n
	}
	if um := str["url_match"]; um != "" { // deprecated form: url_match + value
		v := str["value"]
		var target *string
		switch um {
		case "REGEX_MATCH":
			target = &regex
		case "SURT_MATCH":
			target = &r.surt
		case "STRING_MATCH":
			target = &r.substring
		default:
			return nil, fmt.Errorf("url_match %q is not one of REGEX_MATCH, SURT_MATCH, STRING_MATCH", um)
		}
		if *target != "" {
			return nil, fmt.Errorf("url_match %s conflicts with a condition given directly", um)
		}
		*target = v
	}
	if regex != "" {
		re, n, err := p.compileFull(regex)
		if err != nil {
			return nil, fmt.Errorf(`"regex": %v`, err)
		}
		r.regex, r.insts = re, r.insts+n
	}
	return r, nil
}

func (r *Rule) applies(u *URL) bool {
	if r.domain != "" {
		if r.exact {
			if u.Host != r.domain {
				return false
			}
		} else if !HostMatchesDomain(u.Host, r.domain) {
			return false
		}
	}
	if r.surt != "" && !prefixOrExact(u.SURT(), r.surt, r.exact) {
		return false
	}
	if r.ssurt != "" && !prefixOrExact(u.SSURT(), r.ssurt, r.exact) {
		return false
	}
	if r.substring != "" && !strings.Contains(u.String(), r.substring) {
		return false
	}
	if r.regex != nil && !r.regex.MatchString(u.String()) {
		return false
	}
	return !r.parentURLRegex
}

func prefixOrExact(s, p string, exact bool) bool {
	if exact {
		return s == p
	}
	return strings.HasPrefix(s, p)
}

// decompressBlocks decodes compressed_blocks: base64 (characters outside the
// alphabet are skipped, as Python's b64decode does) of zlib-compressed JSON.
// gzip is accepted too.
func (p *Parser) decompressBlocks(s string) ([]*Rule, error) {
	const field = "compressed_blocks"
	clean := strings.Map(func(c rune) rune {
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' {
			return c
		}
		return -1
	}, s)
	data, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		return nil, fieldErr(field, "not valid base64: %v", err)
	}
	var zr io.Reader
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err = gzip.NewReader(bytes.NewReader(data))
	} else {
		zr, err = zlib.NewReader(bytes.NewReader(data))
	}
	if err != nil {
		return nil, fieldErr(field, "not zlib-compressed: %v", err)
	}
	plain, err := io.ReadAll(io.LimitReader(zr, maxDecompressedBlocks+1))
	if err != nil {
		return nil, fieldErr(field, "decompressing: %v", err)
	}
	if len(plain) > maxDecompressedBlocks {
		return nil, fieldErr(field, "decompresses to more than %d bytes", maxDecompressedBlocks)
	}
	if !json.Valid(plain) {
		return nil, fieldErr(field, "does not decompress to valid JSON")
	}
	return p.parseRules(field, plain)
}
