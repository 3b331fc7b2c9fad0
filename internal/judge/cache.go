package judge

import (
	"container/list"
	"sync"
)

// lru is a fixed-size least-recently-used cache of reply contents.
type lru struct {
	mu    sync.Mutex
	size  int
	order *list.List // front: most recent
	items map[string]*list.Element
}

type lruEntry struct {
	key, value string
}

func newLRU(size int) *lru {
	if size <= 0 {
		return nil
	}
	return &lru{size: size, order: list.New(), items: make(map[string]*list.Element, size)}
}

func (c *lru) get(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return "", false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry).value, true
}

func (c *lru) put(key, value string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*lruEntry).value = value
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry{key: key, value: value})
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*lruEntry).key)
	}
}
