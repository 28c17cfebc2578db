package wacz

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// ArgError is a problem with what Pack was asked to do, found before
// anything is written: an input that is missing or not a WARC file, a
// zstd-compressed input, two inputs with one base name, an output that
// exists. The command exits 2 for it, as for a bad flag.
type ArgError struct{ msg string }

func (e *ArgError) Error() string { return e.msg }

func argErrorf(format string, args ...any) error {
	return &ArgError{msg: fmt.Sprintf(format, args...)}
}

// input is one WARC file to pack.
type input struct {
	path string
	name string // base name, the file's name under archive/
	size int64
}

// zstdHint says what to do with a zstd-compressed WARC.
const zstdHint = "no WACZ reader reads zstd yet (ReplayWeb.page, pywb): " +
	"decompress it with `zstd -d` (the result is a .warc), or record with --compression gzip"

// checkInputs checks the WARC files to pack by name and by their first
// bytes: .warc files must start with a WARC version line, .warc.gz files
// with a gzip header; .warc.zst files are refused (see zstdHint). Whether
// every record is whole is found while packing.
func checkInputs(paths []string) ([]input, error) {
	if len(paths) == 0 {
		return nil, argErrorf("no WARC files given")
	}
	var ins []input
	byName := map[string]string{}
	for _, p := range paths {
		in, err := checkInput(p)
		if err != nil {
			return nil, err
		}
		if prev, ok := byName[in.name]; ok {
			if sameFile(prev, p) {
				return nil, argErrorf("%s is given twice", p)
			}
			return nil, argErrorf("%s and %s have the same name; a WACZ keeps its WARCs under archive/ by base name: rename one", prev, p)
		}
		byName[in.name] = p
		ins = append(ins, in)
	}
	return ins, nil
}

func checkInput(path string) (input, error) {
	name := filepath.Base(path)
	gzipped := strings.HasSuffix(name, ".warc.gz")
	switch {
	case strings.HasSuffix(name, ".warc.zst"):
		return input{}, argErrorf("%s: a zstd-compressed WARC; %s", path, zstdHint)
	case strings.HasSuffix(name, ".open"):
		return input{}, argErrorf("%s: still being written (its name ends in .open); pack it once the proxy has closed it", path)
	case !gzipped && !strings.HasSuffix(name, ".warc"):
		return input{}, argErrorf("%s: not a WARC file name: want NAME.warc or NAME.warc.gz", path)
	}
	f, err := os.Open(path)
	if err != nil {
		shipped := ""
		if errors.Is(err, os.ErrNotExist) {
			shipped = shippedHint(path)
		}
		switch {
		case shipped != "" && strings.ContainsAny(name, "*?["):
			return input{}, argErrorf("%s: no file matches this pattern: %s", path, shipped)
		case shipped != "":
			return input{}, argErrorf("%s: no such file: %s", path, shipped)
		case errors.Is(err, os.ErrNotExist) && strings.ContainsAny(name, "*?["):
			// The shell passes a pattern that matched nothing on as it is.
			return input{}, argErrorf("%s: no file matches this pattern (are the WARCs still being written, named .open?)", path)
		}
		return input{}, argErrorf("%s: %v", path, unwrapPathError(err))
	}
	defer func() { _ = f.Close() }()
	if lockedByWriter(f) {
		return input{}, argErrorf("%s: still being written: a running warcproxy holds its lock (with --no-warc-open-suffix the name does not say so); pack it once the proxy has closed it", path)
	}
	st, err := f.Stat()
	if err != nil {
		return input{}, argErrorf("%s: %v", path, unwrapPathError(err))
	}
	if !st.Mode().IsRegular() {
		return input{}, argErrorf("%s: not a regular file", path)
	}
	head := make([]byte, 8)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return input{}, argErrorf("%s: %v", path, unwrapPathError(err))
	}
	if err := checkMagic(head[:n], gzipped); err != nil {
		return input{}, argErrorf("%s: %v", path, err)
	}
	return input{path: path, name: name, size: st.Size()}, nil
}

// checkMagic checks the first bytes of a file named .warc.gz (gzipped) or
// .warc.
func checkMagic(head []byte, gzipped bool) error {
	isGzip := warcscan.Gzip.Sniff(head)
	isPlain := bytes.HasPrefix(head, []byte("WARC/"))
	switch {
	case len(head) == 0:
		return errors.New("not a WARC file: it is empty")
	case warcscan.Zstd.Sniff(head):
		return fmt.Errorf("zstd-compressed, whatever its name says; %s", zstdHint)
	case gzipped && isGzip, !gzipped && isPlain:
		return nil
	case gzipped && isPlain:
		return errors.New("named .warc.gz but not compressed: rename it to .warc")
	case !gzipped && isGzip:
		return errors.New("named .warc but gzip-compressed: rename it to .warc.gz")
	}
	return fmt.Errorf("not a WARC file: it starts with %q, not a WARC/1.x line or a gzip header", head)
}

// checkOutput checks where the package goes: a name ending in .wacz, in a
// directory that exists, not there yet unless force.
func checkOutput(path string, force bool) error {
	if !strings.HasSuffix(path, ".wacz") || filepath.Base(path) == ".wacz" {
		return argErrorf("--output %s: the name must end in .wacz", path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return argErrorf("--output %s: no directory %s", path, dir)
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return argErrorf("--output %s: %v", path, unwrapPathError(err))
	case !st.Mode().IsRegular():
		return argErrorf("--output %s: exists and is not a regular file", path)
	case !force:
		return argErrorf("--output %s: exists; --force replaces it", path)
	}
	return nil
}

// unwrapPathError drops the operation and path an *os.PathError repeats.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sameFile reports whether a and b name one file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
