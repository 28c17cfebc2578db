// Package mitm is the proxy's certificate authority: it loads or creates
// the CA that clients trust, and signs (and caches) the leaf certificate the
// proxy shows for each host it intercepts in a CONNECT tunnel.
package mitm

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// CA signs leaf certificates for the hosts the proxy intercepts.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certDER []byte

	certsDir string
	logger   *slog.Logger

	mu    sync.RWMutex
	cache map[string]*tls.Certificate
	group singleflight.Group

	hits, misses atomic.Int64
}

const maxCachedLeaves = 50000

// LoadOrCreateCA reads the CA certificate and key from path (PEM, both in
// one file, as warcprox keeps them) or creates an ECDSA P-256 CA there
// (mode 0600) when the file does not exist. A certificate-only copy for
// clients is written beside it with the extension .crt. certsDir, when not
// empty, persists leaf certificates across restarts.
func LoadOrCreateCA(path, certsDir string, logger *slog.Logger) (*CA, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data, err = createCA(path)
		if err != nil {
			return nil, err
		}
		logger.Info("created CA", "path", path)
	case err != nil:
		return nil, fmt.Errorf("reading CA file: %w", err)
	}
	ca, err := readCAFile(path, data)
	if err != nil {
		return nil, err
	}
	ca.logger = logger
	ca.cache = make(map[string]*tls.Certificate)
	if certsDir != "" {
		if err := os.MkdirAll(certsDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating certs dir: %w", err)
		}
		ca.certsDir = certsDir
	}
	crt := CertOnlyPath(path)
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.certDER})
	if old, err := os.ReadFile(crt); err != nil || string(old) != string(pemCert) {
		if err := os.WriteFile(crt, pemCert, 0o644); err != nil {
			return nil, fmt.Errorf("writing CA certificate for clients: %w", err)
		}
	}
	return ca, nil
}

// CheckCAFile checks, without creating or changing anything, that the CA
// file at path is usable: absent (it will be created), or a certificate
// and key that parse, with a key file only its owner can read.
func CheckCAFile(path string) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("reading CA file: %w", err)
	}
	_, err = readCAFile(path, data)
	return err
}

// readCAFile parses the CA file at path, which holds data. Only a file
// that holds a private key is checked for who can read it: advice to chmod
// a file that is not the CA (a wrong --cacert) would be harmful.
func readCAFile(path string, data []byte) (*CA, error) {
	ca, err := parseCA(data)
	if hasPrivateKey(data) {
		if err := checkKeyFileMode(path); err != nil {
			return nil, err
		}
	} else if err != nil && hasCertificate(data) {
		return nil, certOnlyError(path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("CA file %s: %w", path, err)
	}
	return ca, nil
}

// certOnlyError explains a CA file that holds a certificate but no key:
// most likely the copy written for clients (NAME.crt) was given instead of
// the CA file itself, which it names when it is there.
func certOnlyError(path string, err error) error {
	hint := ""
	withKey := strings.TrimSuffix(path, filepath.Ext(path)) + ".pem"
	if data, rerr := os.ReadFile(withKey); withKey != path && rerr == nil && hasPrivateKey(data) {
		hint = "; the CA file with the key is beside it: --cacert " + withKey
	}
	return fmt.Errorf("CA file %s: %w: it holds a certificate and no private key, as the copy written for clients does%s", path, err, hint)
}

// hasPrivateKey reports whether data holds a PEM private key block.
func hasPrivateKey(data []byte) bool {
	return hasPEMBlock(data, func(typ string) bool { return strings.HasSuffix(typ, "PRIVATE KEY") })
}

// hasCertificate reports whether data holds a PEM certificate block.
func hasCertificate(data []byte) bool {
	return hasPEMBlock(data, func(typ string) bool { return typ == "CERTIFICATE" })
}

func hasPEMBlock(data []byte, match func(typ string) bool) bool {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return false
		}
		if match(block.Type) {
			return true
		}
	}
}

// CertOnlyPath is where the client copy of the CA certificate is written.
func CertOnlyPath(caPath string) string {
	return strings.TrimSuffix(caPath, filepath.Ext(caPath)) + ".crt"
}

func createCA(path string) ([]byte, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating CA dir: %w", err)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "warcproxy CA on " + host, Organization: []string{"warcproxy"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating CA file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing CA file: %w", err)
	}
	return data, f.Close()
}

