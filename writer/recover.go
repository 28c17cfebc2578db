package writer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// openSuffix marks a WARC file that is still being written.
const openSuffix = ".open"

// maxRecoverNames bounds the search for a free NAME-recovered-N.
const maxRecoverNames = 1000

// RecoverOptions say which files Recover looks at.
type RecoverOptions struct {
	// FinalNames also checks the files under their final names
	// (NAME.warc.gz, NAME.warc.zst, NAME.warc), which a writer with NoOpenSuffix writes
	// while open: one whose lock is free and whose tail is not the end of
	// a whole record is unfinished, and is cut back as an open-named one
	// is (but keeps its name). Whole files are left as they are.
	FinalNames bool
}

// RecoverReport says what Recover found and did. Every file counted here,
// except the whole ones, was also logged.
type RecoverReport struct {
	Found     int   // *.warc.gz.open, *.warc.zst.open and *.warc.open files found, and with FinalNames every other WARC file
	Whole     int   // final-named files (FinalNames) that end on a whole record, left as they are
	Skipped   int   // left alone: locked by a live process (or closed by one meanwhile)
	Recovered int   // cut back to their last whole record if needed, synced and renamed
	Removed   int   // held no whole record, not even the warcinfo, and were removed
	Failed    int   // could not be checked or finished (logged at error); left as they were
	Records   int64 // whole records in the recovered files
	BytesCut  int64 // bytes cut off recovered files plus the size of removed ones
	// Files lists the recovered and removed files in no particular order.
	Files []RecoveredFile
}

// RecoveredFile is one file Recover closed or removed.
type RecoveredFile struct {
	Path    string // the ".open" file found, or the unfinished final-named one
	NewPath string // what it was renamed to (Path itself for a final-named one); empty if it was removed
	Records int64  // whole records kept
	Size    int64  // bytes kept
	Cut     int64  // bytes cut off the end
}

// Recover closes the WARC files that a crashed process left open-named in
// dir and in its immediate subdirectories (where SubdirPrefix writes). Call
// it before a Pool starts writing into dir.
//
// A file whose flock another process holds (a live warcproxy sharing the
// directory) is left alone. Any other "*.warc.gz.open", "*.warc.zst.open"
// or "*.warc.open" file is scanned from its start up to the end of its last
// whole record: in a .warc.gz file every gzip member must decompress fully,
// pass its CRC and hold exactly one whole record; in a .warc.zst file every
// zstd frame likewise (with its content size and checksum, and the file's
// dictionary if it starts with one); in a .warc file the records follow
// each other. A whole record is a "WARC/1.0" or "WARC/1.1" line, header fields
// with WARC-Type, WARC-Record-ID, WARC-Date and one Content-Length, a blank
// line, Content-Length bytes of block and "\r\n\r\n" (internal/warcscan,
// which reads them, has the exact grammar). Block digests are not checked:
// the gzip CRC and the zstd checksum cover a compressed file, and a crash
// cuts a file short rather than changing what it holds. The file is cut
// there, synced and renamed to its name without ".open"
// (NAME-recovered-N.warc[.gz|.zst] if that name is taken); a file without
// one whole record (a zstd dictionary frame alone holds none) is removed. Files are read as a stream,
// so memory does not grow with their size.
//
// With opts.FinalNames, every other WARC file (NAME.warc.gz, NAME.warc.zst,
// NAME.warc)
// whose flock is free is checked too, from its tail (finishedTail): one
// that ends on a whole record is left as it is, without reading the rest
// of it; any other is scanned from its start and cut back as above, keeping
// its name, or removed if it holds no whole record.
//
// Each file is logged (recovered and removed ones at warn). A file that
// cannot be read or finished is logged at error, counted in Failed and left
// as it was; the error returned is only for a dir that cannot be listed. A
// missing dir holds nothing to recover.
//
// Where flock does not exist (lockFile is a no-op there), every open file
// counts as abandoned: do not share a directory between live processes on
// such systems.
func Recover(dir string, logger *slog.Logger, opts RecoverOptions) (RecoverReport, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var rep RecoverReport
	paths, err := openWARCFiles(dir, opts.FinalNames, logger, &rep)
	if err != nil {
		return rep, err
	}
	rep.Found = len(paths)
	if len(paths) == 0 {
		logger.Debug("crash recovery: no open warc files", "dir", dir)
		return rep, nil
	}

	// Files are independent: scan a few at once, each streaming.
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, min(runtime.GOMAXPROCS(0), 4))
	)
	for _, path := range paths {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res := recoverFile(path, logger)
			mu.Lock()
			defer mu.Unlock()
			rep.add(res)
		})
	}
	wg.Wait()
	logger.Info("crash recovery finished", "dir", dir, "found", rep.Found, "whole", rep.Whole, "recovered", rep.Recovered,
		"removed", rep.Removed, "skipped", rep.Skipped, "failed", rep.Failed,
		"records", rep.Records, "bytes_cut", rep.BytesCut)
	return rep, nil
}

