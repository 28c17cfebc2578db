package mitm

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestCACreatedOnFirstStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "warcproxy-ca.pem")
	ca, err := LoadOrCreateCA(path, "", discardLogger())
	require.NoError(t, err)

	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "CA key file")
	crt, err := os.Stat(filepath.Join(dir, "sub", "warcproxy-ca.crt"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), crt.Mode().Perm(), "certificate-only copy for clients")

	require.True(t, ca.Certificate().IsCA)
	_, isEC := ca.Certificate().PublicKey.(*ecdsa.PublicKey)
	require.True(t, isEC, "ECDSA P-256 CA")

	data, err := os.ReadFile(filepath.Join(dir, "sub", "warcproxy-ca.crt"))
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.Equal(t, "CERTIFICATE", block.Type)
	rest, _ := os.ReadFile(filepath.Join(dir, "sub", "warcproxy-ca.crt"))
	require.NotContains(t, string(rest), "PRIVATE KEY")

	// A second start loads the same CA.
	again, err := LoadOrCreateCA(path, "", discardLogger())
	require.NoError(t, err)
	require.Equal(t, ca.Certificate().Raw, again.Certificate().Raw)
}

// A warcprox CA file (RSA key and certificate in one PEM) still works.
func TestWarcproxRSACA(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "warcprox CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour * 24),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	path := filepath.Join(t.TempDir(), "warcprox-ca.pem")
	require.NoError(t, os.WriteFile(path, data, 0o600))

	ca, err := LoadOrCreateCA(path, "", discardLogger())
	require.NoError(t, err)
	leaf, err := ca.Leaf("example.org")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	_, err = leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "example.org", Roots: pool})
	require.NoError(t, err)
}

func TestLeafCacheSingleFlightAndPersistence(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	ca, err := LoadOrCreateCA(filepath.Join(dir, "ca.pem"), certs, discardLogger())
	require.NoError(t, err)

	var wg sync.WaitGroup
	got := make([]*tls.Certificate, 50)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = ca.Leaf("Example.ORG") }()
	}
	wg.Wait()
	for _, c := range got {
		require.Same(t, got[0], c, "one certificate however many ask at once")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	_, err = got[0].Leaf.Verify(x509.VerifyOptions{DNSName: "example.org", Roots: pool})
	require.NoError(t, err)

	ip, err := ca.Leaf("127.0.0.1")
	require.NoError(t, err)
	_, err = ip.Leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: pool})
	require.NoError(t, err, "IP address SAN")

	// Persisted: a new CA instance (a restart) loads the same leaf.
	st, err := os.Stat(filepath.Join(certs, "example.org.pem"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	restarted, err := LoadOrCreateCA(filepath.Join(dir, "ca.pem"), certs, discardLogger())
	require.NoError(t, err)
	again, err := restarted.Leaf("example.org")
	require.NoError(t, err)
	require.Equal(t, got[0].Leaf.Raw, again.Leaf.Raw)
	hits, misses := restarted.CacheStats()
	require.Equal(t, int64(0), hits)
	require.Equal(t, int64(1), misses)
	_, _ = restarted.Leaf("example.org")
	hits, _ = restarted.CacheStats()
	require.Equal(t, int64(1), hits)
}

func TestBadCAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(path, []byte("not a pem"), 0o600))
	_, err := LoadOrCreateCA(path, "", discardLogger())
	require.ErrorContains(t, err, "need a PEM certificate and private key")
}

// TestCAKeyReadableByOthersRefused: a CA key file that group or others can
// read makes startup refuse, saying how to fix it; the certs directory is
// 0700.
func TestCAKeyReadableByOthersRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.pem")
	_, err := LoadOrCreateCA(path, filepath.Join(dir, "certs"), discardLogger())
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(dir, "certs"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "leaf keys live in a private directory")

	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		require.NoError(t, os.Chmod(path, mode))
		_, err = LoadOrCreateCA(path, "", discardLogger())
		require.Error(t, err, "%04o", mode)
		require.ErrorContains(t, err, "chmod 600")
		require.ErrorContains(t, err, "readable by group or others")
	}
	require.NoError(t, os.Chmod(path, 0o600))
	_, err = LoadOrCreateCA(path, "", discardLogger())
	require.NoError(t, err)
}

// TestWrongCAFileGetsNoChmodAdvice: a --cacert that is not a CA file
// (not PEM, or the certificate-only copy for clients) is refused for what
// it is, never with advice to chmod it, even when others can read it; the
// permission advice is for files that hold a private key.
func TestWrongCAFileGetsNoChmodAdvice(t *testing.T) {
	dir := t.TempDir()
	caPath := filepath.Join(dir, "warcproxy-ca.pem")
	_, err := LoadOrCreateCA(caPath, "", discardLogger())
	require.NoError(t, err)
	crt, err := os.ReadFile(CertOnlyPath(caPath))
	require.NoError(t, err)
	key, err := os.ReadFile(caPath)
	require.NoError(t, err)
	keyOnly := key[:strings.Index(string(key), "-----BEGIN CERTIFICATE")]

	for _, tc := range []struct {
		name, file, content string
		want                []string
		notWant             []string
	}{
		{"not PEM", "notpem.txt", "hello\n",
			[]string{"CA file ", "notpem.txt: need a PEM certificate and private key"}, []string{"chmod", "private key but"}},
		{"the clients' copy, CA file beside it", "warcproxy-ca.crt", string(crt),
			[]string{"need a PEM certificate and private key", "holds a certificate and no private key",
				"the CA file with the key is beside it: --cacert " + caPath}, []string{"chmod"}},
		{"a certificate alone", "other.crt", string(crt),
			[]string{"need a PEM certificate and private key", "holds a certificate and no private key"},
			[]string{"chmod", "--cacert"}},
		{"a key without certificate", "key.pem", string(keyOnly),
			[]string{"holds the CA's private key but is readable by group or others", "chmod 600"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			require.NoError(t, os.Chmod(path, 0o644))
			for _, check := range []func() error{
				func() error { return CheckCAFile(path) },
				func() error { _, err := LoadOrCreateCA(path, "", discardLogger()); return err },
			} {
				err := check()
				require.Error(t, err)
				for _, w := range tc.want {
					require.ErrorContains(t, err, w)
				}
				for _, w := range tc.notWant {
					require.NotContains(t, err.Error(), w)
				}
			}
		})
	}
}
