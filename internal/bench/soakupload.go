package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/warcproxy/warcproxy/internal/s3proc"
	"github.com/warcproxy/warcproxy/upload"
)

// soakBucket is the bucket (a folder of the store's root) and prefix a
// soak with uploads ships to.
const soakBucket, soakPrefix = "soak", "run"

// soakStore is the object store of a soak with --upload-store: a
// VersityGW the proxy ships to, and the receiver of its completion
// events, which hands each WARC to the accounting as its event arrives
// (only then has the store confirmed it) and deletes it from the bucket
// once read, so that the store's disk stays flat as the local one does.
type soakStore struct {
	srv  *s3proc.Server
	coll *warcCollector
	ln   net.Listener
	hs   *http.Server
	// toRead takes the WARCs announced, read by one goroutine so that an
	// event is acknowledged at once: a receiver that answered only after
	// reading a gigabyte would hold the proxy's shipper that long.
	toRead  chan string
	readers sync.WaitGroup
	readErr error
	stopped sync.Once

	mu       sync.Mutex
	events   int64           // events received, repeats included
	ids      map[string]bool // distinct event ids
	read     map[string]bool // WARC keys read into the accounting
	notFound int64           // WARC events whose object was not in the bucket
	restart  time.Duration   // when the store was killed, from the start of the load
	down     time.Duration   // how long it was down
}

// startSoakStore starts VersityGW with its root under out and the event
// receiver on a loopback port.
func startSoakStore(bin, out string, keep bool) (*soakStore, error) {
	root := filepath.Join(out, "store")
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("clearing %s: %w", root, err)
	}
	if err := os.MkdirAll(filepath.Join(root, soakBucket), 0o755); err != nil {
		return nil, err
	}
	srv, err := s3proc.Start(bin, root)
	if err != nil {
		return nil, err
	}
	s := &soakStore{srv: srv, coll: newWARCCollector(filepath.Join(root, soakBucket, soakPrefix), keep),
		ids: map[string]bool{}, read: map[string]bool{}, toRead: make(chan string, 1<<16)}
	s.readers.Go(s.readAnnounced)
	if s.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		srv.Kill()
		return nil, err
	}
	s.hs = &http.Server{Handler: http.HandlerFunc(s.receive), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.hs.Serve(s.ln) }()
	return s, nil
}

// proxyArgs are the flags that make the proxy ship to the store.
func (s *soakStore) proxyArgs() []string {
	return []string{"--cdxj", "--upload-to", "s3://" + soakBucket + "/" + soakPrefix, "--upload-endpoint", s.srv.Endpoint,
		"--upload-webhook", "http://" + s.ln.Addr().String() + "/events"}
}

// receive takes one completion event.
func (s *soakStore) receive(w http.ResponseWriter, r *http.Request) {
	var e upload.Event
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.events++
	s.ids[e.ID] = true
	first := e.Kind == upload.KindWARC && !s.read[e.Key]
	s.read[e.Key] = s.read[e.Key] || e.Kind == upload.KindWARC
	s.mu.Unlock()
	if !first {
		return
	}
	s.toRead <- filepath.Join(s.srv.Root, soakBucket, filepath.FromSlash(e.Key))
}

// readAnnounced reads the announced WARCs into the accounting, in turn.
func (s *soakStore) readAnnounced() {
	for path := range s.toRead {
		err := s.coll.collectPath(path)
		s.mu.Lock()
		switch {
		case errors.Is(err, os.ErrNotExist):
			s.notFound++
		case err != nil && s.readErr == nil:
			s.readErr = err
		}
		s.mu.Unlock()
	}
}

// outage kills the store, waits down, and starts it again on the same
// port and root: the proxy records on, and ships once it is back.
func (s *soakStore) outage(at, down time.Duration) error {
	s.mu.Lock()
	s.restart, s.down = at, down
	s.mu.Unlock()
	s.srv.Kill()
	time.Sleep(down)
	return s.srv.Restart()
}

// finish, after the proxy exited, reads the WARCs in the bucket that no
// event announced (there should be none) and returns how many.
func (s *soakStore) finish() (unannounced int64, err error) {
	s.stopReceiving()
	if s.readErr != nil {
		return 0, s.readErr
	}
	dir := filepath.Join(s.srv.Root, soakBucket, soakPrefix)
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	for _, e := range entries {
		if e.IsDir() || !upload.IsClosedWARC(e.Name()) {
			continue
		}
		s.mu.Lock()
		seen := s.read[soakPrefix+"/"+e.Name()]
		s.mu.Unlock()
		if seen {
			continue // kept (--keep-warcs)
		}
		unannounced++
		if err := s.coll.collectPath(filepath.Join(dir, e.Name())); err != nil {
			return unannounced, err
		}
	}
	return unannounced, nil
}

// stopReceiving ends the receiver and waits for the WARCs it took to be
// read.
func (s *soakStore) stopReceiving() {
	s.stopped.Do(func() {
		_ = s.hs.Shutdown(context.Background())
		close(s.toRead)
		s.readers.Wait()
	})
}

func (s *soakStore) close() {
	s.stopReceiving()
	s.srv.Kill()
}

// SoakUpload is what a soak with uploads found of the shipping.
type SoakUpload struct {
	Endpoint    string
	Restart     time.Duration // when the store was killed
	Down        time.Duration // for how long
	Events      int64         // received, repeats included
	Distinct    int64         // distinct ids
	NotFound    int64         // WARC events whose object was not in the bucket
	Unannounced int64         // WARCs in the bucket without an event
	LocalLeft   int64         // closed WARCs left in --dir after the proxy exited
}

// OK: every WARC announced and found, nothing left on the proxy's disk.
func (u *SoakUpload) OK() bool { return u.NotFound == 0 && u.Unannounced == 0 && u.LocalLeft == 0 }

func (s *soakStore) result(localLeft int64, unannounced int64) *SoakUpload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &SoakUpload{Endpoint: s.srv.Endpoint, Restart: s.restart, Down: s.down, Events: s.events,
		Distinct: int64(len(s.ids)), NotFound: s.notFound, Unannounced: unannounced, LocalLeft: localLeft}
}

// closedLeft counts the closed WARCs and indexes left under dir.
func closedLeft(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && (upload.IsClosedWARC(d.Name()) || strings.HasSuffix(d.Name(), ".cdxj")) {
			n++
		}
		return nil
	})
	return n
}