// openWARCFiles lists the open WARC files in dir and its immediate
// subdirectories, and with finalNames every other WARC file too. A
// subdirectory that cannot be listed is logged and counted as failed.
func openWARCFiles(dir string, finalNames bool, logger *slog.Logger, rep *RecoverReport) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing warc dir for crash recovery: %w", err)
	}
	var paths []string
	add := func(d string, ents []os.DirEntry) {
		for _, e := range ents {
			if e.Type().IsRegular() && (isOpenWARCName(e.Name()) || finalNames && warcscan.ForName(e.Name()) != nil) {
				paths = append(paths, filepath.Join(d, e.Name()))
			}
		}
	}
	add(dir, ents)
	for _, e := range ents {
		if !e.IsDir() { // symbolic links to directories are not followed
			continue
		}
		sub := filepath.Join(dir, e.Name())
		subEnts, err := os.ReadDir(sub)
		if err != nil {
			logger.Error("crash recovery: cannot list subdirectory", "dir", sub, "err", err)
			rep.Failed++
			continue
		}
		add(sub, subEnts)
	}
	return paths, nil
}

// isOpenWARCName reports whether name is that of a WARC file being written:
// NAME.warc.gz.open, NAME.warc.open, or another codec's extension that
// warcscan knows.
func isOpenWARCName(name string) bool {
	base, ok := strings.CutSuffix(name, openSuffix)
	return ok && warcscan.ForName(base) != nil
}

// recoverOutcome is what recoverFile did with one file.
type recoverOutcome int

const (
	outcomeSkipped recoverOutcome = iota
	outcomeRecovered
	outcomeRemoved
	outcomeFailed
	outcomeWhole // a final-named file that ends on a whole record
)

type recoverResult struct {
	outcome recoverOutcome
	file    RecoveredFile
}

func (r *RecoverReport) add(res recoverResult) {
	switch res.outcome {
	case outcomeSkipped:
		r.Skipped++
		return
	case outcomeWhole:
		r.Whole++
		return
	case outcomeFailed:
		r.Failed++
		return
	case outcomeRecovered:
		r.Recovered++
	case outcomeRemoved:
		r.Removed++
	}
	r.Records += res.file.Records
	r.BytesCut += res.file.Cut
	r.Files = append(r.Files, res.file)
}

// recoverFile checks, cuts back and closes (or removes) one open file. It
// holds the file's flock from before the scan until after the rename, so two
// processes recovering the same directory never both act on a file. A
// final-named file (no ".open") is first checked from its tail and left
// alone if whole; if not, it is cut back like an open one and keeps its name.
func recoverFile(path string, logger *slog.Logger) recoverResult {
	openNamed := strings.HasSuffix(path, openSuffix)
	failed := func(msg string, err error) recoverResult {
		logger.Error("crash recovery: "+msg+"; file left as it is", "file", path, "err", err)
		return recoverResult{outcome: outcomeFailed}
	}
	f, fi, early := openLocked(path, logger, failed)
	if f == nil {
		return early
	}
	defer f.Close() // also releases the flock, after the rename

	size := fi.Size()
	codec := warcscan.ForName(strings.TrimSuffix(path, openSuffix))
	if !openNamed {
		whole, err := finishedTail(f, size, codec)
		if err != nil {
			return failed("cannot read warc file", err)
		}
		if whole {
			return recoverResult{outcome: outcomeWhole}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return failed("cannot read warc file", err)
		}
	}

	end, records, stop, err := scanFile(f, codec)
	if err != nil {
		return failed("cannot read warc file", err)
	}
	res := RecoveredFile{Path: path, Records: records, Size: end, Cut: size - end}
	reason := ""
	if stop != nil {
		reason = stop.Error()
	}
	if records == 0 {
		return removeEmpty(res, reason, logger, failed)
	}
	if end < size {
		if err := f.Truncate(end); err != nil {
			return failed("cannot cut warc file back to its last whole record", err)
		}
	}
	if err := f.Sync(); err != nil {
		return failed("cannot sync warc file", err)
	}
	if !openNamed {
		res.NewPath = path
		logger.Warn("crash recovery: recovered unfinished warc file", "file", path, "records", records,
			"bytes_kept", end, "bytes_cut", res.Cut, "reason", reason)
		return recoverResult{outcome: outcomeRecovered, file: res}
	}
	newPath, err := renameNoReplace(fi, path)
	if err != nil {
		return failed("cannot rename warc file", err)
	}
	syncDir(filepath.Dir(path))
	res.NewPath = newPath
	args := []any{"file", path, "renamed_to", filepath.Base(newPath), "records", records, "bytes_kept", end, "bytes_cut", res.Cut}
	if res.Cut > 0 {
		args = append(args, "reason", reason)
	}
	logger.Warn("crash recovery: recovered warc file", args...)
	return recoverResult{outcome: outcomeRecovered, file: res}
}