// parseCA accepts the first certificate and the first private key (PKCS#8,
// PKCS#1 RSA or SEC 1 EC) in the PEM data, so warcprox's RSA CA files work.
func parseCA(data []byte) (*CA, error) {
	ca := &CA{}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch {
		case block.Type == "CERTIFICATE" && ca.cert == nil:
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing certificate: %w", err)
			}
			ca.cert, ca.certDER = c, block.Bytes
		case strings.HasSuffix(block.Type, "PRIVATE KEY") && ca.key == nil:
			k, err := parseKey(block.Bytes)
			if err != nil {
				return nil, err
			}
			ca.key = k
		}
	}
	if ca.cert == nil || ca.key == nil {
		return nil, errors.New("need a PEM certificate and private key in one file")
	}
	if !ca.cert.IsCA {
		return nil, errors.New("certificate is not a CA certificate")
	}
	return ca, nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, errors.New("unsupported private key type")
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("cannot parse private key")
}

// Certificate returns the CA certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CacheStats reports leaf certificate cache hits and misses.
func (ca *CA) CacheStats() (hits, misses int64) { return ca.hits.Load(), ca.misses.Load() }

// Leaf returns a certificate for host (a DNS name or an IP address),
// generating it at most once however many connections ask at the same time.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !ValidHostName(host) {
		return nil, fmt.Errorf("not a host name for a certificate: %q", host)
	}
	ca.mu.RLock()
	c := ca.cache[host]
	ca.mu.RUnlock()
	if c != nil && time.Now().Before(c.Leaf.NotAfter) {
		ca.hits.Add(1)
		return c, nil
	}
	ca.misses.Add(1)
	v, err, _ := ca.group.Do(host, func() (any, error) {
		c, err := ca.loadLeaf(host)
		if err != nil {
			c, err = ca.makeLeaf(host)
			if err != nil {
				return nil, err
			}
			ca.saveLeaf(host, c)
		}
		ca.mu.Lock()
		if len(ca.cache) >= maxCachedLeaves {
			for k := range ca.cache { // drop an arbitrary half; they are cheap to remake
				delete(ca.cache, k)
				if len(ca.cache) < maxCachedLeaves/2 {
					break
				}
			}
		}
		ca.cache[host] = c
		ca.mu.Unlock()
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*tls.Certificate), nil
}

func (ca *CA) makeLeaf(host string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.AddDate(1, 0, 0)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	pub := key.Public()
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	ski := sha1.Sum(spki)
	tmpl.SubjectKeyId = ski[:]
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.certDER}, PrivateKey: key, Leaf: leaf}, nil
}

func (ca *CA) leafPath(host string) string {
	// Host names cannot contain '/', but IPv6 literals contain ':'.
	return filepath.Join(ca.certsDir, strings.ReplaceAll(host, ":", "_")+".pem")
}

func (ca *CA) loadLeaf(host string) (*tls.Certificate, error) {
	if ca.certsDir == "" {
		return nil, os.ErrNotExist
	}
	data, err := os.ReadFile(ca.leafPath(host))
	if err != nil {
		return nil, err
	}
	c, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, err
	}
	if c.Leaf == nil || time.Now().After(c.Leaf.NotAfter.Add(-24*time.Hour)) {
		return nil, errors.New("stored certificate expired")
	}
	if err := c.Leaf.CheckSignatureFrom(ca.cert); err != nil {
		return nil, errors.New("stored certificate is from another CA")
	}
	c.Certificate = append(c.Certificate[:1], ca.certDER)
	return &c, nil
}

func (ca *CA) saveLeaf(host string, c *tls.Certificate) {
	if ca.certsDir == "" {
		return
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})...)
	tmp, err := os.CreateTemp(ca.certsDir, ".leaf-*")
	if err == nil {
		_, err = tmp.Write(data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), ca.leafPath(host))
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}
	if err != nil {
		ca.logger.Warn("cannot persist leaf certificate", "host", host, "err", err)
	}
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// checkKeyFileMode refuses a CA key file that others can read: whoever can
// read it can impersonate every HTTPS site to the clients that trust the CA.
func checkKeyFileMode(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("checking CA file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("CA file %s holds the CA's private key but is readable by group or others (mode %04o): "+
			"anyone who can read it can impersonate every HTTPS site to clients that trust this CA; "+
			"run chmod 600 %s (give clients the certificate-only copy, %s)", path, perm, path, CertOnlyPath(path))
	}
	return nil
}
