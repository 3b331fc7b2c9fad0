package adapter

import "sync"

// Limits of the tool-definition cache shared by every Adapt call.
const (
	sharedDefsMaxEntries = 512
	sharedDefsMaxBytes   = 8 << 20 // total length of the JSON texts held
	sharedDefsMaxText    = 256 << 10
)

// defsCache holds the tool definitions built from tool-definition lists
// given as JSON text and read without problems, keyed by that text: every
// LLM span of an application repeats the same few lists, so each is
// decoded and built once, not once per trace. It is bounded (oldest entry
// dropped first) and safe for concurrent use. The definitions, and the
// schemas they hold, are shared by every case built from them: read only.
type defsCache struct {
	mu    sync.RWMutex
	m     map[string][]ToolDefinition
	order []string // insertion order, oldest first
	bytes int
}

var sharedDefs = &defsCache{m: make(map[string][]ToolDefinition)}

func (dc *defsCache) get(raw string) ([]ToolDefinition, bool) {
	dc.mu.RLock()
	defs, ok := dc.m[raw]
	dc.mu.RUnlock()
	return defs, ok
}

// lookup is get of raw, or, when key is not nil, of the text of key.
func (dc *defsCache) lookup(raw string, key []byte) ([]ToolDefinition, bool) {
	if key == nil {
		return dc.get(raw)
	}
	dc.mu.RLock()
	defs, ok := dc.m[string(key)] // no copy made
	dc.mu.RUnlock()
	return defs, ok
}

func (dc *defsCache) put(raw string, defs []ToolDefinition) {
	if len(raw) > sharedDefsMaxText {
		return
	}
	// full capacity: appending to a copy never writes into the cached array
	defs = defs[:len(defs):len(defs)]
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if _, ok := dc.m[raw]; ok {
		return
	}
	for len(dc.order) > 0 && (len(dc.order) >= sharedDefsMaxEntries || dc.bytes+len(raw) > sharedDefsMaxBytes) {
		old := dc.order[0]
		dc.order[0] = ""
		dc.order = dc.order[1:]
		dc.bytes -= len(old)
		delete(dc.m, old)
	}
	dc.m[raw] = defs
	dc.order = append(dc.order, raw)
	dc.bytes += len(raw)
}
