package wire

import "time"

// takeIdle returns a pooled connection that is still usable: not expired,
// not closed by the origin, and with no bytes the origin sent unasked
// (which would otherwise be taken for the next response).
func (u *Client) takeIdle(key string) *Conn {
	now := time.Now()
	for {
		u.mu.Lock()
		list := u.idle[key]
		if len(list) == 0 {
			delete(u.idle, key)
			u.mu.Unlock()
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		u.idle[key] = list[:len(list)-1]
		u.idleTotal--
		u.mu.Unlock()
		if now.Sub(c.idleFrom) <= maxIdleTime && alive(c.raw) {
			c.reused = true
			return c
		}
		c.conn.Close()
	}
}

// Put returns a clean connection to the idle pool.
func (u *Client) Put(c *Conn) {
	c.SetFetchEnd(time.Time{})
	c.rd.sink, c.wr.sink = nil, nil
	c.rd.n, c.rd.limit = 0, 0
	c.idleFrom = time.Now()
	u.mu.Lock()
	if u.closed || len(u.idle[c.key]) >= maxIdlePerHost || u.idleTotal >= maxIdleTotal {
		u.mu.Unlock()
		c.conn.Close()
		return
	}
	u.idle[c.key] = append(u.idle[c.key], c)
	u.idleTotal++
	if u.reaper == nil {
		u.reaper = time.AfterFunc(reapEvery, u.reap)
	}
	u.mu.Unlock()
}

// reap closes idle connections that expired or that the origin closed (or
// wrote to), every second while there are any, so that they do not linger
// in CLOSE_WAIT; net/http.Transport notices at once with a read goroutine
// per connection, this costs one non-blocking peek per idle connection.
func (u *Client) reap() {
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, list := range u.idle {
		kept := list[:0]
		for _, c := range list {
			if now.Sub(c.idleFrom) > maxIdleTime || !alive(c.raw) {
				c.conn.Close()
				u.idleTotal--
				continue
			}
			kept = append(kept, c)
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(u.idle, k)
		} else {
			u.idle[k] = kept
		}
	}
	if u.idleTotal > 0 && !u.closed {
		u.reaper.Reset(reapEvery)
	} else {
		u.reaper = nil
	}
}

// CloseIdle closes every idle connection (at shutdown).
func (u *Client) CloseIdle() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	if u.reaper != nil {
		u.reaper.Stop()
		u.reaper = nil
	}
	for k, list := range u.idle {
		for _, c := range list {
			c.conn.Close()
		}
		delete(u.idle, k)
	}
	u.idleTotal = 0
}
