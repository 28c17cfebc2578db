package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckFilesReadOnly: on a read-only file system the directories the
// proxy writes to are refused at start, but not an existing --certs-dir,
// where leaf certificates are only cached (a shared, read-only mount of
// them works: one that cannot be saved is logged).
func TestCheckFilesReadOnly(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(ro, 0o755))
	if err := syscall.Mount("tmpfs", ro, "tmpfs", syscall.MS_RDONLY, "size=64k"); err != nil {
		t.Skipf("needs root to mount a read-only tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(ro, syscall.MNT_DETACH) })
	base := func() Config {
		return Config{Dir: t.TempDir(), CACert: filepath.Join(t.TempDir(), "ca.pem"), DedupDB: "none", StatsDB: "none"}
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string // "" for no error
	}{
		{"certs dir", func(c *Config) { c.CertsDir = ro }, ""},
		{"certs dir to create", func(c *Config) { c.CertsDir = filepath.Join(ro, "certs") }, "--certs-dir: cannot create"},
		{"WARC dir", func(c *Config) { c.Dir = ro }, "--dir: " + ro + " is not writable"},
		{"spool dir", func(c *Config) { c.TmpDir = ro }, "--tmp-dir: " + ro + " is not writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.set(&c)
			err := c.CheckFiles()
			if tc.want == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.want)
			}
		})
	}
}

// TestWritableAsTheProcess: a directory is writable to a process whose
// capabilities let it write there (a service run as its own user with
// CAP_DAC_OVERRIDE), though its user alone may not. The test binary runs
// itself under setpriv as nobody with that capability.
func TestWritableAsTheProcess(t *testing.T) {
	if dir := os.Getenv("WARCPROXY_TEST_WRITABLE"); dir != "" {
		if err := writable(dir); err != nil {
			t.Fatalf("writable(%s): %v", dir, err)
		}
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and setpriv")
	}
	dir := t.TempDir() // root's, mode 0755
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=+dac_override", "--ambient-caps=+dac_override",
		os.Args[0], "-test.run=^TestWritableAsTheProcess$")
	cmd.Env = append(os.Environ(), "WARCPROXY_TEST_WRITABLE="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
