package config

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/warcproxy/warcproxy/upload"
)

// validateUpload checks the --upload-* flags: the target, the endpoint,
// and that WARC file names cannot collide in the bucket.
func (c Config) validateUpload(p *problems) {
	if c.UploadTo == "" {
		for flag, set := range map[string]bool{
			"upload-endpoint": c.UploadEndpoint != "", "upload-ca-file": c.UploadCAFile != "", "upload-keep-local": c.UploadKeepLocal,
			"upload-webhook": c.UploadWebhook != "",
		} {
			if set {
				p.bad(flag, "needs --upload-to s3://BUCKET/PREFIX")
			}
		}
		return
	}
	if _, err := upload.ParseTarget(c.UploadTo); err != nil {
		p.bad("upload-to", "%v", err)
	}
	if c.UploadEndpoint != "" {
		if u, err := url.Parse(c.UploadEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.bad("upload-endpoint", "%q: want the store's URL, http://host:port or https://host:port", c.UploadEndpoint)
		} else if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			p.bad("upload-endpoint", "%q: want the store's URL without a path (the bucket and prefix go in --upload-to)", c.UploadEndpoint)
		}
	}
	p.atLeastOne("upload-workers", c.UploadWorkers)
	if c.UploadWebhook != "" {
		if n, err := upload.NewNotifier(c.UploadWebhook); err != nil {
			p.bad("upload-webhook", "%v", err)
		} else {
			_ = n.Close()
		}
	}
	if c.UploadPartSize < 5<<20 || c.UploadPartSize > 5<<30 {
		p.bad("upload-part-size", "must be 5 MiB to 5 GiB (S3's bounds for a part), got %d", c.UploadPartSize)
	}
	// Two processes shipping into one prefix must never write one key: the
	// random token is the part of a file name that differs between them.
	if !strings.Contains(c.WARCFilename, "{randomtoken}") {
		p.bad("warc-filename", "%q has no {randomtoken}: with --upload-to, two proxies could name two files alike and race for one object key", c.WARCFilename)
	}
}

// UploadCA reads --upload-ca-file: nil without one, an error when it
// cannot be read or holds no PEM certificate.
func (c Config) UploadCA() ([]byte, error) {
	if c.UploadCAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(c.UploadCAFile)
	if err != nil {
		return nil, err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", c.UploadCAFile)
	}
	return pem, nil
}
