package wacz

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Version is the WACZ version the package follows.
const Version = "1.1.1"

// Paths of the package's own metadata.
const (
	datapackageJSON       = "datapackage.json"
	datapackageDigestJSON = "datapackage-digest.json"
)

// datapackage is datapackage.json: a Frictionless Data Package listing
// every other file of the WACZ with its size and SHA-256, so that a reader
// can check the package file by file.
type datapackage struct {
	Profile     string     `json:"profile"`
	WACZVersion string     `json:"wacz_version"`
	Title       string     `json:"title"`
	Created     string     `json:"created"`
	Modified    string     `json:"modified"`
	Software    string     `json:"software"`
	Resources   []resource `json:"resources"`
}

// datapackageDigest is datapackage-digest.json: the hash of
// datapackage.json, and with it of the whole package.
type datapackageDigest struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

// writeDatapackage writes datapackage.json, listing the entries written
// so far, then datapackage-digest.json.
func (z *zipPackage) writeDatapackage(title, software string) error {
	now := z.modified.UTC().Format(time.RFC3339)
	dp, err := json.MarshalIndent(datapackage{
		Profile:     "data-package",
		WACZVersion: Version,
		Title:       title,
		Created:     now,
		Modified:    now,
		Software:    software,
		Resources:   z.resources,
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", datapackageJSON, err)
	}
	dp = append(dp, '\n')
	sum := sha256.Sum256(dp)
	digest, err := json.MarshalIndent(datapackageDigest{
		Path: datapackageJSON,
		Hash: "sha256:" + hex.EncodeToString(sum[:]),
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", datapackageDigestJSON, err)
	}
	digest = append(digest, '\n')
	for _, f := range []struct {
		path string
		data []byte
	}{{datapackageJSON, dp}, {datapackageDigestJSON, digest}} {
		e, err := z.create(f.path, zip.Deflate)
		if err != nil {
			return err
		}
		if _, err := e.Write(f.data); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return nil
}
