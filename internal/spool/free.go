package spool

import "sync"

// freeChunks keeps the chunks of closed buffers for the next ones. Unlike
// a sync.Pool, which keeps what it holds through two garbage collections
// and so let RSS reach about twice --spool-memory under load (153 MB with
// the then default 64 MiB at 256 KB c50), a chunk is kept only if what is
// kept stays within what the budget leaves unused at that moment, so
// chunks in use and kept add up to about the budget (a buffer that
// reserves memory takes a kept chunk only after reserving); the rest go to
// the garbage collector. At most a quarter of the budget is kept
// (keptShare), and it stays for the next exchanges: an idle proxy holds up
// to --spool-memory/4 of chunks.
type freeChunks struct {
	mu    sync.Mutex
	small []*[]byte
	large []*[]byte
	bytes int64 // held in small and large
}

// get returns a chunk of size bytes (smallChunk or largeChunk), a kept one
// if there is one.
func (f *freeChunks) get(size int) *[]byte {
	f.mu.Lock()
	list := &f.large
	if size == smallChunk {
		list = &f.small
	}
	if n := len(*list); n > 0 {
		c := (*list)[n-1]
		(*list)[n-1] = nil
		*list = (*list)[:n-1]
		f.bytes -= int64(size)
		f.mu.Unlock()
		return c
	}
	f.mu.Unlock()
	b := make([]byte, size)
	return &b
}

// put keeps c if the free list then holds no more than room bytes (what
// the budget leaves unused by open buffers); else c is dropped.
func (f *freeChunks) put(c *[]byte, room int64) {
	size := int64(len(*c))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bytes+size > room {
		return
	}
	f.bytes += size
	if size == smallChunk {
		f.small = append(f.small, c)
	} else {
		f.large = append(f.large, c)
	}
}
