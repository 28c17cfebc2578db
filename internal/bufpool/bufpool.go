// Package bufpool lends the 32 KiB buffers that bodies are copied through
// (client, origin, spools, digests), so that a busy proxy does not allocate
// one per exchange.
package bufpool

import "sync"

// Size is the length of every buffer: large enough for few syscalls per
// body, small enough to keep thousands of exchanges in flight.
const Size = 32 << 10

var pool = sync.Pool{New: func() any { b := make([]byte, Size); return &b }}

// Get lends a buffer; give it back with Put.
func Get() *[]byte { return pool.Get().(*[]byte) }

// Put returns a buffer lent by Get.
func Put(b *[]byte) { pool.Put(b) }
