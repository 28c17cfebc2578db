package s3test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMakeVersitygwBuildsWhatTheTestsLookFor: `make versitygw` (the
// InstallHint) installs Version into the folder Binary looks in, by
// default and when the variable names another, so raising the version or
// moving the cache on one side only fails here.
func TestMakeVersitygwBuildsWhatTheTestsLookFor(t *testing.T) {
	if !strings.HasPrefix(InstallHint, "make versitygw ") {
		t.Fatalf("InstallHint %q does not start with the make target", InstallHint)
	}
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not found")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	other := filepath.Join(t.TempDir(), "versitygw")
	for _, tc := range []struct {
		name, env, wantBinary string
	}{
		{"default", "", cachedBinary(home)},
		{"from the environment", other, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(mk, "-n", "-C", root, "versitygw")
			// Only this test's HOME and variable: not those of a make
			// that runs go test (MAKEFLAGS carries its command line).
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
				k, _, _ := strings.Cut(kv, "=")
				return k == "HOME" || k == EnvBinary || k == "MAKEFLAGS" || k == "MFLAGS" || k == "MAKELEVEL"
			}), "HOME="+home)
			if tc.env != "" {
				cmd.Env = append(cmd.Env, EnvBinary+"="+tc.env)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n versitygw: %v\n%s", err, out)
			}
			for _, want := range []string{
				`GOBIN="` + filepath.Dir(tc.wantBinary) + `"`,
				"go install github.com/versity/versitygw/cmd/versitygw@" + Version + ")",
			} {
				if !strings.Contains(string(out), want) {
					t.Errorf("make -n versitygw does not run %s:\n%s", want, out)
				}
			}
		})
	}
}

func TestBinary(t *testing.T) {
	home := t.TempDir()
	cached := cachedBinary(home)
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "versitygw")
	for _, tc := range []struct {
		name, env, home string
		want, wantErr   string
	}{
		{name: "the variable names a file", env: cached, home: t.TempDir(), want: cached},
		{name: "the variable names no file", env: missing, home: home, wantErr: EnvBinary + ": stat " + missing},
		{name: "the build make versitygw caches", home: home, want: cached},
		{name: "none", home: t.TempDir(), wantErr: "executable file not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvBinary, tc.env)
			t.Setenv("HOME", tc.home)
			t.Setenv("PATH", t.TempDir())
			got, err := Binary()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Binary() = %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Binary() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
