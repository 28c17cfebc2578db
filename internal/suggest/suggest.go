// Package suggest finds the name a mistyped one likely meant, for the "did
// you mean" of warcproxy's flags, config keys and commands alike, and with
// it explains the errors of any flag.FlagSet (FlagError), so that every
// command, and every subcommand with flags of its own, explains them alike.
package suggest

import "strings"

// A Candidate is a name a mistyped one may have meant: a flag, a config
// key, a command. Say is what a suggestion shows (the flag as typed,
// "--max-threads"; the key an alias stands for, "max-conns"); candidates
// with the same Key are one setting, suggested once.
type Candidate struct {
	Name, Say, Key string
}

// Match says how the suggestions relate to the unknown name.
type Match int

const (
	None     Match = iota
	SameName       // the same but for case or _ for -
	StartOf        // the unknown name is the start of each suggestion
	Near           // at most two edits away
)

// Find returns what the unknown name typed meant among cands: the one that
// is typed but for case or _ for -; else every one typed is the start of
// (argparse, and so warcprox, accepts such abbreviations), once per Key;
// else the nearest one at most two edits away (and fewer than typed has
// letters).
func Find(typed string, cands []Candidate) ([]string, Match) {
	norm := strings.ToLower(strings.ReplaceAll(typed, "_", "-"))
	for _, c := range cands {
		if norm == c.Name {
			return []string{c.Say}, SameName
		}
	}
	if starts := startOf(norm, cands); len(starts) > 0 {
		return starts, StartOf
	}
	best, bestDist := "", min(3, len(norm))
	for _, c := range cands {
		if d := editDistance(norm, c.Name); d < bestDist {
			best, bestDist = c.Say, d
		}
	}
	if best == "" {
		return nil, None
	}
	return []string{best}, Near
}

// Names is Find over plain names, each its own suggestion, whatever the
// match.
func Names(typed string, names []string) []string {
	cands := make([]Candidate, len(names))
	for i, n := range names {
		cands[i] = Candidate{Name: n, Say: n, Key: n}
	}
	s, _ := Find(typed, cands)
	return s
}

// startOf returns, once per Key, the candidates that start with norm, a
// name of at least two letters (one letter would be the start of most).
func startOf(norm string, cands []Candidate) []string {
	if len(norm) < 2 {
		return nil
	}
	var says []string
	seen := make(map[string]bool)
	for _, c := range cands {
		if strings.HasPrefix(c.Name, norm) && !seen[c.Key] {
			seen[c.Key] = true
			says = append(says, c.Say)
		}
	}
	return says
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
