package dedup

import (
	"container/list"
	"sync"
)

// answerCache remembers the last answers by URL (the newest capture, or nil
// for none); least recently used first out. A nil cache remembers nothing.
type answerCache struct {
	mu    sync.Mutex
	max   int
	ll    list.List
	items map[string]*list.Element
}

type cached struct {
	key string
	n   *newest
}

func newAnswerCache(n int) *answerCache {
	return &answerCache{max: n, items: make(map[string]*list.Element, n)}
}

func (ac *answerCache) get(key string) (*newest, bool) {
	if ac == nil {
		return nil, false
	}
	ac.mu.Lock()
	defer ac.mu.Unlock()
	el, ok := ac.items[key]
	if !ok {
		return nil, false
	}
	ac.ll.MoveToFront(el)
	return el.Value.(*cached).n, true
}

func (ac *answerCache) put(key string, n *newest) {
	if ac == nil {
		return
	}
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if el, ok := ac.items[key]; ok {
		el.Value.(*cached).n = n
		ac.ll.MoveToFront(el)
		return
	}
	ac.items[key] = ac.ll.PushFront(&cached{key: key, n: n})
	for ac.ll.Len() > ac.max {
		old := ac.ll.Remove(ac.ll.Back()).(*cached)
		delete(ac.items, old.key)
	}
}
