package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnknownCommandListsTheCommands: a mistyped command exits 2 with the
// one likely meant, then the usage listing every command of the table.
func TestUnknownCommandListsTheCommands(t *testing.T) {
	for _, tc := range []struct {
		arg, first string
	}{
		{"swep", `warcbench: unknown command "swep" (did you mean sweep?)`},
		{"so", `warcbench: unknown command "so" (did you mean soak?)`},
		{"bogus", `warcbench: unknown command "bogus"`},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), []string{tc.arg}, &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Empty(t, stdout.String())
			first, rest, _ := strings.Cut(stderr.String(), "\n")
			require.Equal(t, tc.first, first)
			for _, c := range commands() {
				require.Contains(t, rest, "\n  "+c.name+strings.Repeat(" ", 9-len(c.name))+c.summary+"\n")
			}
		})
	}
}