// openLocked opens the file at path for recovery and takes its lock. It
// returns a nil file, and the result to report, when the file is gone,
// locked by a live process, replaced meanwhile, or cannot be opened.
func openLocked(path string, logger *slog.Logger, failed func(string, error) recoverResult) (*os.File, fs.FileInfo, recoverResult) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Closed by its live writer, or by another recovery, since the
		// directory was listed.
		logger.Debug("crash recovery: open warc file gone meanwhile", "file", path)
		return nil, nil, recoverResult{outcome: outcomeSkipped}
	}
	if err != nil {
		return nil, nil, failed("cannot open warc file", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			logger.Info("crash recovery: warc file left alone, a live process holds its lock", "file", path)
			return nil, nil, recoverResult{outcome: outcomeSkipped}
		}
		return nil, nil, failed("cannot lock warc file", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, failed("cannot stat warc file", err)
	}
	// The lock is on what was opened: make sure that is still the file
	// the name points to (another recovery may have renamed it between
	// our open and our lock) and a regular file.
	if li, err := os.Lstat(path); err != nil || !os.SameFile(fi, li) || !fi.Mode().IsRegular() {
		f.Close()
		logger.Debug("crash recovery: open warc file replaced or gone meanwhile", "file", path)
		return nil, nil, recoverResult{outcome: outcomeSkipped}
	}
	return f, fi, recoverResult{}
}

// removeEmpty removes a file in which no whole record was found.
func removeEmpty(res RecoveredFile, reason string, logger *slog.Logger, failed func(string, error) recoverResult) recoverResult {
	path := res.Path
	if err := os.Remove(path); errors.Is(err, fs.ErrNotExist) {
		// A writer that lost the race for the lock of the file it
		// had just made removes it itself.
		logger.Debug("crash recovery: open warc file gone meanwhile", "file", path)
		return recoverResult{outcome: outcomeSkipped}
	} else if err != nil {
		return failed("cannot remove warc file without a whole record", err)
	}
	syncDir(filepath.Dir(path))
	logger.Warn("crash recovery: removed warc file without a whole record", "file", path,
		"bytes_cut", res.Cut, "reason", reason)
	return recoverResult{outcome: outcomeRemoved, file: res}
}

// renameNoReplace gives the open file at path (described by fi) its
// final name, or NAME-recovered-N.warc[.gz] if that is taken, without ever
// replacing a file: the new name is made with a hard link, which fails if
// it exists, and the ".open" name removed after. Where links are not
// supported it falls back to a checked rename.
func renameNoReplace(fi fs.FileInfo, path string) (string, error) {
	final := strings.TrimSuffix(path, openSuffix)
	ext := ".warc" + warcscan.ForName(final).Ext()
	stem := strings.TrimSuffix(final, ext)
	for n := range maxRecoverNames {
		target := final
		if n > 0 {
			target = stem + "-recovered-" + strconv.Itoa(n) + ext
		}
		err := os.Link(path, target)
		if err == nil {
			if err := os.Remove(path); err != nil {
				return "", fmt.Errorf("removing the open name after linking %s: %w", target, err)
			}
			return target, nil
		}
		if errors.Is(err, fs.ErrExist) {
			// An earlier recovery that stopped between link and
			// remove left both names on this very file.
			if ti, serr := os.Lstat(target); serr == nil && os.SameFile(fi, ti) {
				if err := os.Remove(path); err != nil {
					return "", fmt.Errorf("removing the open name of %s: %w", target, err)
				}
				return target, nil
			}
			continue
		}
		// No hard links here (some network and FUSE file systems).
		if _, serr := os.Lstat(target); serr == nil {
			continue
		} else if !errors.Is(serr, fs.ErrNotExist) {
			return "", serr
		}
		if err := os.Rename(path, target); err != nil {
			return "", err
		}
		return target, nil
	}
	return "", fmt.Errorf("no free name for %s after %d tries", final, maxRecoverNames)
}

