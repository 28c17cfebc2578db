package dedupimport

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

// ArgError is a problem with an input found before anything is written: a
// missing file, a name or content that is none of the kinds read, a WARC
// still being written. The command exits 2 for it, as for a bad flag.
type ArgError struct{ msg string }

func (e *ArgError) Error() string { return e.msg }

func argErrorf(format string, args ...any) error {
	return &ArgError{msg: fmt.Sprintf(format, args...)}
}

// Kind is what an input file holds.
type Kind int

// The kinds of input.
const (
	WARC Kind = iota // .warc, .warc.gz, .warc.zst
	WACZ             // .wacz: the WARCs under archive/ are read
	CDXJ             // .cdxj: one index line per record
)

// Input is a file to import, checked by CheckInputs.
type Input struct {
	Path string
	Kind Kind
	Size int64
}

// CheckInputs checks every file before anything is imported: by its name
// (which says its kind) and its first bytes (which must agree). A
// directory is refused: a crawl's directory holds WARCs still being
// written (.open) and a CDXJ beside each closed WARC, so which files are
// meant is for the caller's shell pattern to say.
func CheckInputs(paths []string) ([]Input, error) {
	if len(paths) == 0 {
		return nil, argErrorf("no files given: name WARC, WACZ or CDXJ files")
	}
	ins := make([]Input, 0, len(paths))
	for _, p := range paths {
		in, err := checkInput(p)
		if err != nil {
			return nil, err
		}
		ins = append(ins, in)
	}
	return ins, nil
}

func kindOf(name string) (Kind, bool) {
	switch {
	case strings.HasSuffix(name, ".warc"), strings.HasSuffix(name, ".warc.gz"), strings.HasSuffix(name, ".warc.zst"):
		return WARC, true
	case strings.HasSuffix(name, ".wacz"):
		return WACZ, true
	case strings.HasSuffix(name, ".cdxj"):
		return CDXJ, true
	}
	return 0, false
}

func checkInput(path string) (Input, error) {
	name := filepath.Base(path)
	if strings.HasSuffix(name, ".open") {
		return Input{}, argErrorf("%s: still being written (its name ends in .open); import it once the proxy has closed it", path)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && strings.ContainsAny(name, "*?["):
		return Input{}, argErrorf("%s: no file matches this pattern", path)
	case err != nil:
		return Input{}, argErrorf("%s: %v", path, unwrapPathError(err))
	case st.IsDir():
		return Input{}, argErrorf("%s: a directory; name its files (%s)", path, filepath.Join(path, "*.warc.gz"))
	case !st.Mode().IsRegular():
		return Input{}, argErrorf("%s: not a regular file", path)
	}
	kind, ok := kindOf(name)
	if !ok {
		return Input{}, argErrorf("%s: not a file name this reads: want .warc, .warc.gz, .warc.zst, .wacz or .cdxj", path)
	}
	head, err := readHead(path)
	if err != nil {
		return Input{}, argErrorf("%s: %v", path, unwrapPathError(err))
	}
	if err := checkHead(kind, head); err != nil {
		return Input{}, argErrorf("%s: %v", path, err)
	}
	return Input{Path: path, Kind: kind, Size: st.Size()}, nil
}

// readHead reads the first bytes of a file, enough for its magic and a
// CDXJ file's first line.
func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return head[:n], nil
}

// checkHead checks that a file's first bytes are what its name says.
func checkHead(kind Kind, head []byte) error {
	if len(head) == 0 {
		return errors.New("empty")
	}
	switch kind {
	case WARC:
		if warcscan.Sniff(head) == warcscan.None && !bytes.HasPrefix(head, []byte("WARC/")) {
			return fmt.Errorf("not a WARC file: it starts with %.8q, not a WARC/1.x line, a gzip header or a zstd frame", head)
		}
	case WACZ:
		if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
			return fmt.Errorf("not a WACZ file: it starts with %.8q, not a zip header", head)
		}
	case CDXJ:
		line, _, _ := bytes.Cut(head, []byte("\n"))
		if _, err := parseLine(line); err != nil && !errors.Is(err, errSkipLine) {
			return fmt.Errorf("not a CDXJ file: its first line: %w", err)
		}
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
