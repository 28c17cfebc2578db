package faultfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/faultfs"
)

const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

func TestSwitchFaultsOnAndOff(t *testing.T) {
	dir := t.TempDir()
	fsys := faultfs.New()
	path := filepath.Join(dir, "a")
	f, err := fsys.OpenFile(path, flags, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, ok := f.(syscall.Conn)
	require.True(t, ok, "a File can be flocked")

	n, err := f.WriteAt([]byte("hello"), 0)
	require.NoError(t, err)
	require.Equal(t, 5, n)

	fsys.Fail(syscall.ENOSPC, faultfs.Write, faultfs.Sync)
	for range 2 {
		n, err = f.WriteAt([]byte("world"), 5)
		require.ErrorIs(t, err, syscall.ENOSPC)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, path, pe.Path)
		require.Zero(t, n)
	}
	require.ErrorIs(t, f.Sync(), syscall.ENOSPC)
	require.Equal(t, int64(5), size(t, path), "a failing write writes nothing")
	require.Equal(t, 3, fsys.Calls(faultfs.Write))
	require.Equal(t, 2, fsys.Failures(faultfs.Write))

	fsys.Clear(faultfs.Write)
	_, err = f.WriteAt([]byte("world"), 5)
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), syscall.ENOSPC, "Clear leaves other ops failing")
	fsys.Heal()
	require.NoError(t, f.Sync())
	require.Equal(t, int64(10), size(t, path))
}

func TestSkipAndCount(t *testing.T) {
	dir := t.TempDir()
	fsys := faultfs.New()
	fsys.Set(faultfs.Open, faultfs.Fault{Err: syscall.EIO, Skip: 1, Count: 2})
	var got []bool
	for i := range 4 {
		f, err := fsys.OpenFile(filepath.Join(dir, string(rune('a'+i))), flags, 0o644)
		if err == nil {
			require.NoError(t, f.Close())
		} else {
			require.ErrorIs(t, err, syscall.EIO)
		}
		got = append(got, err == nil)
	}
	require.Equal(t, []bool{true, false, false, true}, got)
	require.Equal(t, 2, fsys.Failures(faultfs.Open))
}

func TestPartialWrites(t *testing.T) {
	for _, unreported := range []bool{false, true} {
		t.Run(map[bool]string{false: "reported", true: "unreported"}[unreported], func(t *testing.T) {
			fsys := faultfs.New()
			path := filepath.Join(t.TempDir(), "a")
			f, err := fsys.OpenFile(path, flags, 0o644)
			require.NoError(t, err)
			defer f.Close()
			fsys.Set(faultfs.Write, faultfs.Fault{Err: syscall.ENOSPC, Partial: true, Unreported: unreported})
			n, err := f.WriteAt([]byte("0123456789"), 0)
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.Equal(t, int64(6), size(t, path), "half and one byte written")
			if unreported {
				require.Zero(t, n)
			} else {
				require.Equal(t, 6, n)
			}
			n, err = f.WriteAt([]byte("0123456789"), 6)
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.Zero(t, n)
			require.Equal(t, int64(6), size(t, path), "the disk is full now")
		})
	}
}

func TestRenameAndTruncate(t *testing.T) {
	dir := t.TempDir()
	fsys := faultfs.New()
	path := filepath.Join(dir, "a.open")
	f, err := fsys.OpenFile(path, flags, 0o644)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("0123456789"), 0)
	require.NoError(t, err)
	fsys.Fail(syscall.EIO, faultfs.Rename, faultfs.Truncate)
	require.ErrorIs(t, f.Truncate(3), syscall.EIO)
	require.NoError(t, f.Close())
	err = fsys.Rename(path, filepath.Join(dir, "a"))
	require.ErrorIs(t, err, syscall.EIO)
	var le *os.LinkError
	require.True(t, errors.As(err, &le))
	require.FileExists(t, path)
	fsys.Heal()
	require.NoError(t, fsys.Rename(path, filepath.Join(dir, "a")))
	require.Equal(t, int64(10), size(t, filepath.Join(dir, "a")))
}

func TestSetWithoutErrPanics(t *testing.T) {
	require.Panics(t, func() { faultfs.New().Set(faultfs.Write, faultfs.Fault{}) })
}

func TestTmpfsFill(t *testing.T) {
	dir := faultfs.Tmpfs(t, 1<<20)
	filler := faultfs.Fill(t, dir, "filler")
	_, err := os.Stat(filler)
	require.NoError(t, err)
	err = os.WriteFile(filepath.Join(dir, "a"), make([]byte, 64<<10), 0o644)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, os.Remove(filler))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), make([]byte, 64<<10), 0o644))
}
