package warcproxmeta

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
)

// Parser parses Warcprox-Meta headers, keeping the block rules' regexes
// by pattern. A crawler such as Brozzler sends its job's whole block list
// with every request, and compiling it each time cost more than many
// fetches: a bounded repeat of a large class (`[\p{L}\p{N}]{1000}`)
// takes a millisecond and 40 KB. A Regexp is safe for concurrent use, so
// one is shared by all the requests a Parser parses. The zero Parser is
// ready to use.
type Parser struct {
	mu    sync.Mutex
	m     map[string]compiledRegex
	insts int // program instructions of the regexes in m
}

// compiledRegex is a kept regex and the size of its program.
type compiledRegex struct {
	re    *regexp.Regexp
	insts int
}

// What a header's regexes may cost, counted in program instructions
// (about 50 bytes each, and the time to build them): a short pattern may
// compile to a large program, and a header up to --max-header-bytes could
// otherwise hold a core and gigabytes for minutes (10,000 rules of
// `[\p{L}\p{N}]{1000}`: 8 s and 650 MB). A block list of 200 ordinary URL
// regexes is about 40,000 instructions. Past either bound: a 400.
const (
	maxRegexInsts  = 16 << 10 // one regex
	maxHeaderInsts = 1 << 20  // all the regexes of one header
)

// The cache is bounded by count and by size: a client sending ever new
// patterns must not pin what each request used to release. When either
// bound is reached it starts over.
const (
	maxCompiledRegexes = 4096
	maxCachedInsts     = 1 << 20 // about 50 MB
)

// compileFull compiles like urlcanon: Python re.match of pattern+`\Z`.
// The suffix is appended without grouping, exactly as urlcanon does; the
// pattern must parse on its own first (else "a)|(b" would pass). It
// returns the size of the program too, for the header's budget.
func (p *Parser) compileFull(pattern string) (*regexp.Regexp, int, error) {
	p.mu.Lock()
	c, ok := p.m[pattern]
	p.mu.Unlock()
	if ok {
		return c.re, c.insts, nil
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, 0, err
	}
	if len(prog.Inst) > maxRegexInsts {
		return nil, 0, fmt.Errorf("compiles to %d instructions, more than the %d a regex may", len(prog.Inst), maxRegexInsts)
	}
	re, err := regexp.Compile(`^(?:` + pattern + `\z)`)
	if err != nil {
		return nil, 0, err
	}
	p.keep(pattern, compiledRegex{re, len(prog.Inst)})
	return re, len(prog.Inst), nil
}

func (p *Parser) keep(pattern string, c compiledRegex) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= maxCompiledRegexes || p.insts+c.insts > maxCachedInsts {
		p.m, p.insts = make(map[string]compiledRegex), 0
	}
	if _, ok := p.m[pattern]; !ok {
		p.m[pattern] = c
		p.insts += c.insts
	}
}
