package config

import (
	"strconv"

	"github.com/warcproxy/warcproxy/internal/suggest"
)

// keyCandidates are the config file's keys, and the long flag aliases
// (max-threads) standing for the key they are an alias of.
func keyCandidates(keys []*option) []suggest.Candidate {
	var cands []suggest.Candidate
	for _, o := range keys {
		cands = append(cands, suggest.Candidate{Name: o.name, Say: o.name, Key: o.name})
	}
	for _, o := range keys {
		for _, a := range o.aliases {
			if len(a) > 1 {
				cands = append(cands, suggest.Candidate{Name: a, Say: o.name, Key: o.name})
			}
		}
	}
	return cands
}

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return q
}
