package digest

import (
	"hash"
	"sync"
)

// A huge body is hashed twice as it streams (the block and the payload
// digest), at about 2 GB/s each; on the goroutine that copies it from the
// origin to the client that halves the speed of one big download. Async
// moves the hashing of everything past the first asyncFrom bytes to
// goroutines of its own, so it runs on a spare core while the stream goes
// on. Small bodies, nearly all of them, are hashed where they pass: handing
// them over would cost more than hashing them.
const (
	asyncFrom  = 1 << 20   // bytes hashed inline before hashing moves off
	asyncBlock = 128 << 10 // bytes handed over at a time
	asyncSlots = 3         // blocks in flight; a Write waits when all are
)

var asyncBlocks = sync.Pool{New: func() any { b := make([]byte, 0, asyncBlock); return &b }}

// Async is a hash.Hash that hashes large inputs off the writer's
// goroutine. Each full block of copied input gets a goroutine that waits
// for the one before it (the hash is sequential), hashes the block and
// ends: nothing outlives the hashing, so an Async that is dropped without
// Sum leaks nothing. Sum and Reset wait for the blocks in flight. Like
// other hashes, an Async is used by one goroutine at a time.
type Async struct {
	h     hash.Hash
	n     int64 // bytes written since the last Reset
	slots [asyncSlots]asyncSlot
	cur   int           // the slot being filled
	last  chan struct{} // closed when the latest block handed over is hashed
}

// asyncSlot is one block buffer; done is closed once its bytes are hashed
// (nil while the slot has not been handed over).
type asyncSlot struct {
	buf  *[]byte
	done chan struct{}
}

var _ hash.Hash = (*Async)(nil)

// NewAsync wraps h, which it owns from now on.
func NewAsync(h hash.Hash) *Async { return &Async{h: h} }

// Write hashes p, inline while the input is small, else by copying it
// into blocks handed to hashing goroutines. It never fails.
func (a *Async) Write(p []byte) (int, error) {
	n := len(p)
	if a.n < asyncFrom {
		k := min(int64(len(p)), asyncFrom-a.n)
		a.h.Write(p[:k])
		a.n += k
		p = p[k:]
	}
	for len(p) > 0 {
		s := a.fillable()
		c := copy((*s.buf)[len(*s.buf):cap(*s.buf)], p)
		*s.buf = (*s.buf)[:len(*s.buf)+c]
		p = p[c:]
		a.n += int64(c)
		if len(*s.buf) == cap(*s.buf) {
			a.handOver()
		}
	}
	return n, nil
}

// fillable returns the current slot, ready to take bytes: its last block
// hashed and its buffer emptied (or taken from the pool).
func (a *Async) fillable() *asyncSlot {
	s := &a.slots[a.cur]
	if s.done != nil {
		<-s.done
		s.done = nil
		*s.buf = (*s.buf)[:0]
	}
	if s.buf == nil {
		s.buf = asyncBlocks.Get().(*[]byte)
	}
	return s
}

// handOver starts hashing the current slot's block after the previous
// one, and moves on to the next slot.
func (a *Async) handOver() {
	s := &a.slots[a.cur]
	done, prev, h, b := make(chan struct{}), a.last, a.h, *s.buf
	go func() {
		if prev != nil {
			<-prev
		}
		h.Write(b)
		close(done)
	}()
	s.done, a.last = done, done
	a.cur = (a.cur + 1) % asyncSlots
}

// wait hands over a partly filled block, waits until everything written
// is hashed, and returns the buffers to the pool.
func (a *Async) wait() {
	if s := &a.slots[a.cur]; s.buf != nil && s.done == nil && len(*s.buf) > 0 {
		a.handOver()
	}
	if a.last != nil {
		<-a.last
		a.last = nil
	}
	for i := range a.slots {
		s := &a.slots[i]
		if s.buf != nil {
			*s.buf = (*s.buf)[:0]
			asyncBlocks.Put(s.buf)
		}
		*s = asyncSlot{}
	}
	a.cur = 0
}

// Sum appends the hash of everything written to b, once it is hashed.
func (a *Async) Sum(b []byte) []byte {
	a.wait()
	return a.h.Sum(b)
}

// Reset starts over, after the blocks in flight are hashed.
func (a *Async) Reset() {
	a.wait()
	a.h.Reset()
	a.n = 0
}

func (a *Async) Size() int      { return a.h.Size() }
func (a *Async) BlockSize() int { return a.h.BlockSize() }
