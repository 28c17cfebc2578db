package warcproxmeta

import (
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
	m     map[string]*regexp.Regexp
	insts int // program instructions of the regexes in m
}

// The cache is bounded by count and by size, counted in program
// instructions (about 50 bytes each): a short pattern may compile to a
// large program, and one that a single request would hold until it ends
// would otherwise stay, so a client sending ever new patterns could pin
// gigabytes. When either bound is reached the cache starts over; a regex
// too large to keep is compiled for each request, as without a cache.
const (
	maxCompiledRegexes = 4096
	maxCachedInsts     = 1 << 20 // about 50 MB
	maxCachedRegexSize = maxCachedInsts / 64
)

// compileFull compiles like urlcanon: Python re.match of pattern+`\Z`.
// The suffix is appended without grouping, exactly as urlcanon does; the
// pattern must parse on its own first (else "a)|(b" would pass).
func (p *Parser) compileFull(pattern string) (*regexp.Regexp, error) {
	p.mu.Lock()
	re, ok := p.m[pattern]
	p.mu.Unlock()
	if ok {
		return re, nil
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	re, err = regexp.Compile(`^(?:` + pattern + `\z)`)
	if err != nil {
		return nil, err
	}
	if prog, err := syntax.Compile(parsed.Simplify()); err == nil && len(prog.Inst) <= maxCachedRegexSize {
		p.keep(pattern, re, len(prog.Inst))
	}
	return re, nil
}

func (p *Parser) keep(pattern string, re *regexp.Regexp, insts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= maxCompiledRegexes || p.insts+insts > maxCachedInsts {
		p.m, p.insts = make(map[string]*regexp.Regexp), 0
	}
	if _, ok := p.m[pattern]; !ok {
		p.m[pattern] = re
		p.insts += insts
	}
}
