package writer

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
)

// TestRawZstd: frames of raw blocks, at and around the block limit, written
// in pieces of any size, decompress to their content with Debian's zstd
// (which checks the checksum and the content size) and with klauspost's
// decoder; a frame that names a dictionary needs it, as the WARC-zstd
// spec has every frame of such a file do.
func TestRawZstd(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dictID := range []uint32{0, 0x1234567} {
		var file, want bytes.Buffer
		for _, size := range []int{0, 1, maxZstdRawBlock - 1, maxZstdRawBlock, maxZstdRawBlock + 1, 1<<20 + 3} {
			body := make([]byte, size)
			for i := range body {
				body[i] = byte(rng.Uint32())
			}
			z := rawZstd{dictID: dictID}
			var frame bytes.Buffer
			z.Reset(&frame, int64(size))
			for p := body; len(p) > 0; {
				n := min(len(p), 1+rng.IntN(300000))
				_, err := z.Write(p[:n])
				require.NoError(t, err)
				p = p[n:]
			}
			require.NoError(t, z.Close())
			var h zstd.Header
			require.NoError(t, h.Decode(frame.Bytes()))
			require.True(t, h.HasFCS && h.HasCheckSum, "%+v", h)
			require.Equal(t, uint64(size), h.FrameContentSize)
			require.Equal(t, dictID, h.DictionaryID)
			file.Write(frame.Bytes())
			want.Write(body)
		}
		if dictID != 0 {
			_, err := zstdcli.Try(t, file.Bytes(), "-d", "-c")
			require.ErrorContains(t, err, "Dictionary mismatch", "a frame that names a dictionary needs it")
			continue
		}
		require.Equal(t, want.Bytes(), zstdcli.Run(t, file.Bytes(), "-d", "-c"))
		dec, err := zstd.NewReader(nil)
		require.NoError(t, err)
		got, err := dec.DecodeAll(file.Bytes(), nil)
		require.NoError(t, err)
		require.Equal(t, want.Bytes(), got)
	}

	var z rawZstd
	z.Reset(&bytes.Buffer{}, 10)
	_, err := z.Write(make([]byte, 11))
	require.Error(t, err, "more than the size")
	z.Reset(&bytes.Buffer{}, 10)
	_, _ = z.Write(make([]byte, 9))
	require.Error(t, z.Close(), "less than the size")
}
