package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/warcproxy/warcproxy/internal/suggest"
)

// unexpectedArg explains the first positional argument: warcproxy takes
// none, and the usual causes are a boolean flag given a separate value
// (--gzip false) and a command after a flag (-v wacz).
func unexpectedArg(args, rest []string, byName map[string]*option) error {
	_, notBool := strconv.ParseBool(rest[0])
	if i := len(args) - len(rest) - 1; i >= 0 && notBool == nil {
		prev := strings.TrimLeft(args[i], "-")
		if o, ok := byName[prev]; ok && o.metavar == "" && !strings.Contains(args[i], "=") {
			return fmt.Errorf("unexpected argument %q: boolean flags take their value after =, as in %s=%s", rest[0], args[i], rest[0])
		}
	}
	return fmt.Errorf("unexpected argument %q (warcproxy takes only flags, and a command must come first)", rest[0])
}

// explainUndefined names the flag of a flag package error as the user
// typed it (FlagAsTyped) and says what an unknown one likely meant
// (unknownFlagHint).
func explainUndefined(err error, args []string) error {
	name, undefined := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	err = FlagAsTyped(err, args)
	if !undefined {
		return err
	}
	typed := strings.TrimPrefix(err.Error(), "flag provided but not defined: ")
	return errors.New("unknown flag " + typed + unknownFlagHint(name, strings.HasPrefix(typed, "--")))
}

// unknownFlagHint is what to add to "unknown flag -NAME": what to use
// instead of a warcprox option warcproxy lacks, or the flag most likely
// meant. warcprox parses with Python's argparse, which takes -zv for -z -v,
// -p8000 for -p 8000 and any unambiguous start of a long flag; Go's flag
// package takes none of them, so its users' habits are named here.
func unknownFlagHint(name string, twoDashes bool) string {
	if hint, ok := warcproxHint(name); ok {
		return " (" + warcproxOnlyMsg(hint) + ")"
	}
	gs := groups(new(Config), new(shorthands))
	says, how := suggest.Find(name, flagCandidates(gs))
	var short shortSplit
	split := false
	if !twoDashes {
		_, byName := flagSet(gs)
		short, split = splitShort(name, byName)
	}
	switch {
	case how == suggest.SameName:
		return ": did you mean " + says[0] + "?"
	case split && short.likely:
		return ": " + short.explain()
	case how == suggest.StartOf:
		return ": flags are not abbreviated; did you mean " + oneOf(says) + "?"
	case how == suggest.Near:
		return ": did you mean " + says[0] + "?"
	case split:
		return ": " + short.explain()
	}
	return ""
}

// shortSplit is an unknown one-dash flag read as argparse reads it: short
// flags bundled (-zv) or one joined to its value (-p8000).
type shortSplit struct {
	flags []string // -z, -v, -p
	value string   // joined to the last flag; "" if none
	long  string   // the long name of the flag that takes value
	// likely is false when the value would be free text (-dri: -d ri),
	// where a mistyped long flag (--dir) is the likelier reading.
	likely bool
}

// splitShort reads name as short flags, the last of them possibly joined
// to its value, which must be valid for it; ok is false if name cannot be
// read so.
func splitShort(name string, byName map[string]*option) (s shortSplit, ok bool) {
	if len(name) < 2 {
		return shortSplit{}, false
	}
	for i := range len(name) {
		o, known := byName[name[i:i+1]]
		if !known {
			return shortSplit{}, false
		}
		s.flags = append(s.flags, "-"+name[i:i+1])
		if b, isBool := o.value.(interface{ IsBoolFlag() bool }); isBool && b.IsBoolFlag() {
			continue
		}
		s.value, s.long, s.likely = name[i+1:], o.name, true
		if s.value == "" {
			return s, true // -zp 8000
		}
		if o.value.Set(s.value) != nil {
			return shortSplit{}, false
		}
		_, freeText := o.value.(stringValue)
		s.likely = !freeText
		return s, true
	}
	s.likely = true
	return s, true
}

// explain says how to write the flags of s apart.
func (s shortSplit) explain() string {
	use := strings.Join(s.flags, " ")
	if s.value != "" {
		use += " " + s.value
	}
	switch {
	case len(s.flags) == 1:
		return fmt.Sprintf("a short flag and its value are two arguments; use %s or --%s %s", use, s.long, s.value)
	case s.value != "":
		return "short flags cannot be bundled, nor joined to their value; use " + use
	}
	return "short flags cannot be bundled; use " + use
}

// FlagAsTyped rewrites an error of the flag package, which names a flag
// with one dash whatever was typed ("flag needs an argument: -port"), to
// name it as it appears in args ("--port"; never with a value given as
// --name=value). Other errors are returned as they are.
func FlagAsTyped(err error, args []string) error {
	msg := err.Error()
	for _, a := range args {
		if a == "--" {
			break
		}
		typed, _, _ := strings.Cut(a, "=")
		if len(typed) < 3 || !strings.HasPrefix(typed, "--") {
			continue
		}
		named := " " + typed[1:] // as the flag package names it
		i := strings.LastIndex(msg, named)
		if j := i + len(named); i >= 0 && (j == len(msg) || msg[j] == ':') {
			return errors.New(msg[:i+1] + typed + msg[j:])
		}
	}
	return err
}
