package config

import (
	"errors"
	"flag"
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

// explainFlagError is suggest.FlagError, the explanation every flag set
// of ours gives, but for a warcprox option warcproxy lacks, which gets
// what to use instead.
func explainFlagError(fs *flag.FlagSet, args []string, err error) error {
	err = suggest.FlagError(fs, args, err)
	var unknown *suggest.UnknownFlagError
	if errors.As(err, &unknown) {
		if hint, ok := warcproxHint(unknown.Name); ok {
			return fmt.Errorf("unknown flag %s (%s)", unknown.Typed, warcproxOnlyMsg(hint))
		}
	}
	return err
}