// syncDir makes a rename or removal in dir durable, as far as the system
// allows. Failing is harmless: after a power loss the file would be found
// open-named again and recovered again.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// scanFile reads a WARC file of codec c from r's current position (its
// start) and returns the offset just after its last whole record and how
// many whole records precede it. stop says why the scan ended before the
// end of the data (nil if the data ended exactly after a record). err is a
// read error of r itself, in which case end and records mean nothing: the
// file must not be cut.
func scanFile(r io.Reader, c warcscan.Codec) (end, records int64, stop, err error) {
	// Recovery needs no header, and skipping them keeps a header line of
	// any length in flat memory.
	s := warcscan.New(r, warcscan.Options{Codec: c, SkipHeaders: true})
	for err == nil {
		_, err = s.Next()
	}
	switch {
	case err == io.EOF:
		return s.End(), s.Records(), nil, nil
	case errors.Is(err, warcscan.ErrNotWhole):
		return s.End(), s.Records(), err, nil
	}
	return s.End(), s.Records(), nil, err
}

// tailSearch is how far back finishedTail reads at a time.
const tailSearch = 64 << 10

// finishedTail reports whether the file f of codec c, size bytes long, ends
// just after a whole record, reading only its end. It looks backwards for
// where a record can start (gzip's or zstd's magic number, or a "WARC/1."
// version line) and scans from there to the end (after a zstd file's
// dictionary frame, which the frames need): a scan that reads whole records
// up to the very end says whole; one that reads a whole record and then
// stops before the end says not (the tail after that record is cut); one
// that reads no record started at no record, or at the cut last one, and
// the search goes on backwards. So a whole file costs its last record, an
// unfinished one its last two. A false "whole" needs bytes inside a record
// that look like a record's start and end exactly at the cut: a record
// whose payload embeds WARC records, cut where an embedded one ends.
func finishedTail(f io.ReaderAt, size int64, c warcscan.Codec) (bool, error) {
	var (
		magic []byte
		head  int64 // the dictionary frame of a zstd file: no record starts in it
	)
	switch c {
	case warcscan.Gzip:
		magic = []byte{0x1f, 0x8b, 0x08} // gzip, deflate
	case warcscan.Zstd:
		magic = binary.LittleEndian.AppendUint32(nil, warcscan.ZstdFrameMagic)
		var p [8]byte
		if _, err := f.ReadAt(p[:], 0); err != nil && err != io.EOF {
			return false, err
		}
		head = min(warcscan.ZstdHeadLen(p[:]), size)
	case warcscan.None:
		magic = []byte("WARC/1.")
	default:
		return false, nil // the full scan decides
	}
	buf := make([]byte, tailSearch+len(magic)-1)
	// Candidates at or after hi were tried already.
	for hi := size; hi > 0; {
		lo := max(0, hi-tailSearch)
		n := min(int64(len(buf)), size-lo)
		if _, err := f.ReadAt(buf[:n], lo); err != nil && err != io.EOF {
			return false, err
		}
		win := buf[:n]
		for i := len(win); ; {
			j := bytes.LastIndex(win[:i], magic)
			if j < 0 {
				break
			}
			i = j + len(magic) - 1 // next: the matches that start before j
			off := lo + int64(j)
			if off >= hi || off < head {
				continue // in the overlap with the last window: tried already; or in the head
			}
			whole, stop, err := scanTail(f, head, off, size, c)
			if err != nil || whole || stop {
				return whole, err
			}
		}
		hi = lo
	}
	return false, nil
}

// scanTail scans f from off to size, after the file's first head bytes
// (a zstd dictionary frame). whole: whole records up to the end; stop: at
// least one whole record, then not the end of one (the file is
// unfinished).
func scanTail(f io.ReaderAt, head, off, size int64, c warcscan.Codec) (whole, stop bool, err error) {
	r := io.MultiReader(io.NewSectionReader(f, 0, head), io.NewSectionReader(f, off, size-off))
	s := warcscan.New(r, warcscan.Options{Codec: c, SkipHeaders: true})
	for err == nil {
		_, err = s.Next()
	}
	switch {
	case err == io.EOF:
		return s.Records() > 0, s.Records() > 0, nil
	case errors.Is(err, warcscan.ErrNotWhole), errors.Is(err, warcscan.ErrHeaderTooLong):
		return false, s.Records() > 0, nil
	}
	return false, false, err
}
