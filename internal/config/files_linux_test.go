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

// TestCheckFilesKernelFileSystems: nothing of the proxy's can be made
// under /proc or /sys, though root passes the access check there: each
// flag that names a path to create there is refused, naming the file
// system, whoever runs the check.
func TestCheckFilesKernelFileSystems(t *testing.T) {
	base := func() Config {
		return Config{Dir: t.TempDir(), CACert: filepath.Join(t.TempDir(), "ca.pem"), DedupDB: "none", StatsDB: "none"}
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"WARC dir under /proc", func(c *Config) { c.Dir = "/proc/warcs" }, "--dir: cannot create /proc/warcs: /proc is on proc, a kernel file system"},
		{"WARC dir /proc itself", func(c *Config) { c.Dir = "/proc" }, "--dir: /proc is on proc, a kernel file system"},
		{"spool dir under /sys", func(c *Config) { c.TmpDir = "/sys/kernel/spool" }, "--tmp-dir: cannot create /sys/kernel/spool: /sys/kernel is on sysfs"},
		{"existing certs dir in /proc", func(c *Config) { c.CertsDir = "/proc/self" }, "--certs-dir: /proc/self is on proc"},
		{"crawl log dir under /proc", func(c *Config) { c.CrawlLogDir = "/proc/cl" }, "--crawl-log-dir: cannot create /proc/cl: /proc is on proc"},
		{"CA file under /proc", func(c *Config) { c.CACert = "/proc/x/ca.pem" }, "--cacert: cannot create /proc/x/ca.pem: /proc is on proc"},
		{"dedup database under /proc", func(c *Config) { c.DedupDB = "embedded:/proc/x.db" }, "--dedup-db: cannot create /proc/x.db: /proc is on proc"},
		{"stats database under /sys", func(c *Config) { c.StatsDB = "embedded:/sys/x/s.db" }, "--stats-db: cannot create /sys/x/s.db: /sys is on sysfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.set(&c)
			require.ErrorContains(t, c.CheckFiles(), tc.want)
		})
	}
}
