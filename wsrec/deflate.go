package wsrec

import (
	"compress/flate"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// deflateParams is permessage-deflate (RFC 7692) as the server's 101
// accepted it: whether each side keeps its compression context between
// messages. max_window_bits needs nothing of a reader: a sender's window is
// at most 32 KiB, which the inflater keeps anyway.
type deflateParams struct {
	on                                       bool
	clientNoContextTakeover, serverNoContext bool
}

// negotiated reads the 101's Sec-WebSocket-Extensions. Only
// permessage-deflate is understood: another extension could give RSV bits
// or payloads a meaning this reader does not know, so the socket is not
// recorded (an error).
func negotiated(values []string) (deflateParams, error) {
	var p deflateParams
	for _, v := range values {
		for ext := range strings.SplitSeq(v, ",") {
			ext = strings.TrimSpace(ext)
			if ext == "" {
				continue
			}
			name, params, _ := strings.Cut(ext, ";")
			if name = strings.TrimSpace(name); !strings.EqualFold(name, "permessage-deflate") || p.on {
				return p, fmt.Errorf("extension %q negotiated: its framing is not understood", name)
			}
			p.on = true
			for param := range strings.SplitSeq(params, ";") {
				k, val, _ := strings.Cut(strings.TrimSpace(param), "=")
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "client_no_context_takeover":
					p.clientNoContextTakeover = true
				case "server_no_context_takeover":
					p.serverNoContext = true
				case "client_max_window_bits", "server_max_window_bits":
					if val = strings.Trim(strings.TrimSpace(val), `"`); val != "" {
						if n, err := strconv.Atoi(val); err != nil || n < 8 || n > 15 {
							return p, fmt.Errorf("permessage-deflate: %s=%q out of 8..15", k, val)
						}
					}
				case "":
				default:
					return p, fmt.Errorf("permessage-deflate: unknown parameter %q", k)
				}
			}
		}
	}
	return p, nil
}

// deflateTail ends a message's compressed bytes: RFC 7692 7.2.2's
// 0x00 0x00 0xff 0xff that the sender took off, then an empty final
// stored block, so that the inflater ends with io.EOF instead of waiting
// for more.
var deflateTail = []byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}

// windowSize is deflate's largest window (max_window_bits 15).
const windowSize = 32 << 10

// inflater decompresses one direction's messages. With context takeover a
// message may refer back into the ones before it: the last 32 KiB of what
// it inflated is the next message's dictionary.
type inflater struct {
	takeover bool
	fr       io.ReadCloser
	window   []byte
	buf      []byte
}

// inflate writes the inflated payload of compressed to out.
func (f *inflater) inflate(compressed io.Reader, out *assembly) error {
	src := io.MultiReader(compressed, &sliceReader{b: deflateTail})
	var dict []byte
	if f.takeover {
		dict = f.dict()
	}
	if f.fr == nil {
		f.fr = flate.NewReaderDict(src, dict)
		f.buf = make([]byte, 16<<10)
	} else if err := f.fr.(flate.Resetter).Reset(src, dict); err != nil {
		return err
	}
	for {
		n, err := f.fr.Read(f.buf)
		if n > 0 {
			if werr := out.write(f.buf[:n]); werr != nil {
				return werr
			}
			if f.takeover {
				f.keep(f.buf[:n])
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("inflating a message: %w", err)
		}
	}
}

// keep appends p to the window, which holds at least the last 32 KiB
// inflated (it is copied down only when it has grown to twice that).
func (f *inflater) keep(p []byte) {
	if len(p) >= windowSize {
		f.window = append(f.window[:0], p[len(p)-windowSize:]...)
		return
	}
	if len(f.window)+len(p) > 2*windowSize {
		f.window = append(f.window[:0], f.window[len(f.window)-windowSize:]...)
	}
	f.window = append(f.window, p...)
}

// dict is the last 32 KiB inflated.
func (f *inflater) dict() []byte {
	return f.window[max(0, len(f.window)-windowSize):]
}
