// Package warcscan walks the records of a WARC file, compressed or not, as
// a stream: for each record it reports where the record starts in the file
// and how long it is there, its header, and its block to read. Memory does
// not grow with the size of a record or of the file.
//
//	s := warcscan.New(f, warcscan.Options{Codec: warcscan.ForName(path)})
//	for {
//		rec, err := s.Next()
//		if err == io.EOF {
//			break // the file ends after a whole record
//		}
//		if err != nil {
//			return err // errors.Is(err, warcscan.ErrNotWhole): cut at s.End()
//		}
//		uri, _ := rec.Header.Get("WARC-Target-URI")
//		// read rec.Block if needed; s.Finish() sets rec.Length
//	}
//
// # Whole records
//
// A scan takes the grammar warcproxy writes, and stops at anything else. A
// record is a "WARC/1.0" or "WARC/1.1" line, header fields with WARC-Type,
// WARC-Record-ID, WARC-Date and exactly one Content-Length, a blank line,
// Content-Length bytes of block and "\r\n\r\n". Header lines end in CRLF
// and hold no control character but tab; a field name is an HTTP token
// whose colon comes within the first MaxKeptLine bytes of its line; a
// Content-Length value is decimal digits (at most 18) on a line of at most
// MaxKeptLine bytes; a line starting with a space or tab continues the
// field before it, which must not be Content-Length. Block digests are not
// checked (a reader that wants them hashes the Block it reads): the scan
// is about where records are and that they are whole.
//
// In an uncompressed file the records follow each other with nothing
// between them. In a compressed one every record is one unit of the codec
// (a gzip member, a zstd frame), which holds that record and nothing else
// and must decompress fully and pass its checksum. A zstd file may start
// with a dictionary frame, which the frames after it use; a record's
// offset is that of its own frame.
//
// Where the data stops being whole records (a file cut short by a crash,
// a bad checksum, bytes that are not a record) Next returns an error
// wrapping ErrNotWhole, and End is the offset just after the last whole
// record: cutting the file there keeps exactly its whole records. A read
// error of the file is returned as such, never as ErrNotWhole, so that a
// failing disk does not pass for a damaged file.
//
// # Codecs
//
// A Codec says how records sit in a file: None (a .warc file), Gzip (a
// .warc.gz file, one gzip member per record) or Zstd (a .warc.zst file as
// the WARC-zstd specification lays it out: one zstd frame per record, with
// its content size and checksum, and an optional dictionary frame at the
// start). Options.Codec picks one; ForName gives the one a file name calls
// for, and Sniff, which New uses when Options.Codec is nil, the one the
// first bytes show. NewReader reads a whole file's records as the bytes of
// an uncompressed one, for readers that know only .warc and .warc.gz.
//
// To add a codec:
//
//   - write a type with Name, Ext, Sniff and NewDecoder, in a file of its
//     own like gzip.go and zstd.go, with `var _ Codec = ...`;
//   - its Decoder's Skip reads, from the buffered reader of the file, what
//     holds no record (zstd's dictionary frame, which it keeps for the
//     frames that follow); the next record's offset is after it;
//   - its Open starts a unit and returns a reader that returns io.EOF at the
//     unit's end, having read from the file nothing past that end, since
//     the scanner takes where the file's reader stands as the end of the
//     record. A decompressor that reads byte by byte from an io.ByteReader
//     (flate) stops there by itself; one that reads ahead must be handed
//     exactly the unit (zstd.go's frameReader walks the block headers);
//   - add it to the compressed list in codec.go, and a case to the table
//     tests (several records, truncated unit, garbage tail, record larger
//     than the buffers, empty file) and to FuzzScanner's seeds.
//
// Crash recovery picks a file's codec with ForName and the CDXJ indexer
// with Sniff, so both then take the new files as they are.
package warcscan
