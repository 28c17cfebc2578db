package upload

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/s3proc"
	"github.com/warcproxy/warcproxy/internal/testutil/s3test"
)

// privateCA writes a CA and a certificate for 127.0.0.1 it signed into
// dir, and returns the CA's PEM and the certificate's and key's files.
func privateCA(t *testing.T, dir string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test store CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err = x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "store.crt"), filepath.Join(dir, "store.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}

// A store on HTTPS with a certificate from a private CA: verified with
// --upload-ca-file's CA, and refused without it (a configuration error
// at start, not an outage to wait out).
func TestPrivateCA(t *testing.T) {
	bin := s3test.Bin(t)
	dir := t.TempDir()
	caPEM, certFile, keyFile := privateCA(t, dir)
	srv, err := s3proc.StartTLS(bin, t.TempDir(), certFile, keyFile)
	require.NoError(t, err)
	defer srv.Kill()
	require.NoError(t, srv.Bucket("archive"))
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	ctx := context.Background()

	trusted, err := NewS3(ctx, S3Options{Bucket: "archive", Endpoint: srv.Endpoint, CAPEM: caPEM})
	require.NoError(t, err)
	require.NoError(t, trusted.Check(ctx, "crawl/"))
	f, err := os.CreateTemp(dir, "a")
	require.NoError(t, err)
	_, _ = f.WriteString("hello")
	d, err := describe(f, false)
	require.NoError(t, err)
	require.NoError(t, trusted.Put(ctx, "crawl/a", f, 5, Sums{SHA256: d.sha256, CRC32: d.crc32}))
	obj, err := trusted.Head(ctx, "crawl/a")
	require.NoError(t, err)
	require.Equal(t, int64(5), obj.Size)

	untrusted, err := NewS3(ctx, S3Options{Bucket: "archive", Endpoint: srv.Endpoint})
	require.NoError(t, err)
	err = untrusted.Check(ctx, "crawl/")
	require.ErrorIs(t, err, ErrRefused)
	require.ErrorContains(t, err, "certificate")
}
