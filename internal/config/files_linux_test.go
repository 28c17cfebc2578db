package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
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

// TestCheckFilesExistingDatabase: an embedded database named by a file
// that exists is checked too, since bbolt writes its first pages into an
// empty file (and /proc and /sys files say they are empty): a kernel
// file, something that is not a regular file, or data that is not a bbolt
// database are exit 2 before the CA is made; an empty file and a real
// database are fine.
func TestCheckFilesExistingDatabase(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}
	empty := write("empty.db", nil)
	text := write("passwd", []byte("root:x:0:0:root:/root:/bin/bash\n"))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	db := filepath.Join(dir, "real.db")
	bdb, err := bolt.Open(db, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, bdb.Close())
	for _, tc := range []struct {
		name, spec, want string // want "" for no problem
	}{
		{"a /proc file", "embedded:/proc/version", "--dedup-db: /proc/version is on proc, a kernel file system"},
		{"a named pipe", fifo, "--dedup-db: " + fifo + " is not a regular file"},
		{"not a database", text, "--dedup-db: " + text + " is not an embedded (bbolt) database"},
		{"an empty file", empty, ""},
		{"a database", "embedded:" + db, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Dir: t.TempDir(), CACert: filepath.Join(t.TempDir(), "ca.pem"), DedupDB: tc.spec, StatsDB: "none"}
			err := c.CheckFiles()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestCheckFilesUnstatablePaths: a path whose stat fails for another
// reason than "does not exist" (a name too long, a loop of symbolic
// links) is exit 2 naming the flag, not taken for one still to be made.
func TestCheckFilesUnstatablePaths(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("a", 300))
	loopA, loopB := filepath.Join(dir, "loopA"), filepath.Join(dir, "loopB")
	require.NoError(t, os.Symlink(loopB, loopA))
	require.NoError(t, os.Symlink(loopA, loopB))
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"dedup database with a name too long", func(c *Config) { c.DedupDB = long }, "--dedup-db: cannot create " + long},
		{"WARC dir with a name too long", func(c *Config) { c.Dir = long }, "--dir: cannot create " + long},
		{"WARC dir through a symlink loop", func(c *Config) { c.Dir = filepath.Join(loopA, "w") }, "too many levels of symbolic links"},
		{"spool dir a symlink loop", func(c *Config) { c.TmpDir = loopA }, "--tmp-dir: cannot create " + loopA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Dir: t.TempDir(), CACert: filepath.Join(t.TempDir(), "ca.pem"), DedupDB: "none", StatsDB: "none"}
			tc.set(&c)
			require.ErrorContains(t, c.CheckFiles(), tc.want)
		})
	}
}
