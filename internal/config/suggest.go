package config

import (
	"strconv"
	"strings"

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

// flagCandidates are the long flag names, aliases included, each suggested
// as itself with two dashes.
func flagCandidates(gs []group) []suggest.Candidate {
	var cands []suggest.Candidate
	for _, g := range gs {
		for _, o := range g.options {
			for _, n := range append([]string{o.name}, o.aliases...) {
				if len(n) > 1 {
					cands = append(cands, suggest.Candidate{Name: n, Say: "--" + n, Key: o.name})
				}
			}
		}
	}
	return append(cands, suggest.Candidate{Name: "help", Say: "--help", Key: "help"})
}

// oneOf joins suggestions for "did you mean ...?": the one, or "one of"
// them all.
func oneOf(says []string) string {
	if len(says) == 1 {
		return says[0]
	}
	return "one of " + strings.Join(says, ", ")
}

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return q
}
