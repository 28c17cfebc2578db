package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// readVmHWM returns the peak resident set size from /proc/PID/status.
func readVmHWM(pid int) (int64, bool) { return readStatusKB(pid, "VmHWM:") }

// readVmRSS returns the resident set size from /proc/PID/status.
func readVmRSS(pid int) (int64, bool) { return readStatusKB(pid, "VmRSS:") }

// readStatusKB returns a "NAME: N kB" field of /proc/PID/status, in bytes.
func readStatusKB(pid int, field string) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err == nil
			}
		}
	}
	return 0, false
}

// clockTicks is USER_HZ, 100 on every Linux we run on.
const clockTicks = 100

// readCPUTicks returns utime+stime from /proc/PID/stat, in clock ticks.
func readCPUTicks(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads fields 14 and 15 (utime, stime) of a /proc/PID/stat
// line; the command name (field 2) may hold spaces, so count from its ")".
func parseStatCPU(s string) (int64, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + st, true
}
