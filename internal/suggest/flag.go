package suggest

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// An UnknownFlagError is a flag the flag set does not define, with what
// was likely meant.
type UnknownFlagError struct {
	Typed string // as typed, without its value: -zv, --porr
	Name  string // without dashes: zv, porr
	Meant string // "did you mean --port?", "short flags cannot be bundled; use -z -v"; "" if nothing fits
}

func (e *UnknownFlagError) Error() string {
	if e.Meant == "" {
		return "unknown flag " + e.Typed
	}
	return "unknown flag " + e.Typed + ": " + e.Meant
}

// FlagError explains err, what fs.Parse(args) returned, for a user of
// Python's argparse (warcprox's) as much as for a hurried one: an unknown
// flag becomes an *UnknownFlagError saying what was likely meant (a flag
// near it; that flags are not abbreviated; how to write apart short flags
// bundled, -zv, or joined to their value, -p8000, all of which argparse
// takes and the flag package does not). Every flag is named as typed
// (--port, where the flag package says -port). flag.ErrHelp and other
// errors are returned as they are.
//
// To learn whether a value joined to a short flag fits it, FlagError may
// Set that flag: a flag set is spent once its Parse has failed.
func FlagError(fs *flag.FlagSet, args []string, err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	name, undefined := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	err = flagAsTyped(err, args)
	if !undefined {
		return err
	}
	typed := strings.TrimPrefix(err.Error(), "flag provided but not defined: ")
	return &UnknownFlagError{Typed: typed, Name: name, Meant: meant(fs, name, strings.HasPrefix(typed, "--"))}
}

// meant says what the unknown flag name likely meant. A flag typed but for
// case or _ is surely meant; then bundled short flags, if they read as
// such; then the flags name is the start of (argparse takes any
// unambiguous start); then a flag near it; then short flags whose value
// would be free text (-dri: more likely --dir mistyped than -d ri).
func meant(fs *flag.FlagSet, name string, twoDashes bool) string {
	says, how := Find(name, flagCandidates(fs))
	short, split := shortSplit{}, false
	if !twoDashes {
		short, split = splitShort(fs, name)
	}
	switch {
	case how == SameName:
		return "did you mean " + says[0] + "?"
	case split && short.likely:
		return short.explain()
	case how == StartOf:
		return "flags are not abbreviated; did you mean " + OneOf(says) + "?"
	case how == Near:
		return "did you mean " + says[0] + "?"
	case split:
		return short.explain()
	}
	return ""
}

// OneOf joins suggestions for "did you mean ...?": the one, or "one of"
// them all.
func OneOf(says []string) string {
	if len(says) == 1 {
		return says[0]
	}
	return "one of " + strings.Join(says, ", ")
}

// flagCandidates are the long flags of fs, each suggested with two dashes
// (warcproxy's usage writes them so), in the flag package's order (by
// name). Names of one flag.Value are one flag (--max-conns,
// --max-threads): suggested once. --help is one too, which the flag
// package answers when fs does not define it.
func flagCandidates(fs *flag.FlagSet) []Candidate {
	var cands []Candidate
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 {
			cands = append(cands, Candidate{Name: f.Name, Say: "--" + f.Name, Key: firstName(fs, f.Value, 1)})
		}
	})
	if fs.Lookup("help") == nil {
		cands = append(cands, Candidate{Name: "help", Say: "--help", Key: "help"})
	}
	return cands
}

// firstName is the first name of at least minLen letters, in the flag
// package's order, of the flag set to v ("" if none).
func firstName(fs *flag.FlagSet, v flag.Value, minLen int) string {
	first := ""
	fs.VisitAll(func(f *flag.Flag) {
		if first == "" && len(f.Name) >= minLen && sameValue(f.Value, v) {
			first = f.Name
		}
	})
	return first
}

// sameValue reports whether a and b are one flag.Value, as the names of
// one flag share it (fs.Var(fs.Lookup("output").Value, "o", ...)). Values
// whose type cannot be compared (a flag.Func) are each their own.
func sameValue(a, b flag.Value) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// shortSplit is an unknown one-dash flag read as argparse reads it: short
// flags bundled (-zv) or one joined to its value (-p8000).
type shortSplit struct {
	flags []string // -z, -v, -p
	value string   // joined to the last flag; "" if none
	long  string   // a long name of the flag that takes value; "" if it has none
	// likely is false when the value would be free text (-dri: -d ri),
	// where a mistyped long flag (--dir) is the likelier reading.
	likely bool
}

// splitShort reads name as short flags of fs, the last of them possibly
// joined to its value, which must be valid for it; ok is false if name
// cannot be read so.
func splitShort(fs *flag.FlagSet, name string) (s shortSplit, ok bool) {
	if len(name) < 2 {
		return shortSplit{}, false
	}
	for i := range len(name) {
		f := fs.Lookup(name[i : i+1])
		if f == nil {
			return shortSplit{}, false
		}
		s.flags = append(s.flags, "-"+f.Name)
		if b, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool && b.IsBoolFlag() {
			continue
		}
		s.value, s.long, s.likely = name[i+1:], firstName(fs, f.Value, 2), true
		if s.value == "" {
			return s, true // -zp 8000
		}
		if f.Value.Set(s.value) != nil {
			return shortSplit{}, false
		}
		s.likely = !freeText(f.Value)
		return s, true
	}
	s.likely = true
	return s, true
}

// freeText reports whether any text is a value of v, as for a string flag
// (whose flag.Getter returns a string).
func freeText(v flag.Value) bool {
	g, ok := v.(flag.Getter)
	if !ok {
		return false
	}
	_, isString := g.Get().(string)
	return isString
}

// explain says how to write the flags of s apart.
func (s shortSplit) explain() string {
	use := strings.Join(s.flags, " ")
	if s.value != "" {
		use += " " + s.value
	}
	switch {
	case len(s.flags) == 1 && s.long != "":
		return fmt.Sprintf("a short flag and its value are two arguments; use %s or --%s %s", use, s.long, s.value)
	case len(s.flags) == 1:
		return "a short flag and its value are two arguments; use " + use
	case s.value != "":
		return "short flags cannot be bundled, nor joined to their value; use " + use
	}
	return "short flags cannot be bundled; use " + use
}

// flagAsTyped rewrites an error of the flag package, which names a flag
// with one dash whatever was typed ("flag needs an argument: -port"), to
// name it as it appears in args ("--port"; never with a value given as
// --name=value). Other errors are returned as they are.
func flagAsTyped(err error, args []string) error {
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
