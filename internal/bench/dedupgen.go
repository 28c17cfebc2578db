package bench

import (
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
)

// dedupHosts is how many distinct hosts the generated URLs spread over: a
// crawl of a few thousand sites.
const dedupHosts = 3000

// dedupWords make host names, path segments and query values.
var dedupWords = []string{
	"news", "article", "archive", "static", "images", "media", "assets", "blog", "post", "story",
	"world", "politics", "science", "culture", "sport", "video", "photo", "gallery", "report", "review",
	"library", "collection", "research", "events", "people", "history", "climate", "health", "travel", "market",
}

var dedupTLDs = []string{"com", "org", "net", "de", "fr", "co.uk", "edu", "gov", "io", "info"}

var dedupExts = []string{".html", ".html", ".htm", ".php", ".jpg", ".png", ".css", ".js", "", "/"}

// entryGen makes dedup entries as the proxy saves them: a random sha1
// payload digest in base32 ("sha1:" + 32 characters), a URL of about 100
// characters on one of dedupHosts hosts, a "<urn:uuid:...>" record ID from
// a version 4 UUID and a WARC/1.0 date (seconds, as the proxy writes by
// default), each a second later than the one before. It is not safe for
// concurrent use: one per worker.
type entryGen struct {
	rng   *rand.Rand
	hosts []string
	date  time.Time
}

// newEntryGen seeds a generator; hosts is shared (read only).
func newEntryGen(seed uint64, hosts []string) *entryGen {
	return &entryGen{
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		hosts: hosts,
		date:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seed%1000) * time.Hour),
	}
}

// dedupHostNames builds the host pool, the same for every run.
func dedupHostNames() []string {
	rng := rand.New(rand.NewPCG(25, 25))
	hosts := make([]string, dedupHosts)
	for i := range hosts {
		w := dedupWords[rng.IntN(len(dedupWords))]
		hosts[i] = fmt.Sprintf("www.%s-%s%d.%s", w, dedupWords[rng.IntN(len(dedupWords))], i, dedupTLDs[rng.IntN(len(dedupTLDs))])
	}
	return hosts
}

// digest returns a fresh random payload digest.
func (g *entryGen) digest() string {
	var b [20]byte
	g.fill(b[:])
	return "sha1:" + base32.StdEncoding.EncodeToString(b[:])
}

// item returns a fresh entry under a fresh digest in the default bucket.
func (g *entryGen) item() dedup.Item {
	g.date = g.date.Add(time.Second)
	return dedup.Item{
		Key: dedup.Key{Digest: g.digest()},
		Entry: dedup.Entry{
			ID:   g.recordID(),
			URL:  g.url(),
			Date: g.date.Format("2006-01-02T15:04:05Z"),
		},
	}
}

func (g *entryGen) fill(b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := g.rng.Uint64()
		for j := i; j < min(i+8, len(b)); j++ {
			b[j] = byte(v)
			v >>= 8
		}
	}
}

// recordID is a "<urn:uuid:...>" of a version 4 UUID, as the writer makes.
func (g *entryGen) recordID() string {
	var u [16]byte
	g.fill(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var h [32]byte
	hex.Encode(h[:], u[:])
	s := string(h[:])
	return "<urn:uuid:" + s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:] + ">"
}

// url is scheme, host, two to four path segments, a file name and (most
// of the time) a query: 101 characters on average, from about 60 to 135.
func (g *entryGen) url() string {
	r := g.rng
	b := make([]byte, 0, 160)
	if r.IntN(10) == 0 {
		b = append(b, "http://"...)
	} else {
		b = append(b, "https://"...)
	}
	b = append(b, g.hosts[r.IntN(len(g.hosts))]...)
	for range 3 + r.IntN(3) {
		b = append(b, '/')
		b = append(b, dedupWords[r.IntN(len(dedupWords))]...)
	}
	b = append(b, '/')
	b = append(b, dedupWords[r.IntN(len(dedupWords))]...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(r.IntN(1_000_000)), 10)
	b = append(b, dedupExts[r.IntN(len(dedupExts))]...)
	if r.IntN(4) != 0 {
		b = append(b, "?id="...)
		b = strconv.AppendInt(b, int64(r.IntN(100_000_000)), 10)
		b = append(b, "&utm_source="...)
		b = append(b, dedupWords[r.IntN(len(dedupWords))]...)
	}
	return string(b)
}
