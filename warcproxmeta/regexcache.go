package warcproxmeta

import (
	"regexp"
	"regexp/syntax"
	"sync"
)

// compiledRegexes keeps the block rules' regexes by pattern. A crawler
// such as Brozzler sends its job's whole block list with every request,
// and compiling it each time cost more than many fetches: a bounded repeat
// of a large class (`[\p{L}\p{N}]{1000}`) takes a millisecond and 40 KB.
// A Regexp is safe for concurrent use, so one is shared by all requests.
var compiledRegexes struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

// maxCompiledRegexes bounds the cache; when it is full it starts over, so
// a client that sends ever new patterns costs what it did without one.
const maxCompiledRegexes = 4096

// compileFull compiles like urlcanon: Python re.match of pattern+`\Z`.
// The suffix is appended without grouping, exactly as urlcanon does; the
// pattern must parse on its own first (else "a)|(b" would pass).
func compileFull(pattern string) (*regexp.Regexp, error) {
	compiledRegexes.Lock()
	re, ok := compiledRegexes.m[pattern]
	compiledRegexes.Unlock()
	if ok {
		return re, nil
	}
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(`^(?:` + pattern + `\z)`)
	if err != nil {
		return nil, err
	}
	compiledRegexes.Lock()
	if compiledRegexes.m == nil || len(compiledRegexes.m) >= maxCompiledRegexes {
		compiledRegexes.m = make(map[string]*regexp.Regexp)
	}
	compiledRegexes.m[pattern] = re
	compiledRegexes.Unlock()
	return re, nil
}
