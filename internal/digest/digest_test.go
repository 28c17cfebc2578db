package digest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormat(t *testing.T) {
	cases := []struct {
		alg  Algorithm
		b32  bool
		want string
	}{
		// sha1("abc") and sha256("abc"), well-known test vectors.
		{SHA1, false, "sha1:a9993e364706816aba3e25717850c26c9cd0d89d"},
		{SHA1, true, "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"},
		{SHA256, false, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{SHA256, true, "sha256:XJ4BNP4PAHH6UQKBIDPF3LRCEOYAGYNDSYLXVHFUCD7WD4QACWWQ===="},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.alg.Of([]byte("abc"), c.b32))
	}
	_, err := Parse("md5")
	require.Error(t, err)
	a, err := Parse("sha256")
	require.NoError(t, err)
	require.Equal(t, SHA256, a)
}
