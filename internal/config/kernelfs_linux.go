package config

import (
	"fmt"
	"syscall"
)

// kernelFileSystems are the file systems whose entries the kernel makes
// (statfs(2) f_type, from linux/magic.h): their permission bits let root
// write anywhere, and faccessat agrees, but a directory or file of ours
// cannot be made there (mkdir under /proc says "no such file", under /sys
// "operation not permitted"), or making one means something else (a new
// cgroup, a configfs object).
var kernelFileSystems = map[uint32]string{
	0x9fa0:     "proc",
	0x62656572: "sysfs",
	0x27e0eb:   "cgroup",
	0x63677270: "cgroup2",
	0x1cd1:     "devpts",
	0x64626720: "debugfs",
	0x74726163: "tracefs",
	0x73636673: "securityfs",
	0x6165676c: "pstore",
	0xcafe4a11: "bpf",
	0x62656570: "configfs",
	0xde5e81e4: "efivarfs",
	0x42494e4d: "binfmt_misc",
	0x958458f6: "hugetlbfs",
	0x19800202: "mqueue",
	0xf97cff8c: "selinuxfs",
	0x43415d53: "smackfs",
	0x65735543: "fusectl",
	0x6e736673: "nsfs",
	0x67596969: "rpc_pipefs",
}

// notKernelFS reports an existing dir that lies on a kernel file system,
// asked of the file system itself (statfs), so it holds for root too. It
// creates nothing: a probe (make a temporary entry, remove it) would
// change the directory's modification time and, on cgroup or configfs,
// make a kernel object.
func notKernelFS(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil // the access check or the creation says why
	}
	// f_type is a 32-bit magic number, in a field whose type and sign
	// vary by architecture.
	if name, ok := kernelFileSystems[uint32(st.Type)]; ok {
		return fmt.Errorf("%s is on %s, a kernel file system, where only the kernel makes entries", dir, name)
	}
	return nil
}
