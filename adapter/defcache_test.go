package adapter

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestDefsCacheBounded(t *testing.T) {
	dc := &defsCache{m: make(map[string][]ToolDefinition)}
	for i := 0; i < 3*sharedDefsMaxEntries; i++ {
		dc.put("text "+strconv.Itoa(i), []ToolDefinition{{Name: "t"}})
	}
	if len(dc.m) != sharedDefsMaxEntries || len(dc.order) != sharedDefsMaxEntries {
		t.Fatalf("%d entries, %d in order", len(dc.m), len(dc.order))
	}
	if _, ok := dc.get("text 0"); ok {
		t.Error("oldest entry kept")
	}
	if _, ok := dc.get("text " + strconv.Itoa(3*sharedDefsMaxEntries-1)); !ok {
		t.Error("newest entry dropped")
	}
	big := strings.Repeat("x", sharedDefsMaxBytes/4)
	for i := 0; i < 8; i++ {
		dc.put(big+strconv.Itoa(i), nil)
	}
	if dc.bytes > sharedDefsMaxBytes {
		t.Errorf("%d bytes held", dc.bytes)
	}
	dc.put(strings.Repeat("y", sharedDefsMaxText+1), nil)
	if _, ok := dc.get(strings.Repeat("y", sharedDefsMaxText+1)); ok {
		t.Error("oversized text cached")
	}
}

// The same tool definitions read by concurrent Adapt calls come out the
// same (the -race run checks nobody writes the shared definitions).
func TestDefsCacheSharedAcrossTraces(t *testing.T) {
	refs := benchTrace(t).refs()
	want, _ := Adapt(refs)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for i := 0; i < 20; i++ {
				got, _ := Adapt(refs)
				if len(got) != len(want) {
					t.Errorf("%d cases, want %d", len(got), len(want))
					return
				}
				for k := range got {
					if !jsonEqual(got[k].ToolDefinitions, want[k].ToolDefinitions) {
						t.Errorf("case %d: definitions differ", k)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// A trace going back to tracePool keeps nothing it read.
func TestTraceReleaseClears(t *testing.T) {
	refs := benchTrace(t).refs()
	tr := newTrace(refs)
	tr.opts = Options{LLMCases: true, AgentCases: true}
	tr.full = true
	tr.build()
	if len(tr.cases) == 0 {
		t.Fatal("no cases")
	}
	tr.release()
	if len(tr.spans) != 0 || len(tr.byID) != 0 || tr.cases != nil || len(tr.cache.json) != 0 || len(tr.cache.defs) != 0 {
		t.Fatalf("released trace keeps data: %d spans, %d ids", len(tr.spans), len(tr.byID))
	}
	for _, r := range tr.reqs[:cap(tr.reqs)] {
		if !reflect.ValueOf(r).IsZero() {
			t.Fatal("request scratch not cleared")
		}
	}
	for i, d := range tr.spans[:cap(tr.spans)] {
		if !reflect.ValueOf(d).IsZero() {
			t.Fatalf("span record %d not cleared", i)
		}
	}
}
