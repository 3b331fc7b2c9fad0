package main

import (
	"strings"
	"testing"
	"time"
)

// soakGrowth passes flat series and fails growing and unreadable ones.
func TestSoakGrowth(t *testing.T) {
	samples := func(at func(i, series int) float64) []soakSample {
		var out []soakSample
		for i := 0; i <= 20; i++ { // a 20-minute soak
			sm := soakSample{at: time.Duration(i) * time.Minute, values: make([]float64, len(soakSeries))}
			for k := range soakSeries {
				sm.values[k] = at(i, k)
			}
			out = append(out, sm)
		}
		return out
	}
	flat := func(i, k int) float64 { return 100 + float64(i%2) } // noise, no trend
	if p := soakGrowth(samples(flat), 5*time.Minute); len(p) != 0 {
		t.Errorf("flat series: %v", p)
	}
	// Anonymous memory leaking 2 MiB a minute from 100 MiB.
	leak := func(i, k int) float64 {
		if soakSeries[k].name == "rss_anon_mib" {
			return 100 + 2*float64(i)
		}
		return flat(i, k)
	}
	if p := soakGrowth(samples(leak), 5*time.Minute); len(p) != 1 || !strings.Contains(p[0], "rss_anon_mib grew") {
		t.Errorf("leaking RSS: %v", p)
	}
	// Goroutines never read after the warm-up.
	unread := func(i, k int) float64 {
		if soakSeries[k].name == "goroutines" && i >= 5 {
			return -1
		}
		return flat(i, k)
	}
	if p := soakGrowth(samples(unread), 5*time.Minute); len(p) != 1 || !strings.Contains(p[0], "goroutines could not be read") {
		t.Errorf("unread goroutines: %v", p)
	}
	if p := soakGrowth(samples(flat)[:7], 5*time.Minute); len(p) != 1 {
		t.Errorf("too few samples: %v", p)
	}
}
