package warcproxmeta

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseBlocks parses a header with a crawl job's block list, as
// Brozzler sends it with every request: 200 rules, half of them regexes.
func BenchmarkParseBlocks(b *testing.B) {
	var rules []string
	for i := range 100 {
		rules = append(rules, fmt.Sprintf(`{"domain":"ads%d.example.com"}`, i),
			fmt.Sprintf(`{"regex":"^https?://[^/]*tracker%d\\.example\\.(com|net)/.*[?&](utm_[a-z]+|fbclid)=[\\w-]{1,64}.*$"}`, i))
	}
	header := `{"blocks":[` + strings.Join(rules, ",") + `]}`
	var p Parser // as the proxy keeps one
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Parse(header); err != nil {
			b.Fatal(err)
		}
	}
}
