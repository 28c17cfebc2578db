package digest

import (
	"hash"
	"runtime"
	"sync"
	"sync/atomic"
)

// A huge body is hashed twice as it streams (the block and the payload
// digest), at about 2 GB/s each; on the goroutine that copies it from the
// origin to the client that holds one big download well below what the
// connections carry. Async moves the hashing of everything past the first
// asyncFrom bytes to goroutines of its own, so it runs on a spare core
// while the stream goes on. Small bodies, nearly all of them, are hashed
// where they pass: handing them over would cost more than hashing them.
const (
	asyncFrom  = 1 << 20   // bytes hashed inline before hashing may move off
	asyncBlock = 128 << 10 // bytes handed over at a time
	asyncSlots = 3         // blocks in flight; a Write waits when all are
)

var asyncBlocks = sync.Pool{New: func() any { b := make([]byte, 0, asyncBlock); return &b }}

// Lanes bound the hashes that hash off their writers' goroutines at once:
// the proxy makes one for all its exchanges (two lanes, an exchange's block
// and payload digests, per core beyond the first: SpareCoreLanes). Moving
// the hashing pays only when a core would otherwise idle: with ten huge
// downloads on two cores every core is busy, and handing blocks over would
// only add copies and goroutine switches (measured: 4 MB bodies at 10
// connections lost 7%). A hash that finds no free lane when it passes
// asyncFrom stays inline.
type Lanes struct{ free chan struct{} }

// NewLanes returns n lanes; with 0 (or a nil *Lanes) every hash is inline.
func NewLanes(n int) *Lanes { return &Lanes{free: make(chan struct{}, max(0, n))} }

// SpareCoreLanes is two lanes per core Go runs on beyond the first.
func SpareCoreLanes() int { return 2 * max(0, runtime.GOMAXPROCS(0)-1) }

// InUse is how many hashes hash off their writers' goroutines now.
func (l *Lanes) InUse() int { return len(l.free) }

func (l *Lanes) take() bool {
	if l == nil {
		return false
	}
	select {
	case l.free <- struct{}{}:
		return true
	default:
		return false
	}
}

// laneHeld is what a dropped Async's cleanup needs to give its lane back.
type laneHeld struct {
	held  atomic.Bool
	lanes *Lanes
}

// giveBack returns a lane still held.
func giveBack(l *laneHeld) {
	if l.held.CompareAndSwap(true, false) {
		<-l.lanes.free
	}
}

// Async is a hash.Hash that hashes large inputs off the writer's
// goroutine when a lane is free. Each full block of copied input gets a
// goroutine that waits for the one before it (the hash is sequential),
// hashes the block and ends, so no goroutine outlives the hashing. Sum,
// Reset and Release wait for the blocks in flight and give the lane back;
// an Async dropped without them gives it back when it is collected. Like
// other hashes, an Async is used by one goroutine at a time.
type Async struct {
	h     hash.Hash
	n     int64     // bytes written since the last Reset
	lanes *Lanes    // where it takes a lane; nil: always inline
	lane  *laneHeld // nil until it first takes a lane
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

// NewAsync wraps h, which it owns from now on, hashing off the writer's
// goroutine when one of lanes is free.
func NewAsync(h hash.Hash, lanes *Lanes) *Async {
	a := new(Async)
	a.Init(h, lanes)
	return a
}

// Init readies a zero (or released) Async in place, for an owner that holds
// it by value and so spares an allocation per exchange.
func (a *Async) Init(h hash.Hash, lanes *Lanes) { *a = Async{h: h, lanes: lanes} }

// Write hashes p: inline up to asyncFrom bytes, and past it too when no
// lane is free; else by copying it into blocks handed to hashing
// goroutines. It never fails.
func (a *Async) Write(p []byte) (int, error) {
	n := len(p)
	if !a.holdsLane() {
		// Nothing is in flight: a lane is given back only once its
		// blocks are hashed.
		if a.n < asyncFrom {
			k := int(min(int64(len(p)), asyncFrom-a.n))
			a.h.Write(p[:k])
			a.n += int64(k)
			p = p[k:]
		}
		if len(p) > 0 && !a.takeLane() {
			a.h.Write(p)
			a.n += int64(len(p))
			return n, nil
		}
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

func (a *Async) holdsLane() bool { return a.lane != nil && a.lane.held.Load() }

// takeLane takes a free lane for this hash, once it is past asyncFrom.
func (a *Async) takeLane() bool {
	if a.n < asyncFrom || !a.lanes.take() {
		return false
	}
	if a.lane == nil {
		a.lane = &laneHeld{lanes: a.lanes}
		// An Async dropped with a lane (an exchange given up half-way)
		// must not keep it from the next huge download for good.
		runtime.AddCleanup(a, giveBack, a.lane)
	}
	a.lane.held.Store(true)
	return true
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

// Release waits until everything written is hashed, returns the buffers
// to the pool and gives the lane back. The hash can be written on after.
func (a *Async) Release() {
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
	if a.lane != nil {
		giveBack(a.lane)
	}
}

// Sum appends the hash of everything written to b, once it is hashed.
func (a *Async) Sum(b []byte) []byte {
	a.Release()
	return a.h.Sum(b)
}

// Reset starts over, after the blocks in flight are hashed.
func (a *Async) Reset() {
	a.Release()
	a.h.Reset()
	a.n = 0
}

func (a *Async) Size() int      { return a.h.Size() }
func (a *Async) BlockSize() int { return a.h.BlockSize() }
